"""How the suffixes that continue one cached prefix are cut into forward batches, and the cache
each batch continues.

A batch is padded to its longest suffix, and every row attends over the whole prefix. Suffixes of
very different lengths in one batch therefore compute mostly padding: MMLU's professional_law
questions run from ~60 to ~700 tokens, and twenty of them padded to the longest do 2-3x the work
the suffixes need. ``suffix_batches`` cuts the suffixes (longest first) where the estimated cost
(padded tokens, their attention over the prefix, and a fixed cost per forward) is least.
Repeating the prefix's key/value cache costs the same however the rows are cut (each row holds
the prefix once), so it does not enter the choice; ``repeated_cache`` gives the rows broadcast
views of the prefix instead of a copy per row.
"""
from __future__ import annotations

import copy

# relative costs, per padded suffix token: its layers' projections and MLP (1), attention per key
# (the bundled model: 2 x 576 multiply-adds per key against ~3.5M per token), and a forward's
# fixed cost (dispatching every layer), measured on the CPU as ~60 suffix tokens
ATTENTION_PER_KEY = 3.3e-4
FORWARD_COST = 64.0


def suffix_batches(widths: list[int], prefix_len: int, budget: int) -> list[list[int]]:
    """Index batches over ``widths``, the suffix lengths sorted longest first, that minimise the
    estimated cost. A batch has at most ``budget // width`` rows and ``2 * budget // (prefix_len +
    width)`` (a row's attention over the prefix holds memory like half a token per prefix position)."""
    n = len(widths)
    best = [0.0] + [float("inf")] * n  # best[j]: cost of the first j suffixes
    cut = [0] * (n + 1)
    for i in range(n):  # a batch starting at i is padded to widths[i]
        width = max(1, widths[i])
        cap = max(1, min(budget // width, 2 * budget // (prefix_len + width)))
        per_row = width * (1.0 + ATTENTION_PER_KEY * (prefix_len + width))
        for j in range(i + 1, min(n, i + cap) + 1):
            cost = best[i] + FORWARD_COST + (j - i) * per_row
            if cost < best[j]:
                best[j], cut[j] = cost, i
    batches, j = [], n
    while j > 0:
        batches.append(list(range(cut[j], j)))
        j = cut[j]
    return batches[::-1]


def repeated_cache(cache, rows: int):
    """The prefix's key/value cache for a batch of ``rows`` continuations. Transformers' dynamic
    cache layers concatenate on update and never write into the tensors they hold, so each layer
    gets a broadcast view of the prefix (copied once, by that concatenation); any other cache is
    deep-copied and repeated."""
    layers = getattr(cache, "layers", None)
    try:
        from transformers.cache_utils import DynamicLayer
    except ImportError:  # an older transformers: no per-layer cache objects
        DynamicLayer = None
    if DynamicLayer is not None and layers and all(type(layer) is DynamicLayer and layer.is_initialized
                                                   for layer in layers):
        out = copy.copy(cache)
        out.layers = []
        for layer in layers:
            view = copy.copy(layer)
            view.keys = layer.keys.expand(rows, -1, -1, -1)
            view.values = layer.values.expand(rows, -1, -1, -1)
            out.layers.append(view)
        return out
    past = copy.deepcopy(cache)
    past.batch_repeat_interleave(rows)
    return past

