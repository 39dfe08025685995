"""``--push-to-hub REPO``: a run record as files of a Hugging Face dataset repo.

One commit adds ``runs/<run-id>/run.json`` (scrubbed), ``runs/<run-id>/samples_<task>.jsonl`` (not
for redacted tasks such as GPQA) and ``runs/<run-id>/README.md`` (a metrics table with 95% CIs),
through ``HfApi.create_repo`` and ``HfApi.create_commit``. The token is huggingface_hub's own
(``HF_TOKEN`` or ``huggingface-cli login``); evalkit never reads, prints or stores it.
``--dry-run`` builds the same commit operations and stops before the network.
"""
from __future__ import annotations

import json
from typing import Optional

from evalkit.util.extras import require
from evalkit.sinks.payload import Payload


def _finite(x) -> bool:
    return x is not None and x == x and abs(x) != float("inf")


def card(payload: Payload) -> str:
    lines = [f"# evalkit run {payload.run_id}", "", f"model: `{payload.tags['evalkit.model']}` "
             f"(backend {payload.tags['evalkit.backend']})", "", "| task | metric | value | 95% CI | n |",
             "|---|---|---:|---|---:|"]
    for task, entry in payload.run.tasks.items():
        for m, v in entry.metrics.items():
            ci = f"[{v.ci_low:.4f}, {v.ci_high:.4f}]" if _finite(v.ci_low) and _finite(v.ci_high) else "-"
            val = f"{v.value:.4f}" if _finite(v.value) else "-"
            lines.append(f"| {task} | {m} | {val} | {ci} | {v.n} |")
    return "\n".join(lines) + "\n"


def operations(payload: Payload, hf) -> list:
    base = f"runs/{payload.run_id}"
    ops = [hf.CommitOperationAdd(f"{base}/run.json",
                                 json.dumps(payload.run_json, indent=2, ensure_ascii=False).encode("utf-8")),
           hf.CommitOperationAdd(f"{base}/README.md", card(payload).encode("utf-8"))]
    for name, path in payload.files.items():
        if name != "run.json":
            ops.append(hf.CommitOperationAdd(f"{base}/{name}", str(path)))
    return ops


def log(payload: Payload, repo: str, private: bool = True, dry_run: bool = False,
        endpoint: Optional[str] = None) -> dict:
    hf = require("huggingface_hub", "the hub sink (--push-to-hub)")
    if "/" not in repo:
        raise ValueError(f"--push-to-hub {repo!r}: expected OWNER/NAME (a dataset repo)")
    ops = operations(payload, hf)
    plan = {"sink": "hub", "repo": repo, "repo_type": "dataset", "files": [op.path_in_repo for op in ops],
            "commit_message": f"evalkit run {payload.run_id}"}
    if dry_run:
        return {**plan, "dry_run": True}
    api = hf.HfApi(endpoint=endpoint)
    api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
    info = api.create_commit(repo, ops, commit_message=plan["commit_message"], repo_type="dataset")
    return {**plan, "url": getattr(info, "commit_url", str(info))}
