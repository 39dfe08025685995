"""A run record written in lm-eval 0.4.x's layout, so tools built on lm-eval's output read it:
``<DIR>/<model_name_sanitized>/results_<date>.json`` and one ``samples_<task>_<date>.jsonl`` per task.

Results keys are ``METRIC,FILTER`` with ``METRIC_stderr,FILTER``; samples are one line per (doc,
filter) with lm-eval's fields (``doc_id`` = the doc's position, ``doc``, ``target``, ``arguments``,
``resps``, ``filtered_resps``, ``filter``, ``metrics``, the sha256 ``doc_hash``/``prompt_hash``/
``target_hash``, the metric values at the top level). Each line also carries an ``evalkit`` object
(task, doc id, doc hash, prompt hash), which lm-eval readers ignore and ``evalkit import lm-eval``
reads back, so export then import gives the same rows.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from evalkit.lm_eval_io import catalog_export
from evalkit.lm_eval_io.samples import ENTRY_FIGURES, EXTRACTED_KEYS, RENAMES
from evalkit.records import RunRecord, TaskEntry, atomic_write_text

LM_TYPES = {"multiple_choice": "multiple_choice", "generate": "generate_until",
            "loglikelihood_rolling": "loglikelihood_rolling"}
_REVERSE = {v: k for k, v in RENAMES.items()}


def _sha(x) -> str:
    text = x if isinstance(x, str) else json.dumps(x, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def lm_metric(name: str, entry: TaskEntry) -> tuple[str, str]:
    """(lm-eval metric, filter) of an evalkit metric name."""
    names = (entry.extra.get("lm_eval") or {}).get("metric_names") or {}
    if name in names:
        return tuple(names[name])
    if name in _REVERSE:
        return _REVERSE[name]
    metric, _, filt = name.partition(",")
    return metric, filt or "none"


def _task_docs(rec: RunRecord, task: str) -> dict:
    """{doc id: Doc} of a task, when evalkit can read its data (for continuations and docs)."""
    from evalkit.taskapi import registry
    try:
        cls = registry.get_task_class(task)
        entry = rec.tasks[task]
        t = cls(data_path=entry.data_source if entry.data_source != cls.dataset.hub_path else None,
                **(entry.config.get("options") or {}))
        return {"_task": t, **{d.id: d for d in t.eval_docs()}}
    except Exception:  # noqa: BLE001 (no data here: the export goes on without docs)
        return {}


def _resps(row: dict, output_type: str, filtered_value):
    r = row.get("responses") or []
    if output_type == "multiple_choice":
        pairs = [[str(float(x[0])), str(bool(x[1]) if len(x) > 1 else False)] for x in r]
        return [[p] for p in pairs], pairs
    if output_type == "generate":
        texts = [t if isinstance(t, str) else json.dumps(t) for t in r]
        return [texts], [filtered_value if filtered_value is not None else (texts[0] if texts else "")]
    if output_type == "loglikelihood_rolling":
        return [[float(x)] for x in r[:1]], [float(x) for x in r[:1]]
    return [r], r


def sample_lines(rec: RunRecord, task: str, docs: dict) -> list[dict]:
    entry = rec.tasks[task]
    ot = entry.output_type
    ek_task = docs.get("_task")
    lines = []
    for i, row in enumerate(rec.samples(task)):
        lm = (row.get("extra") or {}).get("lm_eval") or {}
        doc = docs.get(row.get("doc_id"))
        conts = lm.get("continuations")
        if conts is None and doc is not None and doc.choices and hasattr(ek_task, "doc_to_choice_text"):
            conts = [ek_task.doc_to_choice_text(doc, k) for k in range(len(doc.choices))]
        prompt = row.get("prompt")
        ctx = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
        n_req = len(row.get("responses") or []) if ot == "multiple_choice" else 1
        conts = list(conts or [None] * n_req)
        args = {f"gen_args_{k}": {"arg_0": ctx, "arg_1": conts[k] if k < len(conts) else None} for k in range(n_req)}
        if "doc" in lm:
            lm_doc = lm["doc"]
        elif doc is not None and not getattr(ek_task, "redact_samples", False):
            lm_doc = {k: v for k, v in dataclasses.asdict(doc).items() if k != "meta"}
        else:
            lm_doc = {"id": row.get("doc_id")}
        by_filter: dict = {}
        for name, value in (row.get("metrics") or {}).items():
            m, filt = lm_metric(name, entry)
            by_filter.setdefault(filt, {})[m] = value
        extracted = row.get("extracted")
        target = row.get("target")
        base_id = row.get("doc_index") if isinstance(row.get("doc_index"), int) else lm.get("doc_id", i)
        for filt, values in (by_filter or {"none": {}}).items():
            fv = extracted.get(filt, extracted.get(EXTRACTED_KEYS.get(filt))) if isinstance(extracted, dict) \
                else extracted
            resps, filtered = _resps(row, ot, fv if ot == "generate" and not isinstance(fv, (dict, list)) else None)
            line = {"doc_id": base_id, "doc": lm_doc, "target": target if isinstance(target, str) else json.dumps(target),
                    "arguments": args, "resps": resps, "filtered_resps": filtered, "filter": filt,
                    "metrics": list(values), "doc_hash": _sha(lm_doc), "prompt_hash": _sha(ctx),
                    "target_hash": _sha(str(target)), **values,
                    "evalkit": {"task": task, "doc_id": row.get("doc_id"), "doc_hash": row.get("doc_hash"),
                                "prompt_hash": row.get("prompt_hash"),
                                **({} if isinstance(prompt, str) else {"prompt": prompt}),
                                **({} if isinstance(target, str) else {"target": target})}}
            lines.append(line)
    return lines


def results_object(rec: RunRecord, date: str) -> dict:
    run = rec.run
    model, cfg = run.model, run.config
    results, hib, configs, versions, nshot, nsamples, hashes = {}, {}, {}, {}, {}, {}, {}
    subtasks = {}
    for task, t in run.tasks.items():
        if catalog_export.is_catalog(t):  # one of lm-eval's own tasks: its names, its leaves
            got, got_hib, subs = catalog_export.results(t)
            results.update(got)
            hib.update(got_hib)
            subtasks.update(subs)
            lm = t.extra["lm_eval"]
            for name in got:
                versions[name] = t.version
                nshot[name] = (lm.get("n-shot") or {}).get(name, t.num_fewshot)
            continue
        r = {"alias": task}
        for name, mv in t.metrics.items():
            m, filt = lm_metric(name, t)
            r[f"{m},{filt}"] = mv.value if math.isfinite(mv.value) else None  # null, never NaN, in lm-eval's JSON
            r[f"{m}_stderr,{filt}"] = mv.stderr if mv.stderr is not None else "N/A"
            hib.setdefault(task, {})[m] = mv.higher_is_better
        results[task] = r
        lm = t.extra.get("lm_eval") or {}
        configs[task] = {**(lm.get("config") or {}), "task": task,
                         "output_type": LM_TYPES.get(t.output_type, t.output_type),
                         "num_fewshot": t.num_fewshot, "description": t.description,
                         **metric_and_filter_lists(t),
                         "metadata": {"version": t.version, "evalkit_prompt_hash": t.prompt_hash,
                                      "evalkit_data_source": t.data_source,
                                      "evalkit_metrics": {k: v.to_dict() for k, v in t.metrics.items()},
                                      **entry_figures(t)}}
        versions[task] = t.version
        nshot[task] = t.num_fewshot
        nsamples[task] = {"original": t.n_docs, "effective": t.n_docs}
        hashes[task] = t.prompt_hash
    lm_cfg = (cfg.get("lm_eval") or {}).get("config") or {}
    gen = cfg.get("gen_overrides") or {}
    config = {**lm_cfg, "model": lm_cfg.get("model") or model.backend,
              "model_args": lm_cfg.get("model_args") or model.args or {}, "limit": cfg.get("limit"),
              "gen_kwargs": lm_cfg.get("gen_kwargs") or {("max_gen_toks" if k == "max_tokens" else k): v
                                                          for k, v in gen.items()},
              "fewshot_seed": cfg.get("seed"), "random_seed": cfg.get("seed")}
    name = str(model.spec or model.name or "model")
    return {"results": results, "group_subtasks": subtasks, "configs": configs, "versions": versions, "n-shot": nshot,
            "higher_is_better": hib, "n-samples": nsamples, "config": config, "git_hash": run.git_sha,
            "date": date, "task_hashes": hashes, "model_source": model.backend, "model_name": name,
            "model_name_sanitized": sanitize(name), "system_instruction": cfg.get("system_prompt"),
            "chat_template": None, "fewshot_as_multiturn": None,
            "total_evaluation_time_seconds": str(run.timings.get("total_s", "")),
            "evalkit": {"run_id": run.run_id, "kind": run.kind, "created_at": run.created_at,
                        "versions": run.versions}}


def metric_and_filter_lists(t: TaskEntry) -> dict:
    """lm-eval's ``metric_list`` and ``filter_list`` of a task config (what its tools read, e.g.
    the Zeno upload script), from the task's metrics."""
    metrics, filters = {}, []
    for name, mv in t.metrics.items():
        m, filt = lm_metric(name, t)
        metrics.setdefault(m, {"metric": m, "aggregation": "mean", "higher_is_better": mv.higher_is_better})
        if filt != "none" and filt not in filters:
            filters.append(filt)
    return {"metric_list": list(metrics.values()),
            **({"filter_list": [{"name": f, "filter": []} for f in filters]} if filters else {})}


