"""``--log-to wandb``: one Weights & Biases run per evalkit run record.

Summary: ``task/metric`` plus ``.ci_low``, ``.ci_high``, ``.stderr``, ``.n``; config: the flat config
and model block; one ``wandb.Table`` per task (``samples/<task>``). Project from ``--wandb-project``
(else ``WANDB_PROJECT``, else ``evalkit``); ``WANDB_MODE=offline`` (or ``--wandb-offline``) writes the
run under ``--wandb-dir`` for a later ``wandb sync``. Code, git and system metadata capture are off:
only what the record holds is sent.
"""
from __future__ import annotations

import os
from typing import Optional

from evalkit.util.extras import require
from evalkit.sinks.payload import Payload


def log(payload: Payload, project: Optional[str] = None, directory: Optional[str] = None,
        offline: bool = False, dry_run: bool = False) -> dict:
    project = project or os.environ.get("WANDB_PROJECT") or "evalkit"
    if dry_run:
        return {"sink": "wandb", "project": project, "metrics": len(payload.metrics),
                "tables": list(payload.tables), "dry_run": True}
    wandb = require("wandb", "the wandb sink")
    mode = "offline" if offline else os.environ.get("WANDB_MODE") or None
    settings = wandb.Settings(save_code=False, disable_git=True, x_disable_stats=True, x_disable_meta=True,
                              console="off", silent=True)
    if directory:
        os.makedirs(directory, exist_ok=True)
    tags = ["evalkit"] + [k[len("evalkit.tag."):][:64] for k in payload.tags if k.startswith("evalkit.tag.")]
    run = wandb.init(project=project, name=payload.name, dir=directory, mode=mode, config=payload.params,
                     tags=tags, reinit="create_new", settings=settings)
    try:
        run.summary.update(payload.metrics)
        for task, (cols, rows) in payload.tables.items():
            run.log({f"samples/{task}": wandb.Table(columns=cols, data=rows)})
    finally:
        run.finish()
        # wandb-core writes the run file in the background; tearing the service down flushes it, so
        # an offline run is complete on disk (and syncable) when this returns
        wandb.teardown()
    return {"sink": "wandb", "project": project, "run_id": run.id, "dir": getattr(run, "dir", None),
            "mode": mode or "online"}
