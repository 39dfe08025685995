"""The Open LLM Leaderboard v2's normalised scores, and their average, each with a bootstrap CI.

As the leaderboard computes them (huggingface.co/docs/leaderboards/open_llm_leaderboard/normalization,
from lm-eval's ``leaderboard_*`` results):

* ``normalize(raw, lower) = max(raw - lower, 0) / (1 - lower) * 100``, ``lower`` the random-guess
  baseline ``1 / number of choices``;
* ``bbh`` and ``musr``: each subtask's ``acc_norm`` normalised with its own baseline, then the
  unweighted mean of the subtasks;
* ``gpqa`` (``acc_norm``, baseline 1/4) and ``mmlu_pro`` (``acc``, baseline 1/10): the group's score
  over all items (lm-eval's ``weight_by_size``), normalised;
* ``math_hard``: ``exact_match`` over all items, times 100 (no baseline);
* ``ifeval``: the mean of ``prompt_level_strict_acc`` and ``inst_level_strict_acc`` (instructions
  pooled over prompts), times 100;
* the average: the unweighted mean of the six.

Each benchmark's items are a ``Bench``: per subtask, per item, the metric values and the number of
choices. The interval of a benchmark resamples its items within each subtask (the subtasks' sizes
are fixed by the benchmark); the average's replicates are the mean of the benchmarks' (drawn
independently: different items), and every interval is the replicates' 2.5-97.5 percentiles. The
generator is seeded from the run seed and the benchmark's name, so a figure does not depend on
which other benchmarks ran.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Mapping, Optional

import numpy as np

from evalkit.scoring.stats import MetricValue

KINDS = ("ifeval", "bbh", "math_hard", "gpqa", "musr", "mmlu_pro")
#: per kind: (metric, how subtasks combine: "subtasks" (normalise each, mean) or "pooled", baseline)
RULES = {"bbh": ("acc_norm", "subtasks", None), "musr": ("acc_norm", "subtasks", None),
         "gpqa": ("acc_norm", "pooled", 0.25), "mmlu_pro": ("acc", "pooled", 0.1),
         "math_hard": ("exact_match", "pooled", 0.0)}


def normalize(raw: float, lower: float, higher: float = 1.0) -> float:
    """The leaderboard's ``normalize_within_range`` with its clip at the baseline, in percent."""
    return max(raw - lower, 0.0) / (higher - lower) * 100.0


@dataclass
class Bench:
    """One benchmark's items: ``subtasks`` = {name: rows}, a row = ``{metric: value, "n_choices": k}``
    (ifeval rows: ``prompt_level_strict_acc`` and the list ``inst_level_strict_acc``)."""

    kind: str
    subtasks: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown leaderboard-v2 benchmark {self.kind!r} (known: {', '.join(KINDS)})")


def _ifeval(rows: list) -> float:
    prompt = np.mean([float(r["prompt_level_strict_acc"]) for r in rows])
    inst = [float(x) for r in rows for x in r["inst_level_strict_acc"]]
    return (prompt + (np.mean(inst) if inst else 0.0)) / 2 * 100.0


def _baseline(rows: list, name: str) -> float:
    counts = {int(r["n_choices"]) for r in rows}
    if len(counts) != 1 or min(counts) < 2:
        raise ValueError(f"leaderboard-v2: subtask {name} has items with {sorted(counts)} choices; its baseline "
                         "(1 / choices) needs one number of choices, at least 2")
    return 1.0 / counts.pop()


def score(bench: Bench, subtasks: Optional[Mapping[str, list]] = None) -> float:
    """The benchmark's normalised score (0-100) over ``subtasks`` (default: its own)."""
    subtasks = bench.subtasks if subtasks is None else subtasks
    if bench.kind == "ifeval":
        return _ifeval([r for rows in subtasks.values() for r in rows])
    metric, combine, lower = RULES[bench.kind]
    if combine == "subtasks":
        return float(np.mean([normalize(np.mean([float(r[metric]) for r in rows]), _baseline(rows, name))
                              for name, rows in subtasks.items()]))
    return normalize(float(np.mean([float(r[metric]) for rows in subtasks.values() for r in rows])), lower)


def _seed(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:leaderboard-v2:{name}".encode()).digest()[:8], "little")


def replicates(bench: Bench, n: int, seed: int) -> np.ndarray:
    """``n`` bootstrap replicates of the score: items resampled within each subtask."""
    rng = np.random.default_rng(_seed(seed, bench.kind))
    out = np.empty(n)
    for i in range(n):
        out[i] = score(bench, {name: [rows[j] for j in rng.integers(0, len(rows), len(rows))]
                               for name, rows in bench.subtasks.items()})
    return out


def _value(point: float, reps: np.ndarray, n_items: int) -> MetricValue:
    lo, hi = (float(x) for x in np.percentile(reps, [2.5, 97.5]))
    return MetricValue(point, float(np.std(reps, ddof=1)), lo, hi, n_items, "bootstrap", True)


def summary(benches: Mapping[str, Bench], n_replicates: int = 1000, seed: int = 1234) -> dict:
    """{benchmark: MetricValue, "average": MetricValue (when all six ran)}, in percent, with CIs."""
    out, reps = {}, {}
    for name, bench in benches.items():
        reps[name] = replicates(bench, n_replicates, seed)
        out[name] = _value(score(bench), reps[name], sum(len(r) for r in bench.subtasks.values()))
    if set(b.kind for b in benches.values()) == set(KINDS):
        avg = np.mean([reps[k] for k in benches], axis=0)
        out["average"] = _value(float(np.mean([out[k].value for k in benches])), avg,
                                sum(v.n for v in out.values()))
    return out
