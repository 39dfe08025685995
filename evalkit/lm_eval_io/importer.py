"""lm-eval 0.4.x output -> evalkit run records (kind ``import``).

Each lm-eval task becomes a task of the record with its metrics (value and stderr as lm-eval
reported them; the interval from the per-sample values, as evalkit computes it) and one sample row
per doc: prompt and prompt hash, responses, per-sample metric values.

Pairing with evalkit runs: when the lm-eval task is an evalkit task (same name, or mapped with
``task_map``) and evalkit can read that task's data (``data_paths``, else the task's default
source), each lm-eval doc is the evalkit doc at the same position of the evaluation split (lm-eval's
``doc_id``; checked: the doc's question must appear in lm-eval's prompt, and the gold choice must
agree). Such rows carry evalkit's doc id and doc hash, so ``evalkit compare`` pairs them with an
evalkit run of the task by doc, and the prompt hashes tell whether the prompts were the same.
Otherwise rows keep lm-eval's ``doc_id`` and a hash of lm-eval's doc (they pair with other imports).
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from pathlib import Path
from typing import Optional

from evalkit.importing.task_import import Pairing, contradiction, task_entry
from evalkit.taskapi import registry
from evalkit.util.errors import EvalkitError
from evalkit.taskapi.items import RunContext, content_hash
from evalkit.lm_eval_io import samples as S
from evalkit.lm_eval_io.files import LmEvalOutput
from evalkit.records import ModelInfo, Run, new_run
from evalkit.scoring.stats import mean_metric

log = logging.getLogger(__name__)


def _matches(doc, line: dict, prompt) -> bool:
    text = "\n".join(prompt) if isinstance(prompt, list) else str(prompt)
    if doc.query and doc.query.strip() not in text:
        return False
    target = line.get("target")
    if doc.gold is not None and isinstance(target, (int, str)) and str(target).strip().lstrip("-").isdigit():
        return int(target) == doc.gold
    return True


def _group(lines: list[dict]) -> "OrderedDict[str, list[dict]]":
    by_doc: OrderedDict = OrderedDict()
    for ln in lines:
        by_doc.setdefault(str(ln["doc_id"]), []).append(ln)
    return by_doc


def _metric_entry(values: list, lm_value, lm_stderr, higher_is_better: bool) -> dict:
    if values:
        d = mean_metric(values, higher_is_better).to_dict()
    else:  # a corpus metric (BLEU, ...): lm-eval's per-sample values are not numbers
        d = {"value": None, "stderr": None, "ci_low": None, "ci_high": None, "n": 0, "kind": "corpus",
             "higher_is_better": higher_is_better}
    if S.number(lm_value) is not None:
        d["value"] = float(lm_value)
    d["stderr"] = S.number(lm_stderr) if lm_stderr is not None else d.get("stderr")
    return d


#: lm-eval metrics whose default aggregation is the mean of the per-sample values
MEAN_METRICS = {"acc", "acc_norm", "acc_mutual_info", "exact_match", "em", "mc1", "mc2", "bleu_acc", "rouge1_acc",
                "prompt_level_strict_acc", "prompt_level_loose_acc", "inst_level_strict_acc", "inst_level_loose_acc"}


def _aggregation(cfg: dict, metric: str) -> Optional[str]:
    for m in cfg.get("metric_list") or []:
        if isinstance(m, dict) and m.get("metric") == metric:
            agg = m.get("aggregation")
            return agg if isinstance(agg, str) else None
    return "mean" if metric in MEAN_METRICS else None


def _paired_id(doc_id: str, first: dict, prompt, pairing: Pairing) -> Optional[tuple]:
    """(evalkit doc id, doc hash) of an lm-eval doc: the evalkit doc at its position, when that is it."""
    docs = pairing.docs
    k = int(doc_id) if doc_id.isdigit() else -1
    if 0 <= k < len(docs) and _matches(docs[k], first, prompt):
        pairing.paired(docs[k], prompt)
        return docs[k].id, docs[k].hash()
    pairing.missed += 1
    return None


def _row(doc_id: str, group: list[dict], lm_type: str, pairing: Pairing, names: dict) -> dict:
    """The evalkit row of one lm-eval doc (its lines, one per filter); ``names``: metric name -> [lm-eval's
    metric, filter]."""
    first = group[0]
    prompt = S.prompt_of(first)
    responses = S.responses_of(first, lm_type)
    metrics = {}
    for ln in group:
        metrics.update(S.metric_values(ln))
        for m in ln.get("metrics") or []:
            names[S.metric_name(m, ln.get("filter", "none"))] = [m, ln.get("filter", "none")]
    own = first.get("evalkit") if isinstance(first.get("evalkit"), dict) else None
    row_id, row_hash = doc_id, content_hash(first.get("doc"))
    if own:  # written by `evalkit export --format lm-eval`: evalkit's own identities
        row_id, row_hash = own.get("doc_id", doc_id), own.get("doc_hash", row_hash)
        prompt = own.get("prompt", prompt)
    elif pairing.task is not None:
        row_id, row_hash = _paired_id(doc_id, first, prompt, pairing) or (row_id, row_hash)
    target = own["target"] if own and "target" in own else first.get("target")
    if lm_type in ("multiple_choice", "loglikelihood") and isinstance(target, str) and target.strip().isdigit():
        target = int(target)  # lm-eval writes the gold index as text
    return {"doc_id": row_id, "doc_hash": row_hash, "prompt": prompt, "responses": responses,
            "target": target, "metrics": metrics,
            "extracted": S.extracted_of(group, lm_type, responses),
            "extra": {"lm_eval": {"doc_id": first["doc_id"], "doc": first.get("doc"),
                                  "continuations": [a[1] if len(a) > 1 else None
                                                    for a in S.arguments(first)]}},
            "prompt_hash": (own or {}).get("prompt_hash") or content_hash(prompt),
            "doc_index": int(doc_id) if doc_id.isdigit() else None}


def _metrics(out: LmEvalOutput, lm_task: str, per_metric: dict, names: dict, allow_mismatch: bool,
             notes: list) -> dict:
    """lm-eval's figures of the task (checked against the mean of their samples), then the per-sample
    metrics lm-eval did not aggregate."""
    res = out.results
    cfg = (res.get("configs") or {}).get(lm_task, {})
    hib_all = (res.get("higher_is_better") or {}).get(lm_task, {})
    metrics = {}
    for key, value in (res["results"].get(lm_task) or {}).items():
        if "," not in key and key in ("alias", "name", "sample_len", "samples"):
            continue
        m, filt = S.split_results_key(key)
        if m.endswith("_stderr") or S.number(value) is None and not isinstance(value, (int, float)):
            continue
        name = S.metric_name(m, filt)
        names.setdefault(name, [m, filt])
        vals = per_metric.get(name, [])
        if vals and S.number(value) is not None and _aggregation(cfg, m) == "mean":
            mean = sum(vals) / len(vals)
            if abs(mean - float(value)) > 1e-9 + 1e-6 * abs(mean):
                what = (f"{out.results_path}: {lm_task} {key} = {float(value):g}, but the mean of its {len(vals)} "
                        f"samples is {mean:g}")
                contradiction(what, "files from different runs? Pass --allow-mismatch to keep the samples' mean",
                              "the samples' mean is kept", allow_mismatch, notes)
                value = mean
        stderr = res["results"][lm_task].get(f"{m}_stderr,{filt}" if "," in key else f"{m}_stderr")
        metrics[name] = _metric_entry(per_metric.get(name, []), value, stderr, bool(hib_all.get(m, True)))
    for name, vals in per_metric.items():  # per-sample metrics lm-eval did not aggregate
        metrics.setdefault(name, _metric_entry(vals, None, None, bool(hib_all.get(names.get(name, [name])[0], True))))
    return metrics


def _lm_info(out: LmEvalOutput, lm_task: str, names: dict) -> dict:
    res = out.results
    cfg = (res.get("configs") or {}).get(lm_task, {})
    return {"task": lm_task, "version": (res.get("versions") or {}).get(lm_task),
            "task_hash": (res.get("task_hashes") or {}).get(lm_task), "output_type": cfg.get("output_type", ""),
            "metric_names": names, "n_samples": (res.get("n-samples") or {}).get(lm_task),
            "samples_file": str(out.samples_paths.get(lm_task)) if lm_task in out.samples_paths else None,
            "config": cfg}


def import_task(out: LmEvalOutput, lm_task: str, ek_task: Optional[str], data_path: Optional[str],
                allow_mismatch: bool = False):
    """(record task name, TaskEntry, sample rows, notes) of one lm-eval task. Figures that contradict
    their samples, and docs that are not the mapped evalkit task's, are errors (``allow_mismatch``:
    notes, and such a task keeps lm-eval's name)."""
    res = out.results
    cfg = (res.get("configs") or {}).get(lm_task, {})
    lm_type = cfg.get("output_type", "")
    n_shot = (res.get("n-shot") or {}).get(lm_task, cfg.get("num_fewshot"))
    lines = out.samples(lm_task)
    notes = [] if lines else [f"{lm_task}: no samples file (run lm-eval with --log_samples); metrics only"]
    exported = bool(lines) and isinstance(lines[0].get("evalkit"), dict)  # our own export: ids are in it
    meta = cfg.get("metadata") if isinstance(cfg.get("metadata"), dict) else {}
    ctx = RunContext(seed=int((res.get("config") or {}).get("fewshot_seed") or 1234),
                     num_fewshot=n_shot if isinstance(n_shot, int) else None)
    pairing = Pairing.open(ek_task, data_path or (meta.get("evalkit_data_source") if exported else None),
                           exported, ctx)
    if pairing.unreadable:
        notes.append(pairing.unreadable_note(lm_task, ek_task, "lm-eval's doc ids"))
    rows, per_metric, names = [], {}, {}
    for doc_id, group in _group(lines).items():
        rows.append(_row(doc_id, group, lm_type, pairing, names))
        for k, v in rows[-1]["metrics"].items():
            per_metric.setdefault(k, []).append(v)
    what = (f"{out.samples_paths.get(lm_task, lm_task)}: {pairing.missed} of {len(rows)} docs are not evalkit "
            f"{ek_task}'s doc at the same position (another task or other data?)")
    mismatched = pairing.check(what, f"lm-eval's {lm_task}", ", those docs keep lm-eval's doc ids", allow_mismatch,
                               notes)
    metrics = _metrics(out, lm_task, per_metric, names, allow_mismatch, notes)
    record_name = ek_task if ek_task and (pairing.task is not None or exported) and not mismatched else lm_task
    version = str(pairing.version(record_name, (res.get("versions") or {}).get(lm_task, "1")))
    entry = task_entry(
        pairing, record_name, rows, metrics, meta.get("evalkit_metrics"), "lm_eval", _lm_info(out, lm_task, names),
        version=version, description=f"lm-eval task {lm_task} (imported)",
        output_type=S.OUTPUT_TYPES.get(lm_type, lm_type),
        config={"name": record_name, "version": version, "num_fewshot": n_shot, "options": {}},
        num_fewshot=n_shot if isinstance(n_shot, int) else None, n_docs=len(rows),
        data_source=pairing.data_source() or cfg.get("dataset_path"),
        **({k: meta[f"evalkit_{k}"] for k in S.ENTRY_FIGURES if f"evalkit_{k}" in meta} if exported else {}))
    return record_name, entry, rows, notes


