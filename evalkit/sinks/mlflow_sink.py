"""``--log-to mlflow``: one MLflow run per evalkit run record.

Metrics: ``task/metric`` plus ``.ci_low``, ``.ci_high``, ``.stderr``, ``.n``; params: the flat
config and model block; tags: run id, model, backend, tasks; artifacts: the scrubbed run.json and
one samples table per task (``samples/<task>.json``, MLflow's table format). The tracking URI is
``--mlflow-uri``, else ``MLFLOW_TRACKING_URI``, else MLflow's default. A local folder is MLflow's
file store, which recent MLflow releases only open with ``MLFLOW_ALLOW_FILE_STORE=true``: set here
for local folders (a path or ``file:`` URI) so ``--mlflow-uri ./mlruns`` just works.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from evalkit.util.extras import require
from evalkit.sinks.payload import Payload

PARAM_LIMIT = 6000   # MLflow's length limit for a param value


def _local(uri: str) -> bool:
    return uri.startswith("file:") or "://" not in uri


def log(payload: Payload, uri: Optional[str] = None, experiment: str = "evalkit", dry_run: bool = False) -> dict:
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI")
    if uri and "://" not in uri and not uri.startswith("file:"):
        uri = Path(uri).resolve().as_uri()
    if dry_run:
        return {"sink": "mlflow", "uri": uri, "experiment": experiment, "metrics": len(payload.metrics),
                "params": len(payload.params), "tables": list(payload.tables), "dry_run": True}
    if uri and _local(uri):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    mlflow = require("mlflow", "the mlflow sink")
    import pandas as pd
    client = mlflow.MlflowClient(tracking_uri=uri) if uri else mlflow.MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    run = client.create_run(exp_id, run_name=payload.name, tags=payload.tags)
    rid = run.info.run_id
    try:
        from mlflow.entities import Metric, Param
        import time
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, 0) for k, v in payload.metrics.items()]
        params = [Param(k, str(v)[:PARAM_LIMIT]) for k, v in payload.params.items() if v is not None]
        for i in range(0, max(len(metrics), len(params)), 100):
            client.log_batch(rid, metrics=metrics[i:i + 100], params=params[i:i + 100])
        client.log_dict(rid, payload.run_json, "run.json")
        for task, (cols, rows) in payload.tables.items():
            client.log_table(rid, pd.DataFrame(rows, columns=cols), artifact_file=f"samples/{task}.json")
        client.set_terminated(rid, "FINISHED")
    except BaseException:
        client.set_terminated(rid, "FAILED")
        raise
    return {"sink": "mlflow", "uri": client.tracking_uri, "experiment_id": exp_id, "run_id": rid}
