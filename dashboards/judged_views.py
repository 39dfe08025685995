"""The judged benchmarks' own tables on the task page, as their papers print them:

- **Arena-Hard v2.0** (``arena_hard_v2``): per model and category (hard prompts against o3-mini,
  creative writing against gemini-2.0-flash, and all prompts) the score against the baseline and the
  style-controlled score, each with upstream's 90% bootstrap interval, the prompts and battles behind
  them and the judge's position-swap consistency (from ``extra.arena_hard`` and ``extra.judge``);
- **HealthBench** (``healthbench``): the clipped score per theme and per rubric axis, one column per
  model, each with its bootstrap CI (the task's ``theme:*`` and ``axis:*`` breakdowns).

Pure frames from the records; ``render`` draws them when the column's task is one of the two.
"""
from __future__ import annotations

from typing import Optional

import pandas as pd

from evalkit.dashboards.judging import reliability_of
from evalkit.dashboards.tables import as_metric_value, cell_text

ARENA_HARD = "arena_hard_v2"
HEALTHBENCH = "healthbench"
#: Arena-Hard's categories in upstream's order, then the pooled figure
ARENA_GROUPS = ("hard_prompt", "creative_writing", "all")
HEALTHBENCH_FAMILIES = ("theme", "axis")
ARENA_COLUMNS = ["model", "category", "baseline", "score (90% CI)", "style-controlled (90% CI)", "prompts",
                 "battles", "swap consistency", "run_id"]


def _entries(store, sel: pd.DataFrame, task: str):
    """(label, run_id, entry) of ``sel``'s rows of ``task``, one per run."""
    for _, row in sel.drop_duplicates("run_id").iterrows():
        try:
            rec = store.record(row["run_id"])                 # the whole record: the task's extras
        except KeyError:
            continue
        entry = rec.tasks.get(task)
        if entry is not None:
            yield row["label"], row["run_id"], rec, entry


def _summary_text(fig: Optional[dict]) -> str:
    if not fig:
        return "–"
    return cell_text(fig.get("value"), fig.get("lower"), fig.get("upper"), None)


def arena_hard_table(store, sel: pd.DataFrame) -> pd.DataFrame:
    """One row per model and category: both scores with their intervals, prompts, battles, swap consistency."""
    rows = []
    for label, run_id, rec, entry in _entries(store, sel, ARENA_HARD):
        info = (entry.get("extra") or {}).get("arena_hard") or {}
        groups, baselines = info.get("groups") or {}, info.get("baselines") or {}
        swap = (reliability_of(rec, ARENA_HARD) or {}).get("swap_consistency")
        for g in [*ARENA_GROUPS, *sorted(set(groups) - set(ARENA_GROUPS))]:
            fig = groups.get(g)
            if not fig:
                continue
            rows.append({"model": label, "category": g.replace("_", " "),
                         "baseline": baselines.get(g, "per category" if g == "all" else "–"),
                         "score (90% CI)": _summary_text(fig.get("score")),
                         "style-controlled (90% CI)": _summary_text(fig.get("score_sc")),
                         "prompts": fig.get("prompts"), "battles": fig.get("battles"),
                         "swap consistency": swap, "run_id": run_id})
    return pd.DataFrame(rows, columns=ARENA_COLUMNS)


def healthbench_table(store, sel: pd.DataFrame, family: str) -> pd.DataFrame:
    """Rows: the family's tags (``theme`` or ``axis``); columns: models; cells: score [95% CI] n."""
    cells: dict = {}
    for label, _, _, entry in _entries(store, sel, HEALTHBENCH):
        for key, metrics in (entry.get("breakdowns") or {}).items():
            fam, _, tag = key.partition(":")
            mv = as_metric_value((metrics or {}).get("overall_score"))
            if fam == family and mv is not None:
                cells.setdefault(tag, {})[label] = cell_text(mv.value, mv.ci_low, mv.ci_high, mv.n)
    frame = pd.DataFrame.from_dict(cells, orient="index").sort_index()
    frame.index.name = family
    return frame


def render(store, sel: pd.DataFrame, task: str) -> None:
    import streamlit as st

    if task == ARENA_HARD:
        table = arena_hard_table(store, sel)
        if len(table):
            st.subheader("Arena-Hard v2.0 by category")
            st.caption("Score against the category's baseline (50 = as good), plain and style-controlled "
                       "(answer length and markdown held equal), with upstream's 90% bootstrap interval; swap "
                       "consistency: the share of prompts whose two judged orders agreed")
            st.dataframe(table.drop(columns="run_id"), hide_index=True, key="arena_hard_table", column_config={
                "swap consistency": st.column_config.NumberColumn("swap consistency", format="percent")})
    elif task == HEALTHBENCH:
        for family in HEALTHBENCH_FAMILIES:
            table = healthbench_table(store, sel, family)
            if len(table):
                st.subheader(f"HealthBench by {family}")
                st.dataframe(table, key=f"healthbench_{family}")
        st.caption("Clipped mean of the rubric scores per tag with its bootstrap 95% CI (simple-evals' aggregation)")
