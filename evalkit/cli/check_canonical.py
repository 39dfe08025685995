"""``evalkit check-canonical``: run a code task's reference solutions through its own scoring path.

``evalkit check-canonical --task humaneval,mbpp --data humaneval=DIR --data mbpp=DIR`` writes each
problem's canonical solution as a saved prediction and scores it exactly as ``evalkit score`` does
(the task's post-processing, the sandbox, pass@k). Every reference must pass: anything less is a
harness fault (prompt assembly, test wiring, sandbox limits), never the model's. Exit status 0 only
when all pass; 1 otherwise, with the failing problems listed.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from evalkit.taskapi import registry
from evalkit.taskapi.task import Task
from evalkit.backends import parse_model_args
from evalkit.cli.run import parse_data_paths


def register(sub):
    p = sub.add_parser("check-canonical",
                       help="run code tasks' reference solutions through the scoring path; all must pass")
    p.add_argument("--task", "--tasks", dest="tasks", action="append", required=True,
                   help="code task(s), comma-separated or repeated: humaneval, mbpp, mbpp_sanitized")
    p.add_argument("--data", action="append", default=[], metavar="TASK=PATH",
                   help="a task's data from a local file or folder (default: the hub)")
    p.add_argument("--task-args", action="append", default=[], metavar="TASK:K=V,...",
                   help="task options, e.g. mbpp:timeout=30,workers=4")
    p.add_argument("--limit", type=int, default=None, help="only the first N problems of each task")
    p.add_argument("--output", default=None, help="also write a run record per task to this folder")
    p.set_defaults(func=run)


def canonical_docs(task_name: str, data_path, options: dict, limit=None):
    """(task, docs, predictions file rows) for one task."""
    task = registry.get_task_class(task_name)(data_path=data_path, **options)
    if type(task).canonical_prediction is Task.canonical_prediction:
        raise ValueError(f"task {task_name} has no reference solutions to check (not a code task)")
    docs = task.eval_docs()[:limit]
    return task, docs, [{"doc_id": d.id, "prediction": task.canonical_prediction(d)} for d in docs]


def check_task(task_name: str, data_path=None, options=None, limit=None, output=None) -> dict:
    """Score the references of one task; returns {"task", "total", "passed", "failures", "seconds", "run"}."""
    from evalkit.run.workflows.rescore import ScoreConfig, rescore

    t0 = time.time()
    _, _, rows = canonical_docs(task_name, data_path, options or {}, limit)
    with tempfile.TemporaryDirectory(prefix="evalkit-canonical-") as tmp:
        path = Path(tmp) / f"canonical_{task_name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        run = rescore(ScoreConfig(task=task_name, predictions=str(path), data_path=data_path,
                                  task_options=dict(options or {}), name="canonical", tags=["canonical"]),
                      output_dir=output)
    samples = run.samples[task_name]
    failures = []
    for s in samples:
        for v in s["extra"]["results"]:
            if not v["passed"]:
                failures.append({"doc_id": s["doc_id"], "status": v["status"], "error_type": v["error_type"],
                                 "error_message": v["error_message"], "failed_test": v.get("failed_test", "")})
    entry = run.tasks[task_name]
    return {"task": task_name, "total": len(samples), "passed": len(samples) - len({f["doc_id"] for f in failures}),
            "failures": failures, "seconds": round(time.time() - t0, 2), "run": run.to_dict(),
            "isolation_layer": entry.extra["sandbox"].get("isolation_layer")}


def run(args):
    tasks = registry.expand(args.tasks)
    data = parse_data_paths(args.data)
    options = {}
    for item in args.task_args:
        if ":" not in item:
            raise ValueError(f"--task-args {item!r}: expected TASK:K=V,...")
        t, kv = item.split(":", 1)
        options[t] = parse_model_args(kv, f"--task-args {t}")
    from evalkit.cli.options import check_limit
    check_limit(args.limit, "check-canonical")
    ok = True
    for name in tasks:
        res = check_task(name, data.get(name), options.get(name), args.limit, args.output)
        ok &= res["passed"] == res["total"]
        mark = "OK" if res["passed"] == res["total"] else "FAIL"
        print(f"{mark} {name}: {res['passed']}/{res['total']} reference solutions pass "
              f"({res['seconds']:.1f}s; isolation {res['isolation_layer']})")
        for f in res["failures"]:
            print(f"  {f['doc_id']}: {f['status']} {f['error_type'] or ''} {f['error_message'][:120]!r} "
                  f"{f['failed_test'][:120]}", file=sys.stderr)
        if "path" in res["run"]:
            print(f"  run record: {res['run']['path']}")
    return 0 if ok else 1
