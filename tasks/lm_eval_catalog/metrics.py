"""lm-eval's metrics as evalkit ``Metric`` declarations, with a CI on every number.

- A metric lm-eval aggregates with ``mean`` is a sample-level evalkit metric: each sample carries
  its value, the task reports the mean with its analytic interval (Wilson for 0/1 values).
- Any other aggregation (perplexity, bits per byte, F1, MCC, BLEU, IFEval's instance-level accuracy,
  ...) is a corpus-level metric: the samples keep lm-eval's per-doc values
  (``extra.lm_eval.values``), lm-eval's own aggregation function computes the figure, and a seeded
  bootstrap over docs recomputes it for the interval.
- A group's ``aggregate_metric_list`` (lm-eval's ``Group.aggregate``): each leaf task's figure, then
  lm-eval's ``aggregate_subtask_metrics`` over the leaves (weighted by their doc counts with
  ``weight_by_size``). A size-weighted mean of means is the mean over all docs: then a sample-level
  metric; otherwise the bootstrap resamples docs and recomputes every leaf and the group.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Optional, Sequence

from evalkit.scoring.metric import Metric, MetricGroup

from .leaf import Leaf, metric_key

#: lm-eval bootstraps these corpus metrics 100 times only (each replicate is a full corpus score)
_FEW_REPLICATES = {"bleu", "chrf", "chrf++", "ter"}


def is_mean(fn) -> bool:
    from lm_eval.api import metrics as lm_metrics
    return fn is lm_metrics.mean


def values_of(samples: Sequence, name: str) -> list:
    """The per-doc values of ``name`` as lm-eval aggregates them (sample metric or kept raw value)."""
    out = []
    for s in samples:
        if name in s.metrics:
            out.append(s.metrics[name])
        else:
            v = ((s.extra or {}).get("lm_eval") or {}).get("values", {}).get(name)
            if v is not None:
                out.append(v)
    return out


def leaf_of(sample) -> str:
    return sample.extra["lm_eval"]["task"]


class Declared:
    """The metrics of one leaf (or all leaves of a group): {name: (metric, filter, aggregation, up)}."""

    def __init__(self, leaves: Sequence[Leaf]):
        self.of: dict[str, tuple] = {}
        for leaf in leaves:
            hib = leaf.directions()
            for f in leaf.filter_names():
                for m, fn in leaf.aggregations().items():
                    self.of.setdefault(metric_key(m, f), (m, f, fn, hib.get(m, True)))

    def add(self, name: str, metric: str, filt: str) -> None:
        """A name ``process_results`` gave that the config does not list: lm-eval averages it."""
        from lm_eval.api import metrics as lm_metrics
        self.of.setdefault(name, (metric, filt, lm_metrics.mean, True))

    def sample_level(self, name: str) -> bool:
        return is_mean(self.of[name][2]) if name in self.of else True

    def leaf_metrics(self, kept_raw=frozenset()) -> list:
        """Sample-level metrics for lm-eval's means, corpus-level ones for the rest and for the names
        in ``kept_raw`` (a group aggregates them beyond a mean: the samples keep their raw values)."""
        out = []
        for name, (m, _f, fn, up) in self.of.items():
            if is_mean(fn) and name not in kept_raw:
                out.append(Metric(name, up, required=False))
            else:
                out.append(Metric(name, up, "corpus", _corpus(name, fn),
                                  replicates=100 if m in _FEW_REPLICATES else 1000))
        return out


def _corpus(name: str, fn: Callable) -> Callable:
    def compute(samples):
        vals = values_of(samples, name)
        return float(fn(vals)) if vals else float("nan")
    return compute


def group_metrics(group, declared: Declared, leaf_names: Sequence[str]) -> list:
    """The declarations of a group's ``aggregate_metric_list`` over its leaves."""
    out, seen = [], set()
    for agg in group.aggregate_metric_list or ():
        filters = agg.filter_list if agg.filter_list is not None else sorted(
            {f for (m, f, _fn, _up) in declared.of.values() if m == agg.metric})
        for f in filters:
            name = metric_key(agg.metric, f)
            if name not in declared.of or name in seen:
                continue
            seen.add(name)
            _m, _f, fn, up = declared.of[name]
            if agg.weight_by_size and is_mean(fn):
                out.append(Metric(name, up, required=False))
            else:
                out.append(MetricGroup(name, (name,), up, _group_compute(name, fn, agg.weight_by_size, leaf_names)))
    return out


def _group_compute(name: str, fn: Callable, weight_by_size: bool, leaf_names: Sequence[str]) -> Callable:
    from lm_eval.api.metrics import aggregate_subtask_metrics

    def compute(samples):
        by_leaf = defaultdict(list)
        for s in samples:
            by_leaf[leaf_of(s)].append(s)
        vals, sizes = [], []
        for leaf in leaf_names:
            got = values_of(by_leaf.get(leaf, ()), name)
            if got:
                vals.append(float(fn(got)))
                sizes.append(len(by_leaf[leaf]))
        return {name: float(aggregate_subtask_metrics(vals, sizes, weight_by_size)) if vals else float("nan")}
    return compute


def lm_eval_value(samples: Sequence, name: str, declared: Declared) -> Optional[float]:
    """A leaf's figure exactly as lm-eval computes it (its own aggregation function on its values)."""
    if name not in declared.of:
        return None
    vals = values_of(samples, name)
    return float(declared.of[name][2](vals)) if vals else None
