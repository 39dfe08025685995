"""Rating a list of battles and the ``tasks["arena"]`` entry of a run record: pure functions (numpy,
pandas, ``evalkit.task.content_hash``; no engine, backend or runner), shared by ``evalkit arena rate``
and ``run`` (judges/arena.py) and by the leaderboard, which rates ``--battles`` files in memory."""
from __future__ import annotations

import math
import warnings
from collections import Counter
from functools import partial
from typing import Optional, Sequence

from evalkit.task import content_hash

from .battles import Battle
from .ratings import battle_count_matrix, compute_bt, compute_online_elo, rating_table, win_rate_matrix

TASK = "arena"


def _matrix(df) -> dict:
    return {str(r): {str(c): (None if not math.isfinite(float(v)) else round(float(v), 4)) for c, v in row.items()}
            for r, row in df.to_dict(orient="index").items()}


def rate(battles: Sequence[Battle], method: str = "bt", rounds: int = 100, seed: int = 0,
         anchor: Optional[str] = None, anchor_rating: float = 1000.0) -> dict:
    """Ratings with bootstrap CIs and CI-overlap ranks, tallies, win-rate and battle-count matrices."""
    if not battles:
        raise ValueError("no battles to rate")
    if method == "bt":
        fn, point = partial(compute_bt, anchor=anchor, anchor_rating=anchor_rating), "fit"
    elif method == "elo":
        if anchor:
            raise ValueError("--anchor works with --method bt only")
        fn, point = compute_online_elo, "median"
    else:
        raise ValueError(f"--method {method!r}: expected bt or elo")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = rating_table(battles, fn, rounds=rounds, seed=seed, point=point)
    order = list(table.index)
    tally = {m: Counter() for m in order}
    for b in battles:
        if b.winner == "model_a":
            tally[b.model_a]["wins"] += 1
            tally[b.model_b]["losses"] += 1
        elif b.winner == "model_b":
            tally[b.model_b]["wins"] += 1
            tally[b.model_a]["losses"] += 1
        else:
            tally[b.model_a]["ties"] += 1
            tally[b.model_b]["ties"] += 1
    ratings = {}
    for m, row in table.iterrows():
        ratings[str(m)] = {"rating": round(float(row["rating"]), 2),
                           "ci_low": None if not math.isfinite(row["ci_low"]) else round(float(row["ci_low"]), 2),
                           "ci_high": None if not math.isfinite(row["ci_high"]) else round(float(row["ci_high"]), 2),
                           "rank": int(row["rank"]), "n_battles": int(row["n_battles"]),
                           **{k: tally[m][k] for k in ("wins", "losses", "ties")}}
    return {"ratings": ratings, "order": order,
            "win_rate_matrix": _matrix(win_rate_matrix(battles, order, ties="exclude")),
            "win_rate_matrix_ties_half": _matrix(win_rate_matrix(battles, order, ties="half")),
            "battle_count_matrix": _matrix(battle_count_matrix(battles, order)),
            "warnings": sorted({str(w.message) for w in caught}),
            "method": method, "point": point, "rounds": rounds, "seed": seed,
            "anchor": anchor, "anchor_rating": anchor_rating if anchor else None}


def arena_entry(summary: dict, battles: Sequence[Battle], source: dict) -> dict:
    """The ``tasks["arena"]`` entry of an arena run record."""
    fingerprint = content_hash([b.to_dict() for b in battles])
    judges = Counter(b.judge or "unknown" for b in battles)
    return {
        "version": "1",
        "description": f"pairwise arena: {summary['method'].upper()} ratings over {len(battles)} battles",
        "output_type": "pairwise",
        "config": {"name": TASK, **{k: summary[k] for k in ("method", "point", "rounds", "seed", "anchor",
                                                             "anchor_rating")}},
        "num_fewshot": 0, "n_docs": len(battles), "dataset_fingerprint": fingerprint,
        "prompt_hash": content_hash(sorted({str(b.prompt_id) for b in battles})),
        "data_source": source.get("battles") or source.get("prompts"),
        "metrics": {}, "breakdowns": {},
        "ratings": summary["ratings"],
        "extra": {"win_rate_matrix": summary["win_rate_matrix"],
                  "win_rate_matrix_ties_half": summary["win_rate_matrix_ties_half"],
                  "battle_count_matrix": summary["battle_count_matrix"],
                  "outcomes": dict(Counter(b.winner for b in battles)), "judges": dict(judges),
                  "warnings": summary["warnings"], **source},
    }
