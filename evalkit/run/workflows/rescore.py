"""Scoring saved outputs without the model (``evalkit score``).

Users compare an external system this way, and a metric fix reaches old runs without rerunning the
model. Predictions come as:

- JSONL, one object per line: a doc id (``doc_id`` or ``id``) and ``prediction`` (a string) or
  ``predictions`` (a list: several outputs per doc, e.g. for pass@k); or human-eval's samples format,
  ``task_id`` and ``completion``, one line per sample (several lines per problem for pass@k);
- a previous run: its folder, its run.json or its ``samples_<task>.jsonl``. The saved responses
  are scored again; the model block, seed and prompt settings (few-shot, chat template, system
  prompt), the task options and a local data path carry over unless given again; a
  ``--thinking-budgets`` run is scored again at every budget from its rows' per-budget responses;
- anything else: plain text, one prediction per line, in doc order (how MT systems ship outputs).

Each doc's predictions become responses through the task's ``responses_from_predictions``; then
the run's score and post-process phases (``evalkit.run.score.score_docs``: trace split and the
task's ``score_all``; ``evalkit.run.post_process.finish_task``: appended metrics, aggregation,
generation figures) run exactly as after a model run and ``records.write_run`` writes a normal run record
(kind ``rescore``, backend ``predictions``). Tasks whose data is
just references (the generic ``translation`` and ``summarization``) take ``references`` files, one
reference per line, one file per reference set, through their ``docs_from_references``.
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from evalkit.taskapi import registry
from evalkit.taskapi.data import DataError, decoded_lines
from evalkit.records import ModelInfo, Run, RunRecord, load_run, new_run, write_run
from evalkit.run.budget_forcing import BudgetForcing, annotate_samples, attach_entry
from evalkit.run.config import RunConfig
from evalkit.run.post_process import finish_task
from evalkit.run.score import score_docs
from evalkit.records.provenance import file_sha256 as _sha256

ID_KEYS = ("doc_id", "id", "task_id")


@dataclass
class Predictions:
    """Saved outputs: keyed by doc id, or in doc order (plain text)."""

    path: str
    kind: str                                   # "jsonl", "samples" or "text"
    by_id: Optional[dict] = None                # doc id -> list of prediction strings
    in_order: Optional[list] = None             # list of lists, aligned with the task's docs
    run: Optional[RunRecord] = None             # the run the samples came from, if any
    doc_hashes: dict = field(default_factory=dict)
    sha256: str = ""
    budgets: dict = field(default_factory=dict)  # doc id -> a --thinking-budgets row's per-budget results


def read_lines(path: Path) -> list[str]:
    """One item per line, line endings removed; a final newline adds no empty item."""
    return [line.rstrip("\n").rstrip("\r") for line in decoded_lines(path)]


def _as_texts(value, where: str) -> list[str]:
    """A prediction value: a string, a list of strings, or saved responses ([text, finish] pairs)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise DataError(f"{where}: prediction should be a string or a list of strings, got {type(value).__name__}")
    out = []
    for x in items:
        if isinstance(x, list) and x and isinstance(x[0], str):  # [text, finish_reason]
            x = x[0]
        if not isinstance(x, str):
            raise DataError(f"{where}: predictions must be strings; got {type(x).__name__} "
                            "(samples of a loglikelihood task cannot be re-scored as generations)")
        out.append(x)
    return out


def _read_jsonl(path: Path) -> Predictions:
    by_id, hashes, budgets, kind = {}, {}, {}, "jsonl"
    with contextlib.nullcontext(decoded_lines(path)) as f:  # text lines; a bad byte names its line
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{where}: invalid JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{where}: expected a JSON object with a doc id and a prediction")
            key = next((k for k in ID_KEYS if k in obj), None)
            if key is None:
                raise DataError(f"{where}: no doc id (field 'doc_id', 'id' or 'task_id')")
            if "doc_hash" in obj and "responses" in obj:
                kind, value = "samples", obj["responses"]
                hashes[str(obj[key])] = obj["doc_hash"]
                if isinstance((obj.get("extra") or {}).get("thinking_budgets"), dict):
                    budgets[str(obj[key])] = obj["extra"]["thinking_budgets"]
            elif "prediction" in obj or "predictions" in obj:
                value = obj.get("predictions", obj.get("prediction"))
            elif "completion" in obj:  # human-eval's samples: one line per sample, lines add up
                by_id.setdefault(str(obj[key]), []).extend(_as_texts(obj["completion"], where))
                continue
            else:
                raise DataError(f"{where}: no 'prediction' (or 'predictions', or human-eval's 'completion') field")
            doc_id = str(obj[key])
            if doc_id in by_id:
                raise DataError(f"{where}: doc id {doc_id!r} appears twice")
            by_id[doc_id] = _as_texts(value, where)
    return Predictions(str(path), kind, by_id=by_id, doc_hashes=hashes, budgets=budgets)


