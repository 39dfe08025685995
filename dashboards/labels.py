"""Row and column keys and labels of the leaderboard, and task families (no Streamlit, no engine).

A *row* (``entry``) is a model's name, identity hash and generation overrides, so two settings of one
model are two rows; a *column* (``col``) is a task, its version and its prompt hash, so runs whose
prompts differ never share a column.
"""
from __future__ import annotations

import json
from typing import Optional

import pandas as pd

ARENA_TASK = "arena"

# Task family by name prefix; a task class can set ``family`` itself.
FAMILIES = {"gsm8k": "math", "math": "math", "math500": "math", "hendrycks": "math", "mmlu": "knowledge",
            "gpqa": "knowledge", "humaneval": "code", "mbpp": "code", "translation": "translation",
            "wmt": "translation", "xsum": "summarization", "cnn": "summarization",
            "summarization": "summarization", "wikitext": "language modeling", "mt_bench": "chat (judged)",
            ARENA_TASK: "arena"}


def task_family(task: str) -> str:
    try:
        from evalkit.taskapi import registry
        fam = getattr(registry.all_tasks().get(task), "family", None)
        if isinstance(fam, str) and fam:
            return fam
    except Exception:  # noqa: BLE001 - an unknown or broken task file only loses its family
        pass
    name = task.lower()
    for prefix in sorted(FAMILIES, key=len, reverse=True):
        if name.startswith(prefix):
            return FAMILIES[prefix]
    return "other"


def is_redacted(task: str) -> bool:
    from evalkit.compare.analysis import redacted
    return redacted(task)


def gen_text(gen: Optional[dict]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((gen or {}).items())) or "default generation"


def entry_key(name: str, identity_hash: str = "", gen: Optional[dict] = None) -> str:
    """The row a run fills: same name, same weights/backend identity and same generation overrides."""
    return json.dumps([name, identity_hash or "", json.dumps(gen or {}, sort_keys=True)])


def col_key(task: str, version, prompt_hash) -> str:
    return f"{task}|v{version}|{prompt_hash or ''}"


def row_labels(static: pd.DataFrame) -> dict:
    """Row labels: the model name, plus what tells apart several settings of one name."""
    out = {}
    for name, grp in static.groupby("model"):
        variants = grp.drop_duplicates("entry")
        if len(variants) == 1:
            out[variants["entry"].iloc[0]] = str(name)
            continue
        gens_differ = variants["gen"].nunique() > 1
        ids_differ = variants["identity_hash"].nunique() > 1
        for _, v in variants.iterrows():
            parts = ([v["gen"]] if gens_differ else []) + ([f"id {v['identity_hash'][:6]}"] if ids_differ else [])
            out[v["entry"]] = f"{name} [{'; '.join(parts)}]"
    return out


def label_columns(cells: pd.DataFrame) -> pd.DataFrame:
    """Column labels: the task name, or ``task (v2, prompt 3f2a…, 50 docs)`` when a task has several."""
    labels, notes = {}, {}
    if len(cells):
        for task, grp in cells.groupby("task"):
            cols = grp.drop_duplicates("col")
            if len(cols) == 1:
                labels[cols["col"].iloc[0]] = str(task)
                continue
            vers_differ = cols["version"].nunique() > 1
            for _, c in cols.iterrows():
                parts = ([f"v{c['version']}"] if vers_differ else []) + [f"prompt {str(c['prompt_hash'])[:4]}…"]
                if c["n_docs"] is not None:
                    parts.append(f"{c['n_docs']} docs")
                labels[c["col"]] = f"{task} ({', '.join(parts)})"
                notes[c["col"]] = (f"{task} has {len(cols)} columns: its runs' prompts differ (the prompt hash "
                                   f"covers the prompt of every evaluated doc, so another template, few-shot "
                                   f"setting, system prompt or doc subset makes a new column)")
    cells["col_label"] = cells["col"].map(labels) if len(cells) else pd.Series(dtype=str)
    cells["col_note"] = cells["col"].map(notes) if len(cells) else pd.Series(dtype=str)
    return cells
