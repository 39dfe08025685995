"""Row and column keys and labels of the leaderboard, and task families (no Streamlit, no engine).

A *row* (``entry``) is a model: its name and its weights (``weights_id``), so runs of one model under
other generation settings or backends fill one row (the newest run fills a cell), and records that
``evalkit score --name X`` made belong to model X. The rows can be split by settings instead
(``setting_entry``: name, backend identity and generation overrides). A *column* (``col``) is a
task, its version and its prompt hash, so runs whose prompts differ never share a column.
"""
from __future__ import annotations

import functools
import hashlib
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


@functools.lru_cache(maxsize=4096)
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
    return json.dumps([name, identity_hash or "", json.dumps(gen, sort_keys=True) if gen else "{}"])


def col_key(task: str, version, prompt_hash) -> str:
    return f"{task}|v{version}|{prompt_hash or ''}"


def weights_id(model: dict) -> str:
    """What tells a model's weights apart (a record's ``model`` object): the content hash of a local
    model folder, else its source and revision; nothing for scored predictions (``evalkit score``: the
    model is its ``--name``) or a model with no identity beyond its cache key."""
    if model.get("backend") == "predictions":
        return ""
    ident = model.get("identity") or {}
    if not ident:
        return model.get("identity_hash") or ""
    key = ident.get("content") or {k: ident.get(k) for k in ("source", "model", "revision", "adapter", "lora")}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]


#: what a label adds when one name has several rows: per model the weights, per setting the settings
_LABEL_PARTS = {"entry": (("weights", "weights {}", 6),),
                "setting_entry": (("gen", "{}", None), ("identity_hash", "id {}", 6))}


def row_labels(static: pd.DataFrame, key: str = "entry") -> dict:
    """Row labels: the model name, plus what tells apart several rows of one name."""
    variants = static.drop_duplicates(key)
    several = variants["model"].duplicated(keep=False)
    out = dict(zip(variants.loc[~several, key], variants.loc[~several, "model"].astype(str)))
    sub, parts = variants[several], _LABEL_PARTS[key]
    if not len(sub):
        return out
    values = [sub[c].astype(str).tolist() for c, _, _ in parts]
    differ = [(sub.groupby("model")[c].transform("nunique") > 1).tolist() for c, _, _ in parts]
    for i, (entry, name) in enumerate(zip(sub[key], sub["model"])):
        shown = [fmt.format(values[j][i][:cut] if cut else values[j][i])
                 for j, (_, fmt, cut) in enumerate(parts) if differ[j][i]]
        out[entry] = f"{name} [{'; '.join(shown)}]"
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
