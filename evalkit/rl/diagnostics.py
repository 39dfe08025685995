"""GRPO group diagnostics of a run with G samples per prompt (``--gen-kwargs n=G,temperature=...``).

GRPO's advantage is a completion's reward minus its group's mean (over the group's std): a group
whose G rewards are all equal teaches nothing. Per task and per item this reports

- ``pass@k`` for every k <= G (the unbiased estimator, ``evalkit.scoring.passk``; success = reward >= 0.5),
- ``share_all_equal``: the share of groups with G equal rewards (zero advantage: no signal),
- ``mean_group_std``: the mean within-group reward standard deviation (population std, over G),
- ``share_learnable``: the share of items with 0 < pass rate < 1 (``learnable_items`` lists them: a
  curriculum filter).

``evalkit run`` and ``evalkit score`` compute them whenever a verifiable task's samples hold more than
one response (``attach_group_figures``): each figure goes into the task's record entry as ``grpo``
with its 95% CI over items, and each item's group figures into its sample row as ``grpo``, so the
leaderboard shows them and a cached or resumed run reports the same figures as a fresh one.

Rewards per completion come from the run's samples: code tasks keep every completion's sandbox
verdict; answer-matching tasks record the first completion's metrics only, so the verifier rescores
all G responses (guards off: the evaluation metric itself) against the gold rebuilt from the task's
data (``config.data_paths``), or from the sample's ``target`` when the data is not at hand.
"""
from __future__ import annotations

import logging
import statistics
from typing import Iterable, Optional

from evalkit.scoring.passk import pass_at_k
from evalkit.rl.bridge import KIND, SCORING_TASK
from evalkit.scoring.stats import mean_metric

SUCCESS = 0.5
log = logging.getLogger(__name__)


def item_stats(rewards: list[float]) -> dict:
    g = len(rewards)
    c = sum(r >= SUCCESS for r in rewards)
    return {"n": g, "n_correct": c, "pass_rate": c / g if g else 0.0, "mean_reward": statistics.fmean(rewards),
            "std": statistics.pstdev(rewards) if g > 1 else 0.0, "all_equal": len(set(rewards)) <= 1,
            "pass_at_k": {k: pass_at_k(g, c, k) for k in range(1, g + 1)}}


def group_diagnostics(rewards_by_item: dict[str, list[float]]) -> dict:
    """Figures over a task's groups (``{item id: [reward of each of the G completions]}``)."""
    items = {i: item_stats([float(x) for x in r]) for i, r in rewards_by_item.items() if r}
    if not items:
        return {"n_items": 0}
    gs = [s["n"] for s in items.values()]
    g_min = min(gs)
    vals = list(items.values())
    return {
        "n_items": len(items), "G": [g_min, max(gs)],
        "pass_at_k": {k: statistics.fmean(s["pass_at_k"][k] for s in vals) for k in range(1, g_min + 1)},
        "share_all_equal": statistics.fmean(float(s["all_equal"]) for s in vals),
        "share_all_correct": statistics.fmean(float(s["n_correct"] == s["n"]) for s in vals),
        "share_all_wrong": statistics.fmean(float(s["n_correct"] == 0) for s in vals),
        "mean_group_std": statistics.fmean(s["std"] for s in vals),
        "share_learnable": statistics.fmean(float(0 < s["pass_rate"] < 1) for s in vals),
        "items": items,
    }


#: record figure -> (per-item value, higher is better)
FIGURES = {
    "share_all_equal": (lambda s: float(s["all_equal"]), False),      # zero-advantage groups: no signal
    "share_all_correct": (lambda s: float(s["n_correct"] == s["n"]), True),
    "share_all_wrong": (lambda s: float(s["n_correct"] == 0), False),
    "mean_group_std": (lambda s: s["std"], True),
    "share_learnable": (lambda s: float(0 < s["pass_rate"] < 1), True),
}
ITEM_KEYS = ("n", "n_correct", "pass_rate", "mean_reward", "std", "all_equal")


def record_figures(diag: dict) -> dict:
    """The record's ``grpo`` block: every figure as a metric value with its 95% CI over items."""
    items = list(diag["items"].values())
    figures = {f"pass@{k}": mean_metric([s["pass_at_k"][k] for s in items]).to_dict()
               for k in range(1, diag["G"][0] + 1)}
    for name, (value, hib) in FIGURES.items():
        figures[name] = mean_metric([value(s) for s in items], hib).to_dict()
    return {"n_items": diag["n_items"], "G": diag["G"], "success_threshold": SUCCESS,
            "gold_source": diag.get("gold_source"), "figures": figures}


