"""How the HF backend scores token pairs: batching, prefix sharing, memory-bounded reading.

``PairScorer`` is mixed into ``HFBackend`` (which provides ``model``, ``tokenizer``, ``torch``,
``device``, ``batch_size``, ``token_budget``, ``chunk_elems``, ``share_prefix``, ``max_length``).
Forward passes return final hidden states, and only the positions that are scored are projected
to the vocabulary, a chunk at a time (``evalkit.backends.logprobs``): memory grows with
batch x length x hidden, not x vocabulary. Under ``batch_size=auto`` a batch that runs out of
memory is halved and retried, and the token budget stays at what fitted.
"""
from __future__ import annotations

import bisect
import copy
import logging
from collections import OrderedDict
from typing import Optional

from evalkit.backends.logprobs import SplitHead, is_out_of_memory, release_memory, token_logprobs
from evalkit.backends.shared_prefix import common_prefix_len, shared_prefix_groups
from evalkit.backends.suffix_batches import repeated_cache, suffix_batches
from evalkit.taskapi.requests import LoglikelihoodResult

log = logging.getLogger("evalkit.backends.hf")
MIN_PREFIX = 32  # tokens two prefixes must share before a cached one is continued


class PairScorer:
    _oom_budget: Optional[int] = None
    _split: Optional[SplitHead] = None
    _prefix_memo = None  # (tokens, key/value cache) of the last shared prefix

    def _budget(self) -> int:
        """Tokens per forward batch: the configured budget, lowered for good by any out-of-memory."""
        return min(self.token_budget, self._oom_budget or self.token_budget)

    def _batches(self, lengths: list[int]):
        """Index batches over items already sorted longest first, within the token budget."""
        fixed = None if self.batch_size in ("auto", None) else int(self.batch_size)
        i = 0
        while i < len(lengths):
            n = fixed or max(1, self._budget() // max(1, lengths[i]))
            yield list(range(i, min(i + n, len(lengths))))
            i += n

    def _run_batches(self, batches, tokens_per_row, run) -> None:
        """``run(batch)`` for each batch. Under ``batch_size=auto`` an out-of-memory error halves the
        batch and retries (rows are only read once their forward succeeded) and lowers the token
        budget of every later batch to what fitted, instead of failing the run."""
        todo = [list(b) for b in batches]
        while todo:
            batch = todo.pop(0)
            if self.batch_size in ("auto", None):
                cap = max(1, self._budget() // max(1, tokens_per_row(batch)))
                if len(batch) > cap:
                    todo[:0] = [batch[k: k + cap] for k in range(0, len(batch), cap)]
                    continue
            try:
                run(batch)
            except Exception as e:
                if self.batch_size not in ("auto", None) or len(batch) == 1 or not is_out_of_memory(e):
                    raise
                release_memory(self.torch)
                half = (len(batch) + 1) // 2
                self._oom_budget = max(1, half * tokens_per_row(batch))
                log.warning("hf backend: out of memory on %d rows of %d tokens; retrying %d rows a batch "
                            "(token budget now %d)", len(batch), tokens_per_row(batch), half, self._oom_budget)
                todo[:0] = [batch[:half], batch[half:]]

    @property
    def split_head(self) -> SplitHead:
        """Decoder + output projection, so logits are made a chunk of positions at a time."""
        if self._split is None:
            self._split = SplitHead(self.model, self.torch, self.encode("The quick brown fox")[:8] or [0])
        return self._split

    def _forward_logits(self, seqs: list[list[int]]):
        """Right-padded batch forward; returns what the read positions' logits come from: final
        hidden states [B, T, hidden] when the model splits (``split_head``), else logits [B, T, V]."""
        torch = self.torch
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id or 0, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for j, s in enumerate(seqs):
            ids[j, : len(s)] = torch.tensor(s)
            mask[j, : len(s)] = 1
        # no key/value cache: it would hold 2 x layers x B x T x kv-width floats (0.75 GB for the
        # bundled model at 8 x 2048) that nothing reads
        args = dict(input_ids=ids.to(self.device), attention_mask=mask.to(self.device), use_cache=False)
        with torch.inference_mode():
            split = self.split_head
            return split.hidden(**args) if split.ok else self.model(**args).logits

    def _score_token_pairs(self, pairs: list[tuple[list[int], list[int]]]) -> list[LoglikelihoodResult]:
        """Score (context tokens, continuation tokens) pairs. Pairs that share a context and have a
        one-token continuation are answered from a single forward pass over that context."""
        max_len = self.max_length
        groups: "OrderedDict[tuple, list[int]]" = OrderedDict()
        for i, (ctx, cont) in enumerate(pairs):
            key = (tuple(ctx), None) if len(cont) == 1 else (tuple(ctx), tuple(cont))
            groups.setdefault(key, []).append(i)
        keys = sorted(groups, key=lambda k: -(len(k[0]) + (len(k[1]) if k[1] else 1)))
        inputs, conts = [], []
        for ctx, cont in keys:
            cont = list(cont) if cont else pairs[groups[(ctx, cont)][0]][1]
            whole = (list(ctx) + cont)[-(max_len + 1):]
            inputs.append(whole[:-1])
            conts.append(len(cont))
        results: list[Optional[LoglikelihoodResult]] = [None] * len(pairs)

        def read(batch: list[int], states, first: list[int]) -> None:
            """Fill the results of inputs ``batch`` from ``states[j]`` (hidden states or logits),
            whose positions ``first[j]:first[j] + conts[b]`` predict input ``b``'s continuation."""
            split = self.split_head
            rows, toks, spans, at = [], [], [], 0
            for b in batch:
                for i in groups[keys[b]]:
                    cont = pairs[i][1]
                    if keys[b][1] is None:  # single-token group: this item's token, last position
                        rows.append(at + conts[b] - 1)
                        toks.append(cont[0])
                    else:
                        rows.extend(range(at, at + len(cont)))
                        toks.extend(cont)
                    spans.append((i, len(rows) - (1 if keys[b][1] is None else len(cont)), len(rows)))
                at += conts[b]
            if split.ok:  # gather the read positions' hidden states, project them chunk by chunk
                flat = states.reshape(-1, states.shape[-1])
                index = [j * states.shape[1] + first[j] + k for j, b in enumerate(batch) for k in range(conts[b])]
                picked = flat.index_select(0, self.torch.tensor(index, device=flat.device))
                lp, top = token_logprobs(picked, rows, toks, split.logits, split.vocab, self.chunk_elems)
            else:  # logits already: read each input's slice of them, chunk by chunk
                parts, at = [], 0
                for j, b in enumerate(batch):
                    lo, hi = bisect.bisect_left(rows, at), bisect.bisect_left(rows, at + conts[b])
                    view = states[j, first[j]: first[j] + conts[b]]
                    parts.append(token_logprobs(view, [r - at for r in rows[lo:hi]], toks[lo:hi],
                                                chunk_elems=self.chunk_elems))
                    at += conts[b]
                lp, top = (self.torch.cat([p[k] for p in parts]) for k in (0, 1))
            lp, top = lp.tolist(), top.tolist()
            for i, lo, hi in spans:
                results[i] = LoglikelihoodResult(float(sum(lp[lo:hi])), all(top[lo:hi]))

        rest = list(range(len(inputs)))
        if self.share_prefix:
            shared, rest = shared_prefix_groups(inputs, [len(x) - n for x, n in zip(inputs, conts)])
            for prefix_len, members in shared:
                if self.share_prefix:
                    try:
                        self._forward_shared_prefix(inputs, conts, prefix_len, members, read)
                        continue
                    except (TypeError, AttributeError, NotImplementedError) as e:  # e.g. remote code without
                        log.warning("hf backend: %s cannot continue from a cached prefix (%s); scoring whole "
                                    "sequences instead", self.display_name, e)  # logits_to_keep / cache API
                        self.share_prefix = False
                rest.extend(members)
        rest.sort()  # longest first, as ``keys`` is

        def run(batch: list[int]) -> None:
            read(batch, self._forward_logits([inputs[b] for b in batch]),
                 [len(inputs[b]) - conts[b] for b in batch])

        batches = [[rest[k] for k in sub] for sub in self._batches([len(inputs[b]) for b in rest])]
        self._run_batches(batches, lambda batch: len(inputs[batch[0]]), run)
        return results

    def _prefix_cache(self, prefix: list[int]):
        """Key/value cache of ``prefix``. The last one made is kept and continued from when the next
        prefix starts the same way: the engine sends a subject's questions in several calls, and
        a call's shared prefix can run a few tokens past the subject's (or stop short of it)."""
        torch = self.torch
        split = self.split_head
        cache, done = None, 0
        if self._prefix_memo is not None:
            last, last_cache = self._prefix_memo
            done = common_prefix_len(last, prefix)
            if done == len(last) == len(prefix):
                return last_cache
            if done >= MIN_PREFIX:
                cache = copy.deepcopy(last_cache)
                cache.crop(done)
            else:
                done = 0
        if done < len(prefix):
            args = dict(input_ids=torch.tensor([prefix[done:]], device=self.device), past_key_values=cache,
                        use_cache=True)
            with torch.inference_mode():
                cache = split.decoder(**args).past_key_values if split.ok else \
                    self.model(**args, logits_to_keep=1).past_key_values
        self._prefix_memo = (list(prefix), cache)
        return cache

    def _forward_shared_prefix(self, inputs, conts, prefix_len: int, members: list[int], read) -> None:
        """Run ``inputs[members]``, which all start with the same ``prefix_len`` tokens: the prefix
        once, then the suffixes in batches on top of its key/value cache (left-padded, with their
        true positions), reading only the positions that are scored."""
        torch = self.torch
        split = self.split_head
        cache = self._prefix_cache(inputs[members[0]][:prefix_len])
        members = sorted(members, key=lambda b: -len(inputs[b]))
        batches = suffix_batches([len(inputs[b]) - prefix_len for b in members], prefix_len, self._budget())
        batches = [[members[k] for k in batch] for batch in batches]

        def run(batch: list[int]) -> None:
            width = len(inputs[batch[0]]) - prefix_len
            keep = max(conts[b] for b in batch)
            ids = torch.full((len(batch), width), self.tokenizer.pad_token_id or 0, dtype=torch.long)
            mask = torch.zeros((len(batch), prefix_len + width), dtype=torch.long)
            mask[:, :prefix_len] = 1
            pos = torch.zeros((len(batch), width), dtype=torch.long)
            for row, b in enumerate(batch):
                suffix = inputs[b][prefix_len:]
                ids[row, width - len(suffix):] = torch.tensor(suffix)
                mask[row, prefix_len + width - len(suffix):] = 1
                pos[row, width - len(suffix):] = torch.arange(prefix_len, prefix_len + len(suffix))
            past = repeated_cache(cache, len(batch))
            args = dict(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                        position_ids=pos.to(self.device), past_key_values=past, use_cache=True)
            with torch.inference_mode():
                states = split.hidden(**args)[:, -keep:] if split.ok else \
                    self.model(**args, logits_to_keep=keep).logits
            read(batch, states, [keep - conts[b] for b in batch])

        # a row costs its suffix, or half of prefix + suffix (attention over the prefix), as in suffix_batches
        self._run_batches(batches, lambda batch: max(len(inputs[batch[0]]) - prefix_len,
                                                     len(inputs[batch[0]]) // 2), run)

