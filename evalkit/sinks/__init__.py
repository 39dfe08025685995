"""Result sinks: send a finished run record where teams already look (MLflow, W&B, the HF hub).

Each sink is its own module with ``log(payload, ...)``; ``payload.build(run_dir)`` reads the record
from disk, so ``evalkit run --log-to ...`` (after the record is written) and ``evalkit log RUN_DIR
--to ...`` (saved records) log exactly the same thing. Secrets never reach a sink: the record is
scrubbed again and the sinks pass no environment, code or git metadata.
"""
from __future__ import annotations

import argparse
import sys

from evalkit.util.extras import MissingExtra
from evalkit.sinks import payload as _payload

SINKS = ("mlflow", "wandb", "hub")


class SinkError(OSError):
    """A sink could not take the record (server unreachable, refused, bad credentials): exit 2."""


def add_sink_args(p: argparse.ArgumentParser, flag: str = "--log-to") -> None:
    g = p.add_argument_group("result sinks")
    if flag == "--log-to":
        g.add_argument("--log-to", action="append", default=[], choices=("mlflow", "wandb"), metavar="SINK",
                       help="also log the run record to mlflow or wandb (repeatable)")
        g.add_argument("--push-to-hub", default=None, metavar="OWNER/NAME",
                       help="also push the run record to this Hugging Face dataset repo")
    g.add_argument("--mlflow-uri", default=None,
                   help="MLflow tracking URI or local folder (default MLFLOW_TRACKING_URI)")
    g.add_argument("--mlflow-experiment", default="evalkit", help="MLflow experiment name (default evalkit)")
    g.add_argument("--wandb-project", default=None, help="W&B project (default WANDB_PROJECT or evalkit)")
    g.add_argument("--wandb-dir", default=None, help="folder for W&B run files")
    g.add_argument("--wandb-offline", action="store_true", help="W&B offline mode (sync later with `wandb sync`)")
    g.add_argument("--hub-public", action="store_true", help="create the hub repo public (default private)")
    g.add_argument("--no-samples", action="store_true", help="log metrics and config only, no samples table")
    g.add_argument("--dry-run", action="store_true", help="show what would be logged; contact no server")


def log_run(path, sink: str, args, repo=None) -> dict:
    """Log one run folder to one sink with the options in ``args`` (see ``add_sink_args``)."""
    data = _payload.build(path, samples=not getattr(args, "no_samples", False))
    try:
        return _send(data, sink, args, repo)
    except (ValueError, MissingExtra, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - a client library's own error: one line, exit 2
        raise SinkError(f"{sink}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None


def _send(data, sink: str, args, repo):
    if sink == "mlflow":
        from evalkit.sinks import mlflow_sink
        return mlflow_sink.log(data, args.mlflow_uri, args.mlflow_experiment, dry_run=args.dry_run)
    if sink == "wandb":
        from evalkit.sinks import wandb_sink
        return wandb_sink.log(data, args.wandb_project, args.wandb_dir, args.wandb_offline, dry_run=args.dry_run)
    if sink == "hub":
        from evalkit.sinks import hub_sink
        return hub_sink.log(data, repo, private=not args.hub_public, dry_run=args.dry_run)
    raise ValueError(f"unknown sink {sink!r}; known: {', '.join(SINKS)}")


def describe(result: dict) -> str:
    sink = result.get("sink")
    if result.get("dry_run"):
        detail = ", ".join(f"{k}={v}" for k, v in result.items() if k not in ("sink", "dry_run"))
        return f"{sink} (dry run, nothing sent): {detail}"
    where = {k: result[k] for k in ("uri", "project", "repo", "run_id", "url", "dir", "mode") if result.get(k)}
    return f"{sink}: logged " + ", ".join(f"{k}={v}" for k, v in where.items())


def after_run(args, paths) -> None:
    """``evalkit run --log-to/--push-to-hub``: log every record just written."""
    targets = [(s, None) for s in getattr(args, "log_to", None) or []]
    if getattr(args, "push_to_hub", None):
        targets.append(("hub", args.push_to_hub))
    for path in paths:
        for sink, repo in targets:
            print(describe(log_run(path, sink, args, repo)), file=sys.stderr)
