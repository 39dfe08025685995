"""Metrics as objects: what a task reports, declared next to the task (``Task.metrics``).

A ``Metric`` names one number, says whether higher is better and how it is aggregated:

- ``level="sample"``: each sample's ``metrics[name]`` (computed by the task's scoring), reported as
  their mean with the analytic stderr (Wilson interval for 0/1 values, Student-t otherwise);
- ``level="corpus"``: ``compute(samples) -> float`` over the whole corpus (perplexity, BLEU, ...),
  with a seeded bootstrap over items that recomputes it.

Aggregation reads samples and never changes them. In the spirit of lighteval's ``Metric`` dataclass
and Inspect's ``@scorer(metrics=[...])``::

    metrics = (Metric("exact_match"), Metric("no_answer", higher_is_better=False),
               Metric("word_perplexity", higher_is_better=False, level="corpus", compute=word_ppl))
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from evalkit.scoring.stats import MetricValue, bootstrap_corpus, derive_seed, mean_metric

LEVELS = ("sample", "corpus")


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool = True
    level: str = "sample"
    compute: Optional[Callable[[Sequence], float]] = None  # corpus level: samples -> value
    replicates: int = 1000                                  # bootstrap replicates (corpus level)

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"metric {self.name!r}: level {self.level!r} is not one of {', '.join(LEVELS)}")
        if self.level == "corpus" and self.compute is None:
            raise ValueError(f"corpus metric {self.name!r} needs compute(samples) -> float")

    def aggregate(self, samples: Sequence, seed: int, task: str) -> MetricValue:
        """This metric over the samples of a task, with its uncertainty."""
        if self.level == "corpus":
            return bootstrap_corpus(samples, self.compute, derive_seed(seed, task, self.name, "bootstrap"),
                                    replicates=self.replicates, higher_is_better=self.higher_is_better)
        return mean_metric([s.metrics.get(self.name) for s in samples], self.higher_is_better)


def resolve(declared: Sequence[Metric], samples: Sequence, higher_is_better: Optional[dict] = None,
            corpus: Optional[dict] = None) -> list[Metric]:
    """The metrics a task reports for these samples, in record order: sample-level ones in the order
    the samples first name them, then corpus-level ones in declared order. A sample metric the task
    did not declare is reported as a mean with higher-is-better. ``higher_is_better`` and ``corpus``
    are the older class-dict shorthands (``{name: bool}``, ``{name: compute}``), still accepted."""
    hib = higher_is_better or {}
    by_name = {m.name: m for m in declared}
    for name, fn in (corpus or {}).items():
        by_name.setdefault(name, Metric(name, hib.get(name, True), "corpus", fn))
    out, seen = [], set()
    for s in samples:
        for name in s.metrics:
            if name in seen:
                continue
            seen.add(name)
            m = by_name.get(name) or Metric(name, hib.get(name, True))
            if m.level == "sample":
                out.append(m)
    out.extend(m for m in by_name.values() if m.level == "corpus")
    return out


def aggregate(metrics: Sequence[Metric], samples: Sequence, seed: int, task: str) -> dict[str, MetricValue]:
    return {m.name: m.aggregate(samples, seed, task) for m in metrics}
