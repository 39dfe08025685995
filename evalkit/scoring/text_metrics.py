"""BLEU / chrF / TER through sacrebleu, and ROUGE through rouge-score.

MT metrics are corpus statistics: BLEU is not the mean of sentence BLEUs. Each segment is reduced
to sacrebleu's sufficient statistics (n-gram matches and lengths for BLEU, character/word n-gram
counts for chrF, edits and reference length for TER); the corpus score is computed from their sum,
exactly as ``sacrebleu.corpus_bleu`` does. Keeping the per-segment statistics makes the CI cheap: a
seeded bootstrap resamples segments, sums their statistics and recomputes the score (the method
of sacrebleu's paired bootstrap, ``significance._bootstrap_resample``); the stderr is the standard
deviation of the replicates, never that divided by sqrt(replicates).

``_extract_corpus_statistics`` / ``_compute_score_from_stats`` are sacrebleu's own (underscored)
hooks for exactly this, used by its significance tests; they have been stable since sacrebleu 2.0.

ROUGE follows the reference implementation (rouge-score): Porter stemming on, F-measure per sample,
``rougeLsum`` with summary-level LCS over sentences split on newlines (rouge-score splits on "\\n";
texts are passed through unchanged), several references scored as the best one (``score_multi``).
A task reports the mean of per-sample F-measures with the analytic stderr.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from evalkit.scoring.metric import MetricGroup
from evalkit.scoring.stats import MetricValue, bootstrap_group

MT_METRICS = ("bleu", "chrf", "ter")
MT_HIGHER_IS_BETTER = {"bleu": True, "chrf": True, "ter": False}
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")

#: target language -> BLEU tokenizer, as sacrebleu's command line picks it for ``-l xx-LANG``
BLEU_TOKENIZER_FOR = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}


def as_references(target) -> list[str]:
    """A doc target (one string or a list of strings) as a non-empty list of reference strings."""
    refs = [target] if isinstance(target, str) else list(target or [])
    if not refs or not all(isinstance(r, str) for r in refs):
        raise ValueError(f"references must be a string or a non-empty list of strings, got {target!r}")
    return refs


def parse_metric_list(spec, allowed: Sequence[str]) -> tuple[str, ...]:
    """``"bleu+chrf"`` / ``"bleu chrf"`` / ``["bleu", "chrf"]`` -> ("bleu", "chrf"), checked."""
    items = spec.replace("+", " ").split() if isinstance(spec, str) else list(spec)
    canonical = {a.lower(): a for a in allowed}
    wanted = [x.strip() for x in items if x.strip()]
    bad = [x for x in wanted if x.lower() not in canonical]
    if bad or not wanted:
        raise ValueError(f"unknown metric(s) {', '.join(bad) or '(none)'}; choose from {', '.join(allowed)}")
    return tuple(dict.fromkeys(canonical[x.lower()] for x in wanted))


class SacreBLEUMetrics:
    """sacrebleu's BLEU / chrF / TER, configured once (tokenizer, chrF word order, ...)."""

    def __init__(self, names: Iterable[str] = MT_METRICS, bleu: Optional[dict] = None,
                 chrf: Optional[dict] = None, ter: Optional[dict] = None):
        from sacrebleu.metrics import BLEU, CHRF, TER

        classes = {"bleu": BLEU, "chrf": CHRF, "ter": TER}
        kwargs = {"bleu": bleu or {}, "chrf": chrf or {}, "ter": ter or {}}
        self.names = parse_metric_list(list(names), MT_METRICS)
        self.metrics = {n: classes[n](**kwargs[n]) for n in self.names}

    def segment_stats(self, hypothesis: str, references: Sequence[str]) -> dict[str, list]:
        """Sufficient statistics of one segment against its references, per metric."""
        refs = as_references(list(references))
        out = {}
        for name, metric in self.metrics.items():
            row = metric._extract_corpus_statistics([hypothesis], [[r] for r in refs])[0]
            out[name] = [x.item() if hasattr(x, "item") else x for x in row]
        return out

    def score_from_stats(self, name: str, summed) -> float:
        """The corpus score from statistics summed over segments (0-100, as sacrebleu reports)."""
        return float(self.metrics[name]._compute_score_from_stats(summed).score)

    def corpus_value(self, name: str, stats: np.ndarray) -> float:
        return self.score_from_stats(name, np.asarray(stats, dtype=float).sum(0))

    def signatures(self, nrefs: Iterable[int]) -> dict[str, str]:
        """sacrebleu's reproducibility signature of each metric for this number of references."""
        counts = set(nrefs)
        num = next(iter(counts)) if len(counts) == 1 else -1  # -1: sacrebleu's "var"
        out = {}
        for name, metric in self.metrics.items():
            metric.num_refs = num
            out[name] = metric.get_signature().format()
        return out

    def scores(self, stats: Mapping[str, np.ndarray]) -> dict[str, float]:
        """Every metric's corpus score from its per-segment statistics (``stats[name]``: n x k)."""
        return {name: self.score_from_stats(name, np.asarray(stats[name], dtype=float).sum(0)) for name in self.names}

    def aggregate(self, stats: Mapping[str, np.ndarray], seed: int, replicates: int = 1000) -> dict[str, MetricValue]:
        """Corpus score of each metric with a segment bootstrap CI.

        ``stats[name]`` is an (n_segments, k) array. All metrics see the same resamples (paired, as
        in sacrebleu's paired bootstrap): one ``bootstrap_group`` over the rows of every table.
        """
        table = {name: np.asarray(stats[name], dtype=float) for name in self.names}
        return bootstrap_group(table, self.scores, self.names, seed, replicates,
                               {n: MT_HIGHER_IS_BETTER[n] for n in self.names})

    def group(self, replicates: int = 1000, name: str = "sacrebleu") -> MetricGroup:
        """The chosen metrics as one group over samples whose ``extra["sacrebleu"][metric]`` holds a
        segment's statistics (the translation tasks); bootstrap seeded by run seed, task and ``name``."""
        def items(samples):
            return {n: np.array([s.extra["sacrebleu"][n] for s in samples], dtype=float) for n in self.names}
        return MetricGroup(name, self.names, {n: MT_HIGHER_IS_BETTER[n] for n in self.names}, self.scores,
                           replicates, items=items)


class RougeMetrics:
    """rouge-score's RougeScorer with stemming; per-sample F-measures."""

    def __init__(self, types: Sequence[str] = ROUGE_TYPES, use_stemmer: bool = True):
        from rouge_score import rouge_scorer

        self.types = parse_metric_list(list(types), ROUGE_TYPES)
        self.scorer = rouge_scorer.RougeScorer(list(self.types), use_stemmer=use_stemmer)

    def scores(self, prediction: str, references) -> dict[str, float]:
        refs = as_references(references)
        if len(refs) == 1:
            res = self.scorer.score(refs[0], prediction)
        else:
            res = self.scorer.score_multi(refs, prediction)
        return {t: float(res[t].fmeasure) for t in self.types}
