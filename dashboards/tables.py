"""Leaderboard tables from ``data.ResultsStore`` frames: ranks with statistical ties, the overall
column, cell text, filters and provenance (no Streamlit).

Rules (also shown on the page):

- **Rank (ties)**: per column, models are sorted best first; the best unranked model leads a group
  and every following model whose 95% CI overlaps the *leader's* CI shares the leader's rank; the
  first one that does not overlap starts the next group, ranked by its position (1, 1, 3, ...).
  A value without a CI is its own one-point interval.
- **Overall**: see ``ranking`` (coverage groups, mean win rate within a group, bootstrap CI, the
  same tie rule); ``board`` builds the table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from evalkit.scoring.budgets import WARN_SHARE
from evalkit.records import MetricValue

from .ranking import tied_ranks  # noqa: F401 (the rank rule, re-exported)


def as_metric_value(d) -> Optional[MetricValue]:
    """A figure nested in an entry (GRPO group figures, best-of-N metrics) typed as a
    ``MetricValue``; None when it is absent or not one."""
    try:
        return MetricValue.check(d, "figure") if d is not None else None
    except ValueError:
        return None


def metric_cells(mv: dict) -> dict:
    """The frame columns of one metric value (a ``MetricValue`` or its JSON): value (NaN when the
    record holds null), CI ends, n."""
    return {"value": mv.get("value"), "ci_low": mv.get("ci_low"), "ci_high": mv.get("ci_high"), "n": mv.get("n", 0)}

TIE_RULE = ("Ranks: per column, sorted best first, a model shares the rank of its group's leader while its "
            "95% CI overlaps the leader's CI; the first model that does not overlap leads the next group "
            "and takes its position as rank (1, 1, 3 …). '=' marks a shared rank.")
OVERALL_RULE = ("Overall = mean win rate (HELM's aggregate), computed only among models that cover the same "
                "overall columns (the coverage column), with a bootstrap 95% CI; see the ranking rule below.")
OVERALL = "overall"


def fmt(x, digits: Optional[int] = None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    x = float(x)
    if digits is None:
        digits = 1 if abs(x) >= 100 else 2 if abs(x) >= 10 else 3
    return f"{x:.{digits}f}"


def _digits(values: Sequence) -> int:
    """Decimals for a column: 1 from 100 up, 2 from 10 up, else 3 (by its largest finite value)."""
    x = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float) if len(values) else \
        np.zeros(0)
    x = np.abs(x[np.isfinite(x)])
    top = float(x.max()) if len(x) else 0.0
    return 1 if top >= 100 else 2 if top >= 10 else 3


def cell_text(value, lo, hi, n, rank: Optional[int] = None, shared: bool = False, digits: Optional[int] = None) -> str:
    """``0.540 [0.404, 0.670] n=50 #1=``: value, 95% CI, n and (tie-aware) rank."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    ci = f" [{fmt(lo, digits)}, {fmt(hi, digits)}]" if lo is not None and hi is not None and not (
        pd.isna(lo) or pd.isna(hi)) else " [no CI]"
    nn = f" n={int(n)}" if n is not None and not pd.isna(n) else ""
    rk = f" #{rank}{'=' if shared else ''}" if rank is not None else ""
    return f"{fmt(value, digits)}{ci}{nn}{rk}"


def win_rates(values, higher_is_better: bool = True) -> pd.Series:
    """Per model: share of the other models (with values) it beats, ties counting half."""
    v = pd.Series(values, dtype=float)
    known = v.dropna()
    out = pd.Series(np.nan, index=v.index)
    m = len(known)
    if m < 2:
        return out
    x = known.to_numpy() * (1 if higher_is_better else -1)
    beats = (x[:, None] > x[None, :]).sum(axis=1)
    ties = (x[:, None] == x[None, :]).sum(axis=1) - 1
    out[known.index] = (beats + 0.5 * ties) / (m - 1)
    return out


@dataclass
class Filters:
    families: Optional[Sequence[str]] = None
    backends: Optional[Sequence[str]] = None
    tags: Optional[Sequence[str]] = None
    since: Optional[object] = None        # date or Timestamp, inclusive
    until: Optional[object] = None        # inclusive (the whole day)
    latest_only: bool = True
    models: Optional[Sequence[str]] = None    # row labels; None = all
    by_settings: bool = False                 # a row per model and settings (backend, generation), not per model


