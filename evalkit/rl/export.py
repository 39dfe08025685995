"""``evalkit export-rl``: a task's prompts, exactly as the evaluation renders them, with the gold data.

The prompt is the task's own (``Task.prompt_text`` / ``Task.messages``: few-shot examples,
instruction, the chat-style prompt under ``--chat``), built with the same ``RunContext`` the runner
builds from ``--seed``, ``--num-fewshot``, ``--system-prompt``. The gold is the dataset record the
verifier rebuilds the task's doc from (``evalkit.rl.gold``), as JSON.

- ``--format verl``: ``DIR/<split>.parquet`` with verl's columns ``data_source`` (``evalkit/<task>``),
  ``prompt`` (chat messages; verl applies the model's template), ``ability``,
  ``reward_model: {style: "rule", ground_truth}`` and ``extra_info`` (index, doc id, and the
  verifier options the rows need: ``evalkit.chat``, ``evalkit.seed``);
- ``--format trl``: ``DIR/<split>.jsonl`` with ``prompt`` (text, or messages with ``--chat``),
  ``gold``, ``doc_id``, ``task``: ``datasets.load_dataset("json", data_files=...)`` feeds it to
  ``GRPOTrainer`` with ``reward_funcs=[evalkit.rl.trl_reward(TASK)]``.
A ``manifest.json`` records the task, options, row count and the verifier hash.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Optional

from evalkit.taskapi import registry
from evalkit.rl.bridge import KIND, SCORING_TASK
from evalkit.rl.version import verifier_hash
from evalkit.taskapi.task import RunContext
from evalkit.taskapi.data import DataError
from evalkit.util.errors import ConfigError

ABILITY = {"number": "math", "math": "math", "letter": "knowledge", "code": "code"}


def prompt_task_name(task_name: str) -> str:
    """The task whose prompt is exported: the scoring task (MMLU/GPQA: their chain-of-thought variants)."""
    if task_name not in SCORING_TASK:
        raise ValueError(f"export-rl supports {', '.join(sorted(SCORING_TASK))}; got {task_name!r}")
    return SCORING_TASK[task_name]


def iter_items(task_name: str, data_path: Optional[str] = None, split: Optional[str] = None,
               limit: Optional[int] = None, **task_options) -> Iterator[tuple]:
    """(task, doc, raw record) for the items of a split, in the dataset's order."""
    task = registry.get_task_class(prompt_task_name(task_name))(data_path=data_path, **task_options)
    split = split or task.eval_split
    task.__dict__.setdefault("_counters", __import__("collections").Counter())
    n = 0
    for i, rec in enumerate(task.dataset.iter_records(split, data_path)):
        if limit is not None and n >= limit:
            break
        doc = task.record_to_doc(rec.data, i)
        if doc is None:
            continue
        n += 1
        yield task, doc, rec.data


def rows(task_name: str, fmt: str, data_path=None, split=None, limit=None, chat: bool = False, seed: int = 1234,
         num_fewshot=None, system_prompt=None, **task_options) -> list[dict]:
    ctx = RunContext(seed=seed, num_fewshot=num_fewshot, apply_chat_template=chat, system_prompt=system_prompt)
    scoring = prompt_task_name(task_name)
    out = []
    for i, (task, doc, record) in enumerate(iter_items(task_name, data_path, split, limit, **task_options)):
        shown = task.permuted(doc, ctx, 0) if hasattr(task, "permuted") else doc  # GPQA: the seeded order
        gold = json.dumps(record, ensure_ascii=False, sort_keys=True, default=str)
        if fmt == "verl":
            out.append({"data_source": f"evalkit/{task_name}", "prompt": task.messages(shown, ctx),
                        "ability": ABILITY[KIND[scoring]],
                        "reward_model": {"style": "rule", "ground_truth": gold},
                        "extra_info": {"index": i, "doc_id": doc.id, "split": split or task.eval_split,
                                       "evalkit": {"chat": chat, "seed": seed}}})
        elif fmt == "trl":
            prompt = task.messages(shown, ctx) if chat else task.prompt_text(shown, ctx)
            out.append({"prompt": prompt, "gold": gold, "doc_id": doc.id, "task": task_name})
        else:
            raise ValueError(f"format must be verl or trl, got {fmt!r}")
    return out


def export(task_name: str, fmt: str, output: str, split=None, **kw) -> dict:
    out_dir = Path(output)
    if kw.get("limit") is not None and kw["limit"] < 1:
        raise ConfigError(f"--limit {kw['limit']}: must be a number of rows >= 1")
    data = rows(task_name, fmt, split=split, **kw)
    split_name = split or registry.get_task_class(prompt_task_name(task_name)).eval_split
    if not data:  # never an empty training file with exit 0
        raise DataError(f"{kw.get('data_path') or 'the hub dataset'}: task {task_name} split {split_name!r} has no "
                        f"rows to export")
    out_dir.mkdir(parents=True, exist_ok=True)
    if fmt == "verl":
        import pandas as pd
        path = out_dir / f"{split_name}.parquet"
        pd.DataFrame(data).to_parquet(path, index=False)
    else:
        path = out_dir / f"{split_name}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for r in data:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    manifest = {"task": task_name, "format": fmt, "file": path.name, "rows": len(data),
                "verifier_hash": verifier_hash(task_name),
                "options": {k: v for k, v in kw.items() if k != "data_path"}}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    return {**manifest, "path": str(path)}