def model_info(res: dict) -> ModelInfo:
    cfg = res.get("config") or {}
    args = cfg.get("model_args") or {}
    if isinstance(args, str):  # lm-eval < 0.4.5 kept the command line string
        args = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    pretrained = str(args.get("pretrained") or args.get("model") or res.get("model_name") or "model")
    identity = {"harness": "lm-eval", "lm_eval_version": res.get("lm_eval_version"), "model": cfg.get("model"),
                "model_args": args, "model_sha": cfg.get("model_sha"), "model_dtype": cfg.get("model_dtype"),
                "model_num_parameters": cfg.get("model_num_parameters")}
    return ModelInfo(spec=f"lm-eval:{cfg.get('model', '')}:{pretrained}", name=Path(pretrained.rstrip("/")).name,
                     backend=f"lm-eval {cfg.get('model', '')}".strip(), args=args, identity=identity,
                     identity_hash=content_hash(identity))


def _common(values):
    vals = {v for v in values if v is not None}
    return vals.pop() if len(vals) == 1 else None


def import_output(out: LmEvalOutput, task_map: Optional[dict] = None, data_paths: Optional[dict] = None,
                  label: Optional[str] = None, allow_mismatch: bool = False) -> tuple[Run, dict, list]:
    """(run, {task: rows}, notes) of one lm-eval run."""
    from evalkit.lm_eval_io.gen_kwargs import to_evalkit_gen
    task_map, data_paths = dict(task_map or {}), dict(data_paths or {})
    res = out.results
    groups = set(res.get("group_subtasks") or {}) | set(res.get("groups") or {})
    known = registry.all_tasks()
    entries, rows, notes, lm_names = {}, {}, [], []
    for lm_task in res["results"]:
        if lm_task in groups and lm_task not in out.samples_paths:
            notes.append(f"{lm_task}: a group (aggregate of its subtasks); its subtasks are imported")
            continue
        ek = task_map.get(lm_task) or (lm_task if lm_task in known else None)
        name, entry, task_rows, task_notes = import_task(out, lm_task, ek, data_paths.get(ek) if ek else None,
                                                         allow_mismatch)
        if name in entries:
            raise EvalkitError(f"{out.results_path}: two lm-eval tasks map to evalkit task {name}")
        entries[name], rows[name] = entry, task_rows
        notes += task_notes
        lm_names.append(lm_task)
    if not entries:
        raise EvalkitError(f"{out.results_path}: no task results to import")
    unused = sorted(set(task_map) - set(res["results"]))
    if unused:
        raise EvalkitError(f"--task-map names lm-eval task(s) not in {out.results_path}: {', '.join(unused)}")
    cfg = res.get("config") or {}
    limit = cfg.get("limit")
    n_docs = _common(e.n_docs for e in entries.values())
    gen, gen_notes = to_evalkit_gen(cfg.get("gen_kwargs") or {})
    notes += [f"gen_kwargs: {n}" for n in gen_notes]
    config = {"tasks": list(entries), "limit": n_docs if limit is not None else None,
              "seed": int(cfg.get("fewshot_seed") or 1234),
              "num_fewshot": _common(e.num_fewshot for e in entries.values()),
              "apply_chat_template": bool(res.get("chat_template")), "system_prompt": res.get("system_instruction"),
              "gen_overrides": gen, "shard": None, "tags": ["lm-eval"],
              "data_paths": {t: data_paths[t] for t in entries if t in data_paths}, "task_options": {},
              "metrics": [], "lm_eval": {"results_file": str(out.results_path), "tasks": lm_names,
                                         "config": cfg, "date": res.get("date"),
                                         "fewshot_as_multiturn": res.get("fewshot_as_multiturn")}}
    run = new_run("import", model_info(res), config, entries, label=label,
                  timings={"total_s": S.number(_float(res.get("total_evaluation_time_seconds"))) or 0.0})
    return run, rows, notes


def _float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