def attach_group_figures(task_name: str, entry, rows: list[dict], config) -> bool:
    """Put the GRPO figures of a scored task with G > 1 responses per item into its record entry
    (``entry.grpo``) and sample rows (``row["grpo"]``). False (nothing attached) for a task evalkit.rl
    does not verify or a run with one response per item."""
    if task_name not in SCORING_TASK or not any(len(r.get("responses") or []) > 1 for r in rows):
        return False
    try:
        rewards, _, source = task_rewards(
            task_name, rows, data_path=config.data_paths.get(task_name),
            task_options=config.task_options.get(task_name, {}), chat=bool(config.apply_chat_template),
            seed=config.seed)
    except Exception as e:  # noqa: BLE001 -- figures on top of a finished evaluation never fail it
        log.warning("GRPO group figures of %s skipped: %s", task_name, e)
        entry.grpo = {"skipped": f"{type(e).__name__}: {e}"[:300]}
        return False
    diag = group_diagnostics(rewards)
    if not diag["n_items"]:
        return False
    diag["gold_source"] = source
    entry.grpo = record_figures(diag)
    for row in rows:
        s = diag["items"].get(row["doc_id"])
        if s is not None:
            row["grpo"] = {k: s[k] for k in ITEM_KEYS}
    return True


def learnable_items(diag: dict) -> list[str]:
    return [i for i, s in diag.get("items", {}).items() if 0 < s["pass_rate"] < 1]


def _gold_records(task_name: str, data_path: Optional[str], task_options: dict) -> dict:
    from evalkit.rl.export import iter_items
    try:
        return {doc.id: rec for _, doc, rec in iter_items(task_name, data_path, **task_options)}
    except Exception:  # noqa: BLE001 -- no data here: fall back to the samples' targets
        return {}


def task_rewards(task_name: str, samples: Iterable[dict], *, data_path=None, task_options=None, chat=False,
                 seed=1234) -> tuple[dict, dict, str]:
    """({doc id: [rewards]}, {doc id: gold record or target}, where the golds came from)."""
    samples = list(samples)
    scoring = SCORING_TASK[task_name]
    if KIND[scoring] == "code":
        out = {s["doc_id"]: [float(v["passed"]) for v in s["extra"]["results"]] for s in samples}
        return out, {}, "sandbox verdicts in the samples"
    from evalkit.rl.verifier import Verifier
    records = _gold_records(task_name, data_path, task_options or {})
    source = "task data" if records else "sample targets"
    ver = Verifier(task_name, use_guards=False, chat=chat, seed=seed, **(task_options or {}))
    golds, texts, owners = [], [], []
    for s in samples:
        gold = records.get(s["doc_id"], s.get("target"))
        for text in s.get("responses") or []:
            golds.append(gold)
            texts.append(text if isinstance(text, str) else None)
            owners.append(s["doc_id"])
    out: dict[str, list[float]] = {s["doc_id"]: [] for s in samples}
    for owner, v in zip(owners, ver.verify_batch(golds, texts)):
        if v.reward is not None:
            out[owner].append(v.reward)
    return out, {s["doc_id"]: records.get(s["doc_id"], s.get("target")) for s in samples}, source


def run_diagnostics(run_dir: str, tasks: Optional[list[str]] = None) -> dict:
    """Diagnostics of every verifiable generative task of a run record."""
    from evalkit.records import load_run
    run = load_run(run_dir)
    cfg = run.run.config
    out = {"run_id": run.run_id, "tasks": {}, "skipped": {}}
    for name, entry in run.run.tasks.items():
        if tasks and name not in tasks:
            continue
        if name not in SCORING_TASK or entry.output_type != "generate":
            out["skipped"][name] = "not a generative task evalkit.rl verifies"
            continue
        rewards, golds, source = task_rewards(
            name, run.samples(name), data_path=(cfg.get("data_paths") or {}).get(name),
            task_options=(cfg.get("task_options") or {}).get(name, {}), chat=bool(cfg.get("apply_chat_template")),
            seed=int(cfg.get("seed", 1234)))
        diag = group_diagnostics(rewards)
        diag["gold_source"] = source
        diag["_golds"] = golds
        out["tasks"][name] = diag
    return out
