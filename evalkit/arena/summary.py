"""Rating battles and the ``tasks["arena"]`` entry of a run record: pure functions (numpy and pandas
only, no engine, backend or runner), shared by ``evalkit arena rate``/``run`` (judges/arena.py) and the
leaderboard, which rates ``--battles`` files in memory. Battles come as ``Battle`` objects or as a
``BattleTable`` of counts (``read_battle_table``), so millions of votes never become Python objects."""
from __future__ import annotations

import math
import warnings
from collections import Counter
from typing import Optional, Sequence

from evalkit.taskapi.items import content_hash

from .battles import Battle
from .table import BattleTable, as_table
from .ratings import battle_count_matrix, bt_leaderboard, compute_online_elo, rating_table, win_rate_matrix
from .style_board import style_leaderboard

TASK = "arena"


def _matrix(df) -> dict:
    return {str(r): {str(c): (None if not math.isfinite(float(v)) else round(float(v), 4)) for c, v in row.items()}
            for r, row in df.to_dict(orient="index").items()}


def rate(battles: Sequence[Battle] | BattleTable, method: str = "bt", rounds: int = 100, seed: int = 0,
         anchor: Optional[str] = None, anchor_rating: float = 1000.0, progress: bool = False,
         style_control: bool = False, style_l2: float = 0.0) -> dict:
    """Ratings, intervals, ranks, tallies and matrices of battles (``Battle`` objects or a
    ``BattleTable`` read by ``read_battle_table``). BT runs on the count bootstrap
    (``bt_leaderboard``): models whose rating the battles do not pin down come back with
    ``determined: False`` and no rating, interval or rank. ``style_control`` (a table read
    with ``style=``) adds ``style_control``: LMArena's style-controlled ratings and the style
    coefficients, each with bootstrap intervals (``style_leaderboard``)."""
    if style_control and method != "bt":
        raise ValueError("--style-control works with --method bt only")
    table = as_table(battles)
    if not len(table):
        raise ValueError("no battles to rate")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if method == "bt":
            point = "fit"
            board = bt_leaderboard(table, rounds, seed, anchor=anchor, anchor_rating=anchor_rating,
                                   progress=progress)
        elif method == "elo":
            if anchor:
                raise ValueError("--anchor works with --method bt only")
            point = "median"
            items = battles if not isinstance(battles, BattleTable) else table.to_battles()
            board = rating_table(items, compute_online_elo, rounds=rounds, seed=seed, point=point)
            board["determined"] = True
        else:
            raise ValueError(f"--method {method!r}: expected bt or elo")
        styled = _style_summary(table, rounds, seed, anchor, anchor_rating, style_l2, progress) \
            if style_control else None
    order = list(board.index)
    tally = table.tallies()

    ratings = _rows(board, tally)
    return {"ratings": ratings, "order": order, **({"style_control": styled} if styled else {}),
            "win_rate_matrix": _matrix(win_rate_matrix(table, order, ties="exclude")),
            "win_rate_matrix_ties_half": _matrix(win_rate_matrix(table, order, ties="half")),
            "battle_count_matrix": _matrix(battle_count_matrix(table, order)),
            "warnings": sorted({str(w.message) for w in caught}),
            "method": method, "point": point, "rounds": rounds, "seed": seed,
            "anchor": anchor, "anchor_rating": anchor_rating if anchor else None}


def _num(x):
    return None if not math.isfinite(x) else round(float(x), 2)


def _rows(board, tally) -> dict:
    out = {}
    for m, row in board.iterrows():
        t = tally.loc[m]
        out[str(m)] = {"rating": _num(row["rating"]), "ci_low": _num(row["ci_low"]), "ci_high": _num(row["ci_high"]),
                       "rank": int(row["rank"]) if math.isfinite(row["rank"]) else None,
                       "n_battles": int(row["n_battles"]),
                       **{k: int(t[k]) for k in ("wins", "losses", "ties")},
                       "determined": bool(row["determined"])}
    return out


def _style_summary(table: BattleTable, rounds, seed, anchor, anchor_rating, l2, progress) -> dict:
    """The ``style_control`` block: style-controlled ratings (as ``ratings``), the style
    coefficients with intervals, and what was fitted."""
    if table.style is None:
        raise ValueError("--style-control needs the battles' style features: read them with "
                         "read_battle_table(paths, style=STYLE_CONTROL_ELEMENTS_V1)")
    board, coefs = style_leaderboard(table, rounds, seed, anchor=anchor, anchor_rating=anchor_rating, l2=l2,
                                     progress=progress)
    fmt = (lambda x: None if not math.isfinite(x) else round(float(x), 6))
    return {"ratings": _rows(board, table.tallies()), "order": list(board.index),
            "coefs": {str(f): {k: fmt(r[k]) for k in ("coef", "ci_low", "ci_high")} for f, r in coefs.iterrows()},
            "elements": list(table.style_elements), "l2": l2, "rounds": rounds, "seed": seed,
            "method": "bt+style (LMArena style control: FastChat construct_style_matrices + fit_mle_elo "
                      "likelihood; weighted bootstrap)"}


def _battle_facts(battles: Sequence[Battle] | BattleTable) -> dict:
    """What the record says about its battles. A table read from files is identified by the
    files' digests (hashing every battle would cost a pass in Python per battle)."""
    if isinstance(battles, BattleTable):
        fingerprint = battles.fingerprint or content_hash([b.to_dict() for b in battles.to_battles()])
        return {"n": len(battles), "fingerprint": fingerprint, "prompt_hash": fingerprint,
                "outcomes": battles.outcomes(), "judges": dict(battles.judges)}
    return {"n": len(battles), "fingerprint": content_hash([b.to_dict() for b in battles]),
            "prompt_hash": content_hash(sorted({str(b.prompt_id) for b in battles})),
            "outcomes": dict(Counter(b.winner for b in battles)),
            "judges": dict(Counter(b.judge or "unknown" for b in battles))}


def arena_entry(summary: dict, battles: Sequence[Battle] | BattleTable, source: dict) -> dict:
    """The ``tasks["arena"]`` entry of an arena run record."""
    facts = _battle_facts(battles)
    return {
        "version": "1",
        "description": f"pairwise arena: {summary['method'].upper()} ratings over {facts['n']} battles",
        "output_type": "pairwise",
        "config": {"name": TASK, **{k: summary[k] for k in ("method", "point", "rounds", "seed", "anchor",
                                                             "anchor_rating")},
                   **({"style_control": True, "style_l2": summary["style_control"]["l2"]}
                      if summary.get("style_control") else {})},
        "num_fewshot": 0, "n_docs": facts["n"], "dataset_fingerprint": facts["fingerprint"],
        "prompt_hash": facts["prompt_hash"],
        "data_source": source.get("battles") or source.get("prompts"),
        "metrics": {}, "breakdowns": {},
        "ratings": summary["ratings"],
        **({"style_control": summary["style_control"]} if summary.get("style_control") else {}),
        "extra": {"win_rate_matrix": summary["win_rate_matrix"],
                  "win_rate_matrix_ties_half": summary["win_rate_matrix_ties_half"],
                  "battle_count_matrix": summary["battle_count_matrix"],
                  "outcomes": facts["outcomes"], "judges": facts["judges"],
                  "warnings": summary["warnings"], **source},
    }
