"""MT-Bench figures from judgments: per-contestant scores and win rates with question-clustered CIs.

FastChat's figures (turn 1, turn 2, overall = mean over all graded turns) plus what it never
published: a 95% CI for each, per category too, clustered by question (a question's two turns are
not independent).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from scipy import stats as sps

from evalkit.arena import Battle
from evalkit.scoring.stats import MetricValue, mean_metric
from evalkit.taskapi.task import Doc

from .judge import Judgment
from .reliability import combine_orders


@dataclass
class PairResult:
    """One (question, turn) judged between model_1 and model_2 in both orders."""

    qid: str
    turn: int
    category: str
    model_1: str
    model_2: str
    g1: Judgment      # model_1 shown as assistant A
    g2: Judgment      # model_2 shown as assistant A
    len_1: int
    len_2: int

    @property
    def winner(self) -> Optional[str]:
        return combine_orders(self.g1.value, self.g2.value)

    def battle(self, judge: str) -> Battle:
        w = {"model_1": "model_a", "model_2": "model_b", "tie": "tie"}[self.winner]
        return Battle(prompt_id=self.qid, model_a=self.model_1, model_b=self.model_2, winner=w, judge=judge,
                      extra={"turn": self.turn, "category": self.category, "template": self.g1.template,
                             "g1_verdict": self.g1.value, "g2_verdict": self.g2.value,
                             "g1_source": self.g1.source, "g2_source": self.g2.source})

    def to_dict(self) -> dict:
        return {"qid": self.qid, "turn": self.turn, "model_1": self.model_1, "model_2": self.model_2,
                "winner": self.winner, "g1": self.g1.to_dict(), "g2": self.g2.to_dict()}


def clustered_mean(values: Sequence[float], clusters: Sequence, higher_is_better: bool = True) -> MetricValue:
    """Mean over all values with a cluster-robust standard error (CR1) and a t interval on
    G-1 degrees of freedom, G = number of clusters (questions). With two values per cluster this
    equals the t interval over per-question means."""
    pts = [(float(v), c) for v, c in zip(values, clusters) if v is not None]
    n = len(pts)
    if n == 0:
        return MetricValue(float("nan"), None, None, None, 0, "mean", higher_is_better)
    x = np.array([p[0] for p in pts])
    m = float(x.mean())
    groups = defaultdict(float)
    for v, c in pts:
        groups[c] += v - m
    g = len(groups)
    if g < 2:
        return MetricValue(m, None, None, None, n, "mean", higher_is_better)
    se = math.sqrt(g / (g - 1) * sum(r * r for r in groups.values())) / n
    t = float(sps.t.ppf(0.975, g - 1))
    return MetricValue(m, se, m - t * se, m + t * se, n, "mean", higher_is_better)


OUTCOME = {"model_1": 1.0, "model_2": 0.0, "tie": 0.5}


def outcome_for(p: PairResult, model: str) -> Optional[float]:
    if p.winner is None:
        return None
    o = OUTCOME[p.winner]
    return o if model == p.model_1 else 1.0 - o


def summarize(docs: Sequence[Doc], single: Sequence[Judgment], pairs: Sequence[PairResult], model: str,
              rating: str = "score") -> tuple:
    """Metrics, per-category breakdowns and per-question sample metrics for one contestant.

    ``rating`` names the single-grading metrics: ``score`` for a judge's 1-10 ratings, ``reward``
    when a reward model judges (its raw rewards are on another scale, so they never share a
    leaderboard figure with judge scores)."""
    metrics, breakdowns = {}, {}
    per_q = defaultdict(dict)
    if single:
        vals = [j.value for j in single]
        qids = [j.meta["qid"] for j in single]
        metrics[rating] = clustered_mean(vals, qids)
        for turn in (1, 2):
            tv = [j.value for j in single if j.meta["turn"] == turn]
            if tv:
                metrics[f"{rating}_turn{turn}"] = mean_metric(tv)
        for cat in dict.fromkeys(d.meta["category"] for d in docs):
            cj = [j for j in single if j.meta["category"] == cat]
            breakdowns[cat] = {rating: clustered_mean([j.value for j in cj], [j.meta["qid"] for j in cj])}
        for j in single:
            per_q[j.meta["qid"]][f"{rating}_turn{j.meta['turn']}"] = j.value
        for qid, m in per_q.items():
            got = [v for k, v in m.items() if v is not None]
            m[rating] = float(np.mean(got)) if got else None
    mine = [p for p in pairs if model in (p.model_1, p.model_2)]
    if mine:
        metrics["win_rate"] = clustered_mean([outcome_for(p, model) for p in mine], [p.qid for p in mine])
        for qid in dict.fromkeys(p.qid for p in mine):
            got = [outcome_for(p, model) for p in mine if p.qid == qid]
            got = [v for v in got if v is not None]
            per_q[qid]["win_rate"] = float(np.mean(got)) if got else None
        cats = {d.id: d.meta["category"] for d in docs}
        for cat in dict.fromkeys(cats[p.qid] for p in mine):
            cp = [p for p in mine if cats[p.qid] == cat]
            breakdowns.setdefault(cat, {})["win_rate"] = clustered_mean([outcome_for(p, model) for p in cp],
                                                                        [p.qid for p in cp])
    return metrics, breakdowns, per_q


def pair_counts(pairs: Sequence[PairResult], model: str) -> dict:
    out = defaultdict(lambda: {"win": 0, "loss": 0, "tie": 0, "unresolved": 0})
    for p in pairs:
        if model not in (p.model_1, p.model_2):
            continue
        other = p.model_2 if model == p.model_1 else p.model_1
        o = outcome_for(p, model)
        key = "unresolved" if o is None else "win" if o == 1.0 else "loss" if o == 0.0 else "tie"
        out[other][key] += 1
    return dict(out)