def _utc(t) -> pd.Timestamp:
    t = pd.Timestamp(t)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def by_settings(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells with a row per model and settings (``labels``): ``entry``/``label`` swapped."""
    return cells.assign(entry=cells["setting_entry"], label=cells["setting_label"])


def filter_cells(cells: pd.DataFrame, f: Filters) -> pd.DataFrame:
    if f.by_settings:
        cells = by_settings(cells)
    keep = pd.Series(True, index=cells.index)
    if f.families:
        keep &= cells["family"].isin(list(f.families))
    if f.backends:
        keep &= cells["backend"].isin(list(f.backends))
    if f.tags:
        wanted = set(f.tags)
        keep &= cells["tags"].map(lambda t: bool(wanted & set(t or ())))
    if f.models:
        keep &= cells["label"].isin(list(f.models))
    if f.since is not None:
        keep &= cells["created_at"] >= _utc(f.since)
    if f.until is not None:
        keep &= cells["created_at"] < _utc(f.until) + pd.Timedelta(days=1)
    out = cells[keep]
    if f.latest_only and len(out):
        out = out.sort_values("created_at", ascending=False, kind="stable").drop_duplicates(
            ["entry", "col", "metric"], keep="first")
    return out


def col_labels(cells: pd.DataFrame) -> dict:
    """{task column key: its label} (``columns``'s ``col_label``)."""
    meta = columns(cells)
    return dict(zip(meta["col"], meta["col_label"])) if len(meta) else {}


def columns(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per leaderboard column: col id, label, task, family, metrics (record order), note."""
    if not len(cells):
        return pd.DataFrame(columns=["col", "col_label", "task", "family", "metrics", "col_note"])
    first = cells.drop_duplicates("col")
    named = cells[["col", "metric", "metric_order"]].sort_values("metric_order", kind="stable")
    metrics = named.drop_duplicates(["col", "metric"]).groupby("col", sort=False)["metric"].agg(list)
    out = pd.DataFrame({"col": first["col"].to_numpy(), "col_label": first["col_label"].to_numpy(),
                        "task": first["task"].to_numpy(), "family": first["family"].to_numpy(),
                        "metrics": [metrics[c] for c in first["col"]],
                        "col_note": first["col_note"].to_numpy() if "col_note" in first else None})
    return out.sort_values(["family", "col_label"], kind="stable").reset_index(drop=True)


# ---- provenance -----------------------------------------------------------------------------------
PROVENANCE_COLUMNS = ["model", "column", "metric", "run_id", "created_at", "backend", "model_spec",
                      "identity_hash", "task_version", "prompt_hash", "dataset_fingerprint", "n_docs",
                      "generation", "seed", "limit", "evalkit_version", "git_sha", "judge", "runs_in_cell", "path"]


def provenance(store, cells: pd.DataFrame) -> pd.DataFrame:
    """Where each shown cell comes from: one row per model x column (the run actually shown)."""
    if not len(cells):
        return pd.DataFrame(columns=PROVENANCE_COLUMNS)
    runs = store.runs().set_index("run_id")
    summaries = store.summaries()
    rows = []
    for _, c in cells.drop_duplicates(["entry", "col"]).iterrows():
        run = runs.loc[c["run_id"]]
        t = (summaries[c["run_id"]].get("tasks") or {}).get(c["task"]) or {}
        rows.append({"model": c["label"], "column": c["col_label"], "metric": c["metric"], "run_id": c["run_id"],
                     "created_at": str(run["created_at"]), "backend": run["backend"], "model_spec": run["spec"],
                     "identity_hash": run["identity_hash"], "task_version": c["version"],
                     "prompt_hash": c["prompt_hash"], "dataset_fingerprint": t.get("dataset_fingerprint"),
                     "n_docs": c["n_docs"], "generation": run["gen"], "seed": run["seed"], "limit": run["limit"],
                     "evalkit_version": run["evalkit_version"], "git_sha": run["git_sha"], "judge": run["judge"],
                     "runs_in_cell": int(c.get("n_runs", 1)), "path": run["path"]})
    return pd.DataFrame(rows, columns=PROVENANCE_COLUMNS)


# ---- breakdowns -----------------------------------------------------------------------------------
BREAKDOWN_COLUMNS = ["model", "run_id", "dimension", "group", "metric", "value", "ci_low", "ci_high", "n"]


def breakdowns(store, cells: pd.DataFrame, col: str) -> pd.DataFrame:
    """Per-group results of one column's runs: MMLU subjects/categories, MATH levels, MT-Bench
    categories (``dim:group`` keys; a key without ``:`` is a category) and turns (``*_turnN`` metrics)."""
    sel = cells[cells["col"] == col].drop_duplicates("entry")
    summaries = store.summaries()
    rows = []
    for _, c in sel.iterrows():
        t = (summaries[c["run_id"]].get("tasks") or {}).get(c["task"])
        if t is None:
            continue
        for key, metrics in (store.task_part(c["run_id"], c["task"], "breakdowns") or {}).items():
            dim, group = key.split(":", 1) if ":" in key else ("category", key)
            for m, mv in metrics.items():
                rows.append({"model": c["label"], "run_id": c["run_id"], "dimension": dim, "group": group,
                             "metric": m, **metric_cells(mv)})
        for m, mv in (t.get("metrics") or {}).items():
            base, sep, turn = m.rpartition("_turn")
            if sep and turn.isdigit():
                rows.append({"model": c["label"], "run_id": c["run_id"], "dimension": "turn", "group": turn,
                             "metric": base, **metric_cells(mv)})
    return pd.DataFrame(rows, columns=BREAKDOWN_COLUMNS)


def _with_part(store, sel: pd.DataFrame, part: str) -> pd.DataFrame:
    """The rows of ``sel`` whose run's task has ``part`` (most runs have no GRPO or best-of-N figures)."""
    return sel[[store.has_part(r, t, part) for r, t in zip(sel["run_id"], sel["task"])]]


GRPO_COLUMNS = ["model", "run_id", "G", "figure", "k", "value", "ci_low", "ci_high", "n", "higher_is_better"]


def grpo_figures(store, cells: pd.DataFrame, col: str) -> pd.DataFrame:
    """GRPO group figures of one column's runs with G > 1 samples per item (``tasks.<t>.grpo``):
    pass@k for k <= G (``k`` set) and the group shares (all equal, learnable, ...), each with its CI."""
    sel = _with_part(store, cells[cells["col"] == col].drop_duplicates("entry"), "grpo")
    rows = []
    for _, c in sel.iterrows():
        g = store.task_part(c["run_id"], c["task"], "grpo") or {}
        for name, mv in (g.get("figures") or {}).items():
            mv = as_metric_value(mv)
            if mv is not None:
                k = int(name[5:]) if name.startswith("pass@") and name[5:].isdigit() else None
                rows.append({"model": c["label"], "run_id": c["run_id"], "G": (g.get("G") or [None])[0],
                             "figure": name, "k": k, **metric_cells(mv), "higher_is_better": mv.higher_is_better})
    return pd.DataFrame(rows, columns=GRPO_COLUMNS)


BEST_OF_N_COLUMNS = ["model", "run_id", "reward_model", "method", "k", "value", "ci_low", "ci_high", "n"]
BEST_OF_N_METHODS = {"pass@1": "pass@1 (mean of the first N)", "maj": "maj@N (majority vote)",
                     "oracle": "oracle@N (any correct)", "rm_best_of": "rm_best_of@N (reward model's pick)"}


def best_of_n_figures(store, cells: pd.DataFrame, col: str, latest_only: bool = True
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Best-of-N figures of one column's runs with ``--reward-model`` (``tasks.<t>.best_of_n``):
    ``(curves, headline)``. ``curves``: one row per model, method and N with the value and its 95%
    interval (``curves_ci``; older records: the per-N metric where there is one). ``headline``: per
    run the figures at full N and ``rm_auroc``, each ``{value, ci_low, ci_high, n}``. Both carry the
    run id and its reward model's name (``run.reward_model``), so two runs of one model stay apart;
    ``latest_only`` keeps the latest run per model row and reward model."""
    sel = _with_part(store, cells[cells["col"] == col], "best_of_n").sort_values("created_at", ascending=False,
                                                                               kind="stable")
    rows, heads, seen = [], [], set()
    summaries = store.summaries()
    for _, c in sel.drop_duplicates("run_id").iterrows():
        b = store.task_part(c["run_id"], c["task"], "best_of_n") or {}
        ns, curves = b.get("ns") or [], b.get("curves") or {}
        rm_info = summaries[c["run_id"]].get("reward_model") or {}
        rm = str(rm_info.get("name") or rm_info.get("spec") or b.get("reward_model") or "reward model")
        if not ns or not isinstance(curves, dict) or (latest_only and (c["entry"], rm) in seen):
            continue
        seen.add((c["entry"], rm))
        bands, metrics = b.get("curves_ci") or {}, b.get("metrics") or {}
        n_items = (metrics.get("rm_auroc") or {}).get("n")
        for method, values in curves.items():
            for i, (k, v) in enumerate(zip(ns, values or [])):
                if v is None:
                    continue
                band_list = bands.get(method) or []
                band = band_list[i] if i < len(band_list) else None
                mv = as_metric_value(metrics.get(f"{method}@{k}") or (metrics.get("pass@1") if method == "pass@1"
                                                                      and k == ns[-1] else None))
                lo, hi = band if band else (mv.ci_low, mv.ci_high) if mv else (None, None)
                rows.append({"model": c["label"], "run_id": c["run_id"], "reward_model": rm, "method": method,
                             "k": int(k), "value": float(v), "ci_low": lo, "ci_high": hi,
                             "n": mv.n if mv else n_items})
        n = b.get("n_samples") or ns[-1]
        for label in ("pass@1", f"maj@{n}", f"oracle@{n}", f"rm_best_of@{n}", "rm_auroc"):
            mv = as_metric_value(metrics.get(label))
            if mv is not None:
                heads.append({"model": c["label"], "run_id": c["run_id"], "reward_model": rm, "N": int(n),
                              "figure": label, **metric_cells(mv)})
    return (pd.DataFrame(rows, columns=BEST_OF_N_COLUMNS),
            pd.DataFrame(heads, columns=["model", "run_id", "reward_model", "N", "figure", "value", "ci_low",
                                         "ci_high", "n"]))


# ---- judges ---------------------------------------------------------------------------------------
JUDGE_FIGURES = ("n_judgments", "parse_failures", "parse_failure_rate", "swap_disagreement_rate",
                 "first_position_win_rate", "unresolved_pairs", "longer_answer_win_rate", "length_spearman")


def judge_reliability(store) -> pd.DataFrame:
    """Judge figures wherever a record has them: MT-Bench (``extra.judge.single``/``pairwise``) and
    judged arenas (``extra.judge_reliability``); made once per version of the data."""
    return store.derived("judge_reliability", lambda: _judge_rows(store))


def _judge_rows(store) -> pd.DataFrame:
    rows = []
    for run_id, run in store.summaries().items():
        judge = (run.get("judge") or {}).get("name")
        for task, t in (run.get("tasks") or {}).items():
            extra = t.get("extra") or {}
            found = []
            if isinstance(extra.get("judge_reliability"), dict):
                found.append(("pairwise", extra["judge_reliability"]))
            jd = extra.get("judge") if isinstance(extra.get("judge"), dict) else {}
            for mode in ("single", "pairwise"):
                if isinstance(jd.get(mode), dict):
                    found.append((mode, jd[mode]))
            for mode, figs in found:
                rows.append({"run_id": run_id, "model": (run.get("model") or {}).get("name"), "task": task,
                             "mode": mode,
                             "judge": judge or jd.get("name"), **{k: figs.get(k) for k in JUDGE_FIGURES}})
    return pd.DataFrame(rows, columns=["run_id", "model", "task", "mode", "judge", *JUDGE_FIGURES])


BUDGET_COLUMNS = {"hit_token_limit": "hit max_tokens", "unclosed_trace": "unclosed trace", "no_answer": "no answer"}


def budget_columns(store, sel: pd.DataFrame, metric: Optional[str] = None) -> pd.DataFrame:
    """The generation budget shares of each row's run and task (the record's ``budget``), as columns
    beside the score; empty when no run recorded any (older records, non-generation tasks). With
    ``metric``: its score on finished and on truncated responses (text with CI and n) where more
    than 5% of a run's responses stopped at max_tokens."""
    out = {label: [] for label in BUDGET_COLUMNS.values()}
    split = {f"{metric} finished": [], f"{metric} truncated": []} if metric else {}
    for run_id, task in zip(sel["run_id"], sel["task"]):
        try:
            b = store.task_part(run_id, task, "budget") or {}
        except KeyError:
            b = {}
        for key, label in BUDGET_COLUMNS.items():
            out[label].append(b.get(key))
        figures = (b.get("split") or {}).get(metric) if (b.get("hit_token_limit") or 0) > WARN_SHARE else None
        for part, col in zip(("finished", "truncated"), split):
            mv = as_metric_value((figures or {}).get(part))
            split[col].append(cell_text(mv.value, mv.ci_low, mv.ci_high, mv.n) if mv and mv.n else None)
    frame = pd.DataFrame(out, index=sel.index)
    frame = frame if frame.notna().any().any() else frame.iloc[:, :0]
    shown = {c: v for c, v in split.items() if any(x is not None for x in v)}
    return pd.concat([frame, pd.DataFrame(shown, index=sel.index)], axis=1) if shown else frame
