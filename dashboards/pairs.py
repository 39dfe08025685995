"""Two-run comparisons and arena tables for the dashboard (no Streamlit).

The comparison is ``evalkit compare``'s own engine (``evalkit.compare.compare_runs``) and its rows
are rendered with the same cell formatting as the CLI report, so the page and the terminal agree;
this module only reshapes results into frames and pulls the flipped items' full texts from the
samples. Arena tables come from ``tasks["arena"]`` of arena run records (``evalkit arena rate``/
``run``), whose ratings and matrices were computed by ``evalkit.arena.ratings``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pandas as pd

from evalkit.compare import CompareOptions, Comparison, compare_runs
from evalkit.compare.report import HEAD, confidence_level, power_lines, row_cells

from .data import ARENA_TASK, HIDDEN


def run_choices(store) -> pd.DataFrame:
    """Runs that can be compared (not arena records), newest first, with a readable label."""
    runs = store.runs()
    runs = runs[runs["kind"] != "arena"].copy()
    runs["choice"] = [f"{r.label} · {', '.join(r.tasks)} · {str(r.created_at)[:16]} · {r.run_id[-6:]}"
                      for r in runs.itertuples()]
    return runs


def compare(store, baseline_id: str, candidate_id: str, opts: Optional[CompareOptions] = None) -> Comparison:
    """``evalkit compare`` on two runs of the store (raises ``NotComparable`` as the CLI does)."""
    return compare_runs(store.record(baseline_id), store.record(candidate_id), opts or CompareOptions())


def comparison_frame(c: Comparison) -> pd.DataFrame:
    """The CLI report's table: one row per task x metric; [0,1] metrics in points."""
    head = [h.format(level=confidence_level(c)) for h in HEAD]
    rows = [row_cells(r) for r in c.rows]
    frame = pd.DataFrame(rows, columns=head)
    frame["primary"] = [r.primary for r in c.rows]
    return frame


def comparison_text(c: Comparison) -> dict:
    """Definitions, notes and power lines printed around the table."""
    o = c.options
    corr = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "no"}.get(o.correction, o.correction)
    level = confidence_level(c)
    return {"definition": (f"diff = candidate − baseline ([0,1] metrics in points); {level}% CI; one-sided tests "
                           f"at alpha {o.alpha:g} with the {corr} correction across {c.n_primary} primary tests (*); "
                           f"regressed = significantly worse by more than the margin ({o.margin:g})."),
            "notes": list(c.notes), "power": power_lines(c),
            "verdict": "regression" if c.regressed else "no regression", "exit_code": c.exit_code}


def flipped_items(store, c: Comparison, baseline_id: str, candidate_id: str) -> pd.DataFrame:
    """Every flipped item (right→wrong and wrong→right on each task's flip metric), side by side."""
    rows = []
    for task, f in c.flips.items():
        b = store.samples(baseline_id, task).drop_duplicates("doc_id").set_index("doc_id")
        k = store.samples(candidate_id, task).drop_duplicates("doc_id").set_index("doc_id")
        for direction, key in (("right → wrong", "right_to_wrong_ids"), ("wrong → right", "wrong_to_right_ids")):
            for doc in f.get(key, []):
                doc = str(doc)
                br = b.loc[doc] if doc in b.index else None
                kr = k.loc[doc] if doc in k.index else None
                rows.append({"task": task, "metric": f["metric"], "direction": direction, "doc_id": doc,
                             "target": _get(br, "target"), "baseline": _output(br), "candidate": _output(kr),
                             "prompt": _get(br, "prompt")})
    return pd.DataFrame(rows, columns=["task", "metric", "direction", "doc_id", "target", "baseline", "candidate",
                                       "prompt"])


def _get(row, key) -> str:
    return "" if row is None else str(row[key])


def _output(row) -> str:
    if row is None:
        return "(missing)"
    if row["response"] == HIDDEN:
        return HIDDEN
    ext = row["extracted"]
    return row["response"] + (f"\n\n(extracted: {ext})" if ext and ext != row["response"] else "")


# ---- arena ------------------------------------------------------------------------------------------
@dataclass
class ArenaBoard:
    run_id: str
    title: str
    ratings: pd.DataFrame          # model, rating, ci_low, ci_high, rank, n_battles, wins, losses, ties
    win_rate: pd.DataFrame         # row model's share of decisive battles won against the column model
    battle_count: pd.DataFrame
    judge: Optional[dict]
    method: str
    style: Optional[pd.DataFrame] = None        # style-controlled ratings (``--style-control``), same columns
    style_coefs: Optional[pd.DataFrame] = None  # feature, coef, ci_low, ci_high


def _square(m: dict, order: list) -> pd.DataFrame:
    frame = pd.DataFrame.from_dict(m or {}, orient="index").reindex(index=order, columns=order)
    return frame.astype(float)


def arena_boards(store) -> list[ArenaBoard]:
    """One board per rated arena record (run folders and battle files), made once per version of the data."""
    return store.derived("arena_boards", lambda: _arena_boards(store))


def _arena_boards(store) -> list[ArenaBoard]:
    out = []
    for run_id, run in store.summaries().items():
        t = (run.get("tasks") or {}).get(ARENA_TASK)
        if not t or not isinstance(t.get("ratings"), dict):
            continue
        ratings = _ratings_frame(t["ratings"])
        sc = t.get("style_control") if isinstance(t.get("style_control"), dict) else {}
        style = _ratings_frame(sc["ratings"]) if isinstance(sc.get("ratings"), dict) else None
        coefs = (pd.DataFrame([{"feature": f, **c} for f, c in sc["coefs"].items()],
                              columns=["feature", "coef", "ci_low", "ci_high"])
                 if isinstance(sc.get("coefs"), dict) else None)
        order = list(ratings["model"])
        extra = t.get("extra") or {}
        cfg = t.get("config") or {}
        title = (f"{run_id}: {t.get('n_docs')} battles, {str(cfg.get('method', 'bt')).upper()} "
                 f"({cfg.get('rounds')} bootstrap rounds) from {t.get('data_source') or '?'}")
        judge = extra.get("judge_reliability") if isinstance(extra.get("judge_reliability"), dict) else None
        out.append(ArenaBoard(run_id, title, ratings, _square(extra.get("win_rate_matrix"), order),
                              _square(extra.get("battle_count_matrix"), order), judge,
                              str(cfg.get("method", "bt")), style, coefs))
    return out


def _ratings_frame(ratings: dict) -> pd.DataFrame:
    rows = [{"model": m, **r} for m, r in ratings.items()]
    frame = pd.DataFrame(rows, columns=["model", "rating", "ci_low", "ci_high", "rank", "n_battles", "wins",
                                        "losses", "ties"])
    return frame.sort_values("rating", ascending=False, kind="stable").reset_index(drop=True)