def entry_figures(t: TaskEntry) -> dict:
    out = {}
    for key in ENTRY_FIGURES:
        value = getattr(t, key)
        if value:
            out[f"evalkit_{key}"] = json.loads(json.dumps(value, default=lambda o: o.to_dict()))
    return out


def sanitize(name: str) -> str:
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def export_run(rec: RunRecord, out_dir, tasks: Optional[list] = None) -> Path:
    """Write the record in lm-eval's layout under ``out_dir``; returns the results file."""
    date = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S.%f")  # lm-eval's file-name date
    res = results_object(rec, date)
    folder = Path(out_dir) / res["model_name_sanitized"]
    written = []
    for task in tasks or list(rec.tasks):
        if catalog_export.is_catalog(rec.tasks[task]):
            per_leaf = catalog_export.sample_lines(rec, task)
            written += [task, *catalog_export.results(rec.tasks[task])[0]]
        else:
            per_leaf = {task: sample_lines(rec, task, _task_docs(rec, task))}
            written.append(task)
        for name, lines in per_leaf.items():
            atomic_write_text(folder / f"samples_{name}_{date}.jsonl",
                              "".join(json.dumps(x, ensure_ascii=False, default=str) + "\n" for x in lines))
    if tasks:
        res["results"] = {t: v for t, v in res["results"].items() if t in written}
    path = folder / f"results_{date}.json"
    atomic_write_text(path, json.dumps(res, indent=2, ensure_ascii=False, default=str))
    return path