def read_predictions(path, task: str) -> Predictions:
    """Read saved outputs for ``task`` from a predictions file or a previous run (see module doc)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such predictions file or run folder")
    run = None
    if p.is_dir() or p.name == "run.json":
        run = load_run(p)
        if task not in run.tasks:
            raise ValueError(f"{run.path}: run has no task {task!r} (has {', '.join(run.tasks) or 'none'})")
        p = run.samples_path(task)
    elif p.name.startswith("samples_") and (p.parent / "run.json").is_file():
        run = load_run(p.parent)
    if p.suffix.lower() in (".jsonl", ".ndjson"):
        preds = _read_jsonl(p)
    else:
        preds = Predictions(str(p), "text", in_order=[[line] for line in read_lines(p)])
    preds.run, preds.sha256 = run, _sha256(p)
    return preds


def read_reference_files(paths: Sequence) -> list[list[str]]:
    """Several files of one reference per line -> per doc, its list of references."""
    columns = [read_lines(Path(p)) for p in paths]
    lengths = {len(c) for c in columns}
    if len(lengths) != 1:
        raise DataError("reference files differ in length: " + ", ".join(f"{p}: {len(c)} lines"
                                                                         for p, c in zip(paths, columns)))
    return [list(refs) for refs in zip(*columns)]


def align(docs: list, preds: Predictions) -> list[tuple]:
    """(doc, predictions) pairs. Id-keyed predictions may cover a subset of the docs (e.g. a run with
    --limit) but must all name a doc; line-ordered ones must match the docs one to one."""
    if preds.in_order is not None:
        if len(preds.in_order) != len(docs):
            raise DataError(f"{preds.path}: {len(preds.in_order)} predictions (lines) but the task has "
                            f"{len(docs)} docs; a plain text file must hold one prediction per doc, in order")
        return list(zip(docs, preds.in_order))
    known = {d.id for d in docs}
    unknown = [i for i in preds.by_id if i not in known]
    if unknown:
        raise DataError(f"{preds.path}: {len(unknown)} prediction(s) name no doc of the task, e.g. "
                        f"{', '.join(repr(u) for u in unknown[:5])}")
    return [(d, preds.by_id[d.id]) for d in docs if d.id in preds.by_id]


@dataclass
class ScoreConfig:
    task: str
    predictions: str
    references: list = field(default_factory=list)
    data_path: Optional[str] = None
    task_options: dict = field(default_factory=dict)
    seed: Optional[int] = None
    limit: Optional[int] = None
    name: Optional[str] = None
    tags: list = field(default_factory=list)
    metrics: list = field(default_factory=list)  # appended ``evaluate:`` metrics
    series: Optional[dict] = None  # a training run's checkpoint (``validation.check_series``)


REFS_PREFIX = "references:"


def _carry_over(cfg: ScoreConfig, preds: Predictions) -> tuple[RunConfig, dict, Optional[str], list, Optional[ModelInfo]]:
    """Settings of the run the predictions came from:
    (run config, task options, local data path, reference files, model)."""
    if preds.run is None:
        return RunConfig(tasks=[cfg.task]), {}, None, [], None
    entry = preds.run.tasks.get(cfg.task)
    options = dict(entry.config.get("options") or {}) if entry else {}
    old = RunConfig.from_record({**preds.run.run.config, "task_options": {cfg.task: options}})
    src = (entry.data_source if entry else None) or ""
    refs = json.loads(src[len(REFS_PREFIX):]) if src.startswith(REFS_PREFIX) else []
    data = src if src and not refs and Path(src).exists() else None
    return old, old.task_options.get(cfg.task, {}), data, refs, preds.run.run.model


def budget_curve(task, pairs: list, preds: Predictions, config: RunConfig, samples: list):
    """A ``--thinking-budgets`` run scored again at every budget, from each row's per-budget responses:
    ``(by_budget, keys, info, BudgetForcing)`` for ``attach_entry`` (``samples``, the largest budget's,
    get their per-budget results as in a model run; ``config`` records the budgets), a note when the
    rows lack what that needs, or None for any other run."""
    entry = preds.run.tasks.get(config.tasks[0]) if preds.run is not None else None
    saved = (entry.extra or {}).get("thinking_budgets") if entry is not None else None
    if not saved or task.output_type != "generate":
        return None
    f = BudgetForcing.parse(saved["budgets"], saved.get("answer_tokens"))
    rows = [preds.budgets.get(d.id, {}) for d, _ in pairs]
    if not all(isinstance(r.get(str(b)), dict) and "responses" in r[str(b)] for r in rows for b in f.budgets):
        return ("not rescored: the rows have no per-budget responses (a record written before evalkit kept "
                "them); the largest budget's responses are scored")
    by_budget, info = {}, {b: {} for b in f.budgets}
    for b in f.budgets:
        per_doc = []
        for (doc, _), row in zip(pairs, rows):
            per = row[str(b)]
            per_doc.append(task.responses_from_predictions(doc, _as_texts(per["responses"], f"{preds.path}: {doc.id}")))
            info[b][doc.id] = {k: per[k] for k in ("trace_tokens", "cut", "no_trace") if k in per}
        by_budget[b] = score_docs(task, [d for d, _ in pairs], per_doc, config.context(), config.thinking)
    keys = [d.id for d, _ in pairs]
    annotate_samples(samples, by_budget, keys, info)
    config.budget_forcing = f.to_record()
    return by_budget, keys, info, f


def rescore(cfg: ScoreConfig, output_dir: Optional[str] = "results") -> Run:
    """Score saved predictions for one task; returns the typed record with its rows as ``run.samples``
    ({task: rows}) and its folder as ``run.path`` when one was written."""
    t0 = time.time()
    registry.get_task_class(cfg.task)
    preds = read_predictions(cfg.predictions, cfg.task)
    old_cfg, old_opts, old_data, old_refs, old_model = _carry_over(cfg, preds)
    options = {**old_opts, **cfg.task_options}
    given = cfg.data_path or cfg.references
    references = ([str(Path(r).resolve()) for r in cfg.references] if cfg.references
                  else [] if given else old_refs)
    data_path = str(Path(cfg.data_path).resolve()) if cfg.data_path else (None if given else old_data)
    task = registry.get_task_class(cfg.task)(data_path=data_path, **options)
    if references:
        if not task.takes_references:
            raise ValueError(f"task {cfg.task} reads its references from its data; --references serves tasks "
                             "whose data is just references (translation, summarization)")
        docs = task.docs_from_references(read_reference_files(references))
    elif data_path is None and not task.dataset.hub_path:
        raise ValueError(f"task {cfg.task} has no hub dataset: pass its data with --data PATH, or the "
                         "references with --references FILE")
    else:
        docs = task.eval_docs()
    if cfg.limit is not None and preds.in_order is not None:  # plain text: the first N lines, the first N docs
        docs, preds.in_order = docs[:cfg.limit], preds.in_order[:cfg.limit]
    pairs = align(docs, preds)
    if cfg.limit is not None:
        pairs = pairs[:cfg.limit]
    if not pairs:
        raise DataError(f"{preds.path}: no prediction matches a doc of task {cfg.task}")
    seed = cfg.seed if cfg.seed is not None else old_cfg.seed
    num_fewshot, prompts_note = old_cfg.num_fewshot, None
    if task.fewshot_reads_eval_file() and (num_fewshot is None or num_fewshot > 0):
        # the prompts only document the samples here: never built from the evaluation file's own answers
        num_fewshot, prompts_note = 0, (f"--data {data_path} is one file: sample prompts are shown zero-shot "
                                        f"(the task's few-shot split is not in it); scores are unaffected")
    config = RunConfig(tasks=[cfg.task], limit=cfg.limit, seed=seed, num_fewshot=num_fewshot,
                       apply_chat_template=old_cfg.apply_chat_template, system_prompt=old_cfg.system_prompt,
                       gen_overrides=old_cfg.gen_overrides, fewshot_as_multiturn=old_cfg.fewshot_as_multiturn,
                       data_paths={cfg.task: data_path or (REFS_PREFIX + json.dumps(references) if references
                                                          else None)},
                       task_options={cfg.task: options}, tags=list(cfg.tags),
                       metrics=list(cfg.metrics) or list(old_cfg.metrics), series=cfg.series or old_cfg.series)
    responses = [task.responses_from_predictions(doc, p) for doc, p in pairs]
    if task.output_type == "generate":  # saved raw outputs of a reasoning model: the answer is scored
        config.thinking = dict(old_cfg.thinking)
    samples = score_docs(task, [d for d, _ in pairs], responses, config.context(), config.thinking)
    curve = budget_curve(task, pairs, preds, config, samples)
    entry, rows = finish_task(task, samples, config)
    if isinstance(curve, tuple):
        attach_entry(task, entry, *curve, seed)
    changed = sorted(d.id for d, _ in pairs if d.id in preds.doc_hashes and preds.doc_hashes[d.id] != d.hash())
    entry.rescored = {"predictions": preds.path, "format": preds.kind, "sha256": preds.sha256,
                      "n_predictions": len(preds.by_id or preds.in_order or []), "n_scored": len(pairs),
                      "docs_changed_since_run": changed[:20], "n_docs_changed_since_run": len(changed),
                      **({"prompts": prompts_note} if prompts_note else {}),
                      **({"thinking_budgets": curve} if isinstance(curve, str) else {})}
    name = cfg.name or (old_model.name if old_model else "") or Path(preds.path).stem
    if old_model is not None:
        model = ModelInfo.from_dict(old_model.to_dict())
        model.rescored_from = preds.run.run_id
    else:
        model = ModelInfo(spec=f"predictions:{preds.path}", backend="predictions",
                          identity={"predictions": preds.path, "sha256": preds.sha256},
                          identity_hash=preds.sha256[:32])
    model.name = name
    run = new_run("rescore", model, {**config.to_record(), "rescored": True}, {cfg.task: entry},
                  timings={"score_s": round(time.time() - t0, 3), "total_s": round(time.time() - t0, 3)})
    if output_dir:
        run.path = str(write_run(output_dir, run, {cfg.task: rows}))
    run.samples = {cfg.task: rows}
    return run
