"""A run record written as Inspect eval logs (one log per task), with ``inspect_ai.log.write_eval_log``,
so ``inspect view`` shows evalkit runs: samples (input, target, the model's messages and answer),
scores, token usage, and per metric the value and stderr.

Each sample (one row; repeats of a doc are its epochs) keeps scores as Inspect wrote them when the
row came from an Inspect log (letters stay letters), else one score per evalkit metric. evalkit's own
identities (doc id and hash, prompt and its hash, target, extracted answer) ride in each sample's
``metadata["evalkit"]``, the task entry, model and run config in the log's ``eval.metadata["evalkit"]``:
Inspect ignores them and ``evalkit import inspect`` reads them back, so export then import gives the
same rows.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Optional

from evalkit.inspect_io.files import inspect_log_api
from evalkit.inspect_io.importer import META_KEY
from evalkit.inspect_io.samples import KEY_SEP
from evalkit.records import RunRecord, scrub
from evalkit.version import __version__


def _text(x) -> str:
    return x if isinstance(x, str) else json.dumps(x, ensure_ascii=False, default=str)


def _messages(prompt):
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) and m.get("role") in kinds for m in prompt):
        return [kinds[m["role"]](content=_text(m.get("content", ""))) for m in prompt]
    return [ChatMessageUser(content=_text(prompt))]


def _output(model: str, responses: list):
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput
    texts = [r for r in responses if isinstance(r, str)] or [_text(responses[0])] if responses else [""]
    return ModelOutput(model=model, choices=[ChatCompletionChoice(message=ChatMessageAssistant(
        content=t, model=model, source="generate"), stop_reason="stop") for t in texts])


def _scores(row: dict) -> dict:
    from inspect_ai.scorer import Score
    raw = ((row.get("extra") or {}).get("inspect") or {}).get("scores")
    if isinstance(raw, dict) and raw:  # an imported Inspect sample: its scores as Inspect wrote them
        return {k: Score(**{f: v for f, v in d.items() if f in ("value", "answer", "explanation", "metadata")})
                for k, d in raw.items() if isinstance(d, dict) and "value" in d}
    ans = row.get("extracted")
    return {m: Score(value=float(v), answer=None if ans is None else _text(ans))
            for m, v in (row.get("metrics") or {}).items() if isinstance(v, (int, float)) and math.isfinite(v)}


def _usage(info: dict) -> dict:
    from inspect_ai.model import ModelUsage
    return {m: ModelUsage(**u) for m, u in (info.get("model_usage") or {}).items() if isinstance(u, dict)}


def _sample(row: dict, epoch: int, model: str):
    from inspect_ai.log import EvalSample
    info = (row.get("extra") or {}).get("inspect") or {}
    own = {k: row[k] for k in ("doc_id", "doc_hash", "prompt", "prompt_hash", "target", "extracted", "responses",
                               "doc_index") if k in row}
    own["extra"] = {k: v for k, v in (row.get("extra") or {}).items() if k != "inspect"}
    own["inspect_extra"] = bool(info)  # a row of an evalkit run gets no Inspect details back
    if all(isinstance(r, str) for r in row.get("responses") or []):
        own.pop("responses", None)  # the output holds them
    target = row.get("target")
    target = target if isinstance(target, str) or (isinstance(target, list) and all(
        isinstance(t, str) for t in target)) else _text(target if target is not None else "")
    msgs = _messages(row.get("prompt"))
    output = _output(model, row.get("responses") or [])
    sid = info.get("id", row["doc_id"])
    return EvalSample(
        id=sid if isinstance(sid, (int, str)) else str(sid), epoch=int(info.get("epoch") or epoch),
        input=row["prompt"] if isinstance(row.get("prompt"), str) else msgs, target=target,
        choices=info.get("choices"), messages=[*msgs, output.choices[0].message], output=output,
        scores=_scores(row), metadata={**(info.get("metadata") or {}), META_KEY: own},
        model_usage=_usage(info), total_time=info.get("total_time"), working_time=info.get("working_time"))


def _results(entry, n_rows: int, rows: list):
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore
    inspect_name = {v: k for k, v in ((entry.extra.get("inspect") or {}).get("metric_map") or {}).items()}
    raw = [((r.get("extra") or {}).get("inspect") or {}).get("scores") or {} for r in rows]
    dict_scorers = {k for scores in raw for k, d in scores.items()
                    if isinstance(d, dict) and isinstance(d.get("value"), dict)}
    scores = []
    for name, mv in entry.metrics.items():
        figs = {k: v for k, v in (mv.get("inspect") or {}).items() if k != "reducer" and isinstance(v, (int, float))}
        if not figs:
            figs = {"mean": mv["value"], "stderr": mv["stderr"]}
        scorer, _, key = inspect_name.get(name, name).partition(KEY_SEP)
        scorer, key = (scorer, key) if key and scorer in dict_scorers else ((inspect_name.get(name, name),) * 2)
        metrics = {k: EvalMetric(name=k, value=v if v is not None else math.nan) for k, v in figs.items()}
        scores.append(EvalScore(name=key, scorer=scorer, reducer=(mv.get("inspect") or {}).get("reducer"),
                                scored_samples=mv.n, metrics=metrics))
    return EvalResults(total_samples=n_rows, completed_samples=n_rows, scores=scores)


def to_log(rec: RunRecord, task: str):
    """The ``EvalLog`` of one task of a record."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats
    from inspect_ai.model import ModelUsage
    run, entry = rec.run, rec.tasks[task]
    rows = list(rec.samples(task))
    info = entry.extra.get("inspect") or {}
    ident = run.model.identity or {}
    model = ident.get("model") if ident.get("harness") == "inspect" and ident.get("model") else \
        f"evalkit/{run.model.name or 'model'}"
    samples, seen = [], {}
    for row in rows:
        seen[row["doc_id"]] = seen.get(row["doc_id"], 0) + 1
        samples.append(_sample(row, seen[row["doc_id"]], model))
    ids = list(dict.fromkeys(s.id for s in samples))
    own = {"task": {"name": task, "version": entry.version, "description": entry.description,
                    "output_type": entry.output_type, "config": entry.config, "num_fewshot": entry.num_fewshot,
                    "data_source": entry.data_source, "metrics": {k: v.to_dict() for k, v in entry.metrics.items()},
                    "metric_map": info.get("metric_map") or {}},
           "model": run.model.to_dict(), "run_config": run.config, "run_id": run.run_id, "kind": run.kind}
    spec = EvalSpec(
        created=run.created_at, task=info.get("task") or task, task_version=entry.version,
        task_args=info.get("task_args") or {}, dataset=EvalDataset(
            name=(info.get("dataset") or {}).get("name") or task, location=entry.data_source, samples=len(ids),
            sample_ids=ids), model=model, model_args=scrub(run.model.args or {}),
        config=EvalConfig(epochs=max(seen.values(), default=1), limit=run.config.get("limit")),
        packages={"evalkit": __version__}, tags=[t for t in run.config.get("tags") or [] if isinstance(t, str)],
        metadata=scrub({META_KEY: own}))
    usage = {m: ModelUsage(**u) for m, u in (info.get("model_usage") or {}).items() if isinstance(u, dict)}
    return EvalLog(version=2, status="success", eval=spec, results=_results(entry, len(rows), rows),
                   stats=EvalStats(started_at=run.created_at, completed_at=run.created_at, model_usage=usage),
                   samples=samples)


def _file_name(rec: RunRecord, task: str, fmt: str) -> str:
    stamp = re.sub(r"[:.+]", "-", rec.run.created_at or "1970-01-01T00-00-00")
    safe = re.sub(r"[^A-Za-z0-9]+", "-", task).strip("-")
    rid = re.sub(r"[^A-Za-z0-9]+", "", rec.run.run_id)[-22:]
    return f"{stamp}_{safe}_{rid}.{fmt}"  # Inspect's own pattern: inspect view lists it


def export_run(rec: RunRecord, out_dir, tasks: Optional[list] = None, log_format: str = "eval") -> list[Path]:
    """Write one Inspect log per task under ``out_dir``; returns their paths."""
    api = inspect_log_api()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for task in tasks or list(rec.tasks):
        path = out / _file_name(rec, task, log_format)
        api.write_eval_log(to_log(rec, task), str(path), format=log_format)
        written.append(path)
    return written
