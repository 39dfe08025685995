"""The record's dataclasses, its one builder (``new_run``), atomic writing and loading.

See the package docstring (``evalkit.records``) for what a record holds."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Union

from evalkit.util.jsonio import read_json, read_jsonl
from evalkit.records.values import MetricValue, SampleRow
from evalkit.records.provenance import git_sha, package_versions, run_id_for, utc_now
from evalkit.records.redact import scrub
from evalkit.records.typed import RecordError, _Typed  # noqa: F401 (RecordError: re-exported)

SCHEMA_VERSION = 2
#: what produced a record
KINDS = ("evaluation", "rescore", "mt_bench", "arena", "import")  # a merge of shards is an evaluation


@dataclass
class ModelInfo(_Typed):
    """The model a record is about. ``identity`` describes it exactly (and never holds secrets);
    ``identity_hash`` keys the response cache."""

    spec: str = ""
    name: str = ""
    backend: str = ""
    args: dict = field(default_factory=dict)
    identity: dict = field(default_factory=dict)
    identity_hash: str = ""
    rescored_from: Optional[str] = None
    other: dict = field(default_factory=dict)

    OMIT_IF_NONE: typing.ClassVar[tuple] = ("rescored_from",)


@dataclass
class TaskEntry(_Typed):
    """One task of a run: what ran (version, config, data and prompt hashes) and its metrics, each a
    ``MetricValue`` ``{value, stderr, ci_low, ci_high, n, kind, higher_is_better}``, also per group
    in ``breakdowns``."""

    version: str = "1"
    description: str = ""
    output_type: str = ""
    config: dict = field(default_factory=dict)
    num_fewshot: Optional[int] = None
    n_docs: int = 0
    dataset_fingerprint: str = ""
    prompt_hash: str = ""
    data_source: Optional[str] = None
    metrics: dict[str, MetricValue] = field(default_factory=dict)
    breakdowns: dict[str, dict[str, MetricValue]] = field(default_factory=dict)
    samples_file: Optional[str] = None
    extra: dict = field(default_factory=dict)
    rescored: Optional[dict] = None
    ratings: Optional[list] = None
    battles_file: Optional[str] = None
    #: with --reward-model: pass@1, maj@N, oracle pass@N, RM best-of-N (curves over N) and rm_auroc
    best_of_n: Optional[dict] = None
    truncated_prompts: Optional[int] = None  # prompts longer than the context, cut from the left
    verifier_hash: Optional[str] = None      # parity certificate with evalkit.rl's rewards for this task
    grpo: Optional[dict] = None              # GRPO group figures with CIs (runs with G > 1 responses per item)
    budget: Optional[dict] = None            # generation budgets from the samples (evalkit.scoring.budgets)
    #: what the task declares it reports: [{name, higher_is_better, level, group}] (Task.declared_metrics)
    declared_metrics: Optional[list] = None
    other: dict = field(default_factory=dict)

    OMIT_IF_NONE: typing.ClassVar[tuple] = ("samples_file", "rescored", "ratings", "battles_file",
                                            "truncated_prompts", "verifier_hash", "grpo", "best_of_n", "budget",
                                            "declared_metrics")

    def __post_init__(self):  # values built in memory (a dict or a MetricValue) are typed like loaded ones
        self.metrics = MetricDict(self.metrics, "metrics")
        self.breakdowns = {g: MetricDict(ms, f"breakdowns.{g}") for g, ms in self.breakdowns.items()}


class MetricDict(dict):
    """``{name: MetricValue}``: what is put in is checked and typed (``entry.metrics[name] = {...}``)."""

    def __init__(self, values=(), where: str = "metrics"):
        super().__init__()
        self.where = where
        for k, v in dict(values).items():
            self[k] = v

    def __setitem__(self, name, value):
        try:
            super().__setitem__(name, MetricValue.check(value, f"{self.where}.{name}"))
        except ValueError as e:
            raise RecordError(str(e)) from None


@dataclass
class Run(_Typed):
    """A whole run record (``run.json``)."""

    schema_version: int = SCHEMA_VERSION
    run_id: str = ""
    created_at: str = ""
    kind: str = "evaluation"
    model: ModelInfo = field(default_factory=ModelInfo)
    config: dict = field(default_factory=dict)
    tasks: dict[str, TaskEntry] = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    git_sha: Optional[str] = None
    engine: dict = field(default_factory=dict)
    backend_stats: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    judge: Optional[dict] = None
    judge_engine: Optional[dict] = None
    merged_from: Optional[list] = None
    #: with --reward-model: the reward model (identity, pooling, activation, step tag, API, engine counters)
    reward_model: Optional[dict] = None
    #: with --suite: the suite (name, file, tasks) and its summary (leaderboard-v2 normalised scores with CIs)
    suite: Optional[dict] = None
    #: agent tasks with a simulated user (τ²-bench): the user model (spec, identity; ``same_as_model``)
    user_model: Optional[dict] = None
    path: Optional[str] = None
    other: dict = field(default_factory=dict)

    OMIT_IF_NONE: typing.ClassVar[tuple] = ("judge", "judge_engine", "merged_from", "reward_model", "suite",
                                            "user_model", "path")

    @classmethod
    def from_dict(cls, d: dict, where: str = "run.json") -> "Run":
        if isinstance(d, dict):
            d = migrate(d)  # older shapes (schema 1: no kind, --metric in the task options)
        run = super().from_dict(d, where)
        if not run.run_id:
            raise RecordError(f"{where}: field 'run_id' is missing")
        return run


def migrate(data: dict) -> dict:
    """The one place older record shapes are brought up to date (as Inspect's ``migrate_values``):
    a schema-1 record gets its ``kind`` (inferred) and its ``--metric`` specs moved from the task
    options to the run's ``config.metrics``; metric values missing optional fields get their
    defaults. Returns a new dict; the file is not changed."""
    d = dict(data)
    d.setdefault("schema_version", 1)
    if "kind" not in d:
        d["kind"] = _infer_kind(d)
    cfg = d.get("config")
    if isinstance(cfg, dict) and isinstance(cfg.get("task_options"), dict) and \
            any(isinstance(o, dict) and "metrics" in o for o in cfg["task_options"].values()):
        cfg = dict(cfg)
        metrics = list(cfg.get("metrics") or [])
        options = {}
        for name, o in cfg["task_options"].items():
            o = dict(o or {})
            for spec in o.pop("metrics", None) or []:
                if spec not in metrics:
                    metrics.append(spec)
            if o:
                options[name] = o
        cfg["task_options"], cfg["metrics"] = options, metrics
        d["config"] = cfg
    return d


def _infer_kind(d: dict) -> str:
    cfg = d.get("config") or {}
    if cfg.get("rescored"):
        return "rescore"
    if "mt_bench" in cfg:
        return "mt_bench"
    if "arena" in cfg:
        return "arena"
    return "evaluation"


def new_run(kind: str, model: ModelInfo, config: dict, tasks: dict[str, TaskEntry], label: Optional[str] = None,
            **fields) -> Run:
    """The one way to start a record: stamps schema version, a fresh run id (from ``label`` or the
    model's name), the creation time, package versions and the git sha."""
    if kind not in KINDS:
        raise ValueError(f"record kind {kind!r}: expected one of {', '.join(KINDS)}")
    fields.setdefault("versions", package_versions())
    fields.setdefault("git_sha", git_sha())
    return Run(schema_version=SCHEMA_VERSION, run_id=run_id_for(label or model.name or kind), created_at=utc_now(),
               kind=kind, model=model, config=config, tasks=tasks, **fields)


# ---- writing ----------------------------------------------------------------------------------
def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def samples_filename(task: str) -> str:
    return f"samples_{task}.jsonl"


def write_run(results_dir: os.PathLike, run: Union[Run, dict], samples: dict[str, list[dict]]) -> Path:
    """Write a run folder atomically; returns its path. ``run`` is a ``Run`` (a dict of the same
    shape is accepted and checked by parsing it)."""
    run = run if isinstance(run, Run) else Run.from_dict(run)
    data = run.to_dict()
    data.pop("path", None)
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    final = results_dir / run.run_id
    tmp = Path(tempfile.mkdtemp(prefix=f".{run.run_id}.", dir=results_dir))
    try:
        for task, rows in samples.items():
            with open(tmp / samples_filename(task), "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        with open(tmp / "run.json", "w", encoding="utf-8") as f:
            json.dump(scrub(data), f, indent=2, ensure_ascii=False, default=str)
        for p in tmp.iterdir():
            with open(p, "rb") as fh:
                os.fsync(fh.fileno())
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def update_run_json(folder: os.PathLike, run: Run) -> Path:
    """Rewrite a record's run.json (atomically) after a tool added figures to it; samples untouched."""
    data = run.to_dict()
    data.pop("path", None)
    path = Path(folder) / "run.json"
    atomic_write_text(path, json.dumps(scrub(data), indent=2, ensure_ascii=False, default=str))
    return path


# ---- reading ----------------------------------------------------------------------------------
@dataclass
class RunRecord:
    """A record on disk: its folder and the typed ``run`` (``tasks``, ``model`` and ``metrics(task)`` are
    its parts); ``data`` is the raw JSON it was parsed from, for tools that copy a record whole."""

    path: Path
    data: dict = field(repr=False)
    run: Optional[Run] = field(default=None, repr=False)

    def __post_init__(self):
        if self.run is None:
            self.run = Run.from_dict(self.data, str(Path(self.path) / "run.json"))

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def tasks(self) -> dict[str, TaskEntry]:
        return self.run.tasks

    @property
    def model(self) -> ModelInfo:
        return self.run.model

    def metrics(self, task: str) -> dict[str, MetricValue]:
        return self.run.tasks[task].metrics

    def samples_path(self, task: str) -> Path:
        return Path(self.path) / (self.tasks[task].samples_file or samples_filename(task))

    def samples(self, task: str) -> Iterator[SampleRow]:
        """The task's sample rows, typed (``row.doc_id``, ``row.metrics``, ...), each checked."""
        path = self.samples_path(task)
        try:
            for i, row in enumerate(read_jsonl(path), 1):
                yield SampleRow.check(row, f"{path}:{i}")
        except ValueError as e:  # names the file and line
            raise RecordError(str(e)) from None


def load_run(path: os.PathLike) -> RunRecord:
    """The record in folder ``path`` (or of its ``run.json``), any schema version up to this evalkit's;
    a broken or newer record raises ``RecordError`` naming the file."""
    p = Path(path)
    if p.is_file():
        p = p.parent
    run_json = p / "run.json"
    if not run_json.exists():
        raise FileNotFoundError(f"{p}: not a run record (no run.json)")
    try:
        data = read_json(run_json)
    except ValueError as e:  # names the file and line
        raise RecordError(str(e)) from None
    if not isinstance(data, dict):
        raise RecordError(f"{run_json}: not a run record (a JSON {type(data).__name__}, not an object)")
    if data.get("schema_version", 0) > SCHEMA_VERSION:
        raise RecordError(f"{run_json}: schema_version {data['schema_version']} is newer than this evalkit "
                          f"understands ({SCHEMA_VERSION}); upgrade evalkit")
    return RunRecord(p, migrate(data))


def iter_runs(results_dir: os.PathLike) -> Iterator[RunRecord]:
    """Every readable record in ``results_dir``, by folder name; unreadable ones are skipped."""
    for run_json in sorted(Path(results_dir).glob("*/run.json")):
        if run_json.parent.name.startswith("."):
            continue
        try:
            yield load_run(run_json.parent)
        except (ValueError, OSError, json.JSONDecodeError):
            continue
