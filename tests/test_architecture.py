"""The house drawn from the imports: no circle, no import from a lower layer to a higher one; the
run record's shape has one owner (evalkit.records) and a shipped JSON Schema generated from it."""
from __future__ import annotations

import json
import shutil

import pytest

import _import_graph as g
from conftest import REPO

# The core's folders, lowest first: each may import only the folders listed for it (even lazily).
# util < records < scoring < taskapi < backends < run (scoring's MetricValue is the record's); the
# backends see of the task API only the request kinds they answer and the tool-call parsers. The agents
# stand beside run: they compose the task API's episodes, backends' engines and the sandbox's tool calls.
ALLOWED = {
    "evalkit.util": ("evalkit.util", "evalkit.version"),
    "evalkit.records": ("evalkit.records", "evalkit.util", "evalkit.version"),
    "evalkit.scoring": ("evalkit.scoring", "evalkit.records", "evalkit.util", "evalkit.version"),
    "evalkit.taskapi": ("evalkit.taskapi", "evalkit.scoring", "evalkit.records", "evalkit.util", "evalkit.version"),
    "evalkit.backends": ("evalkit.backends", "evalkit.taskapi.requests", "evalkit.taskapi.tool_parsers",
                         "evalkit.scoring", "evalkit.records",
                         "evalkit.util", "evalkit.version"),
    "evalkit.agents": ("evalkit.agents", "evalkit.taskapi", "evalkit.backends", "evalkit.sandbox", "evalkit.scoring",
                       "evalkit.records", "evalkit.util", "evalkit.version"),
}
# who may import a folder (even lazily): the agents are played by run's answer phase; the workflows
# (rescore, merge, parity, reward pairs) compose run's phases for the CLI, and no phase imports them; the
# reference pages' generator stands above everything
IMPORTED_ONLY_BY = {
    "evalkit.agents": ("evalkit.agents", "evalkit.run"),
    "evalkit.run.workflows": ("evalkit.run.workflows", "evalkit.cli"),
    # the generated docs/reference pages read every layer; only scripts/gen_docs.py and the tests run them
    "evalkit.reference": ("evalkit.reference",),
}
# higher layers than each prefix; a module under the prefix may import none of them (even lazily)
FORBIDDEN = {
    "evalkit.tasks": ("evalkit.backends", "evalkit.run", "evalkit.cli", "evalkit.judges", "evalkit.dashboards"),
    "evalkit.run": ("evalkit.tasks", "evalkit.cli", "evalkit.judges", "evalkit.dashboards", "evalkit.compare",
                    "evalkit.sinks"),
    "evalkit.run.engine": ("evalkit.taskapi.task", "evalkit.taskapi.registry", "evalkit.run.runner"),
    "evalkit.judges": ("evalkit.cli", "evalkit.dashboards", "evalkit.run.runner"),
    "evalkit.compare": ("evalkit.cli", "evalkit.dashboards", "evalkit.judges", "evalkit.run", "evalkit.backends"),
    "evalkit.dashboards": ("evalkit.cli", "evalkit.run", "evalkit.backends"),
    "evalkit.arena": ("evalkit.cli", "evalkit.dashboards", "evalkit.run", "evalkit.backends", "evalkit.tasks"),
    # lm-eval's files in and out: records and the task API only (the catalog adapter is a task)
    "evalkit.lm_eval_io": ("evalkit.tasks", "evalkit.backends", "evalkit.run", "evalkit.cli", "evalkit.dashboards",
                           "evalkit.inspect_io"),
    # Inspect's logs in and out: records and the task API only
    "evalkit.inspect_io": ("evalkit.tasks", "evalkit.backends", "evalkit.run", "evalkit.cli", "evalkit.dashboards",
                           "evalkit.lm_eval_io"),
    # the import steps lm_eval_io and inspect_io share: records and the task API, none of the formats
    "evalkit.importing": ("evalkit.tasks", "evalkit.backends", "evalkit.run", "evalkit.cli", "evalkit.dashboards",
                          "evalkit.lm_eval_io", "evalkit.inspect_io"),
    # BFCL's decoding and checking run no model: the task API, scoring and util, and the sandbox where
    # its multi-turn APIs and checker run the model's calls (multi_turn_env)
    "evalkit.tasks.bfcl": ("evalkit.backends", "evalkit.run", "evalkit.cli", "evalkit.judges", "evalkit.dashboards",
                           "evalkit.tasks.lm_eval_catalog", "evalkit.lm_eval_io"),
}
# what stands at the package root: the public API, the version and the old-path aliases, nothing else
ROOT_MODULES = {"__init__.py", "__main__.py", "api.py", "version.py", "_moved.py"}


def _under(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


@pytest.fixture(scope="module")
def edges():
    return g.graph()


def test_the_import_graph_has_no_circle(edges):
    assert g.cycles(edges, ignore_package_inits=False) == []


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_import_from_a_lower_layer_to_a_higher_one(edges, layer):
    bad = sorted(f"{m} -> {n}" for m, ns in edges.items() if _under(m, layer) for n in ns
                 if any(_under(n, f) for f in FORBIDDEN[layer]))
    assert bad == []


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_core_folders_import_only_the_folders_below_them(edges, layer):
    bad = sorted(f"{m} -> {n}" for m, ns in edges.items() if _under(m, layer) for n in ns
                 if not any(_under(n, a) for a in ALLOWED[layer]))
    assert bad == []


@pytest.mark.parametrize("folder", sorted(IMPORTED_ONLY_BY))
def test_folders_are_imported_only_by_their_callers(edges, folder):
    bad = sorted(f"{m} -> {n}" for m, ns in edges.items() for n in ns if _under(n, folder)
                 if not any(_under(m, c) for c in IMPORTED_ONLY_BY[folder]))
    assert bad == []


def test_the_package_root_holds_folders_not_modules():
    assert sorted(f.name for f in (REPO / "evalkit").glob("*.py")) == sorted(ROOT_MODULES)


def test_old_import_paths_give_the_moved_modules():
    import importlib

    from evalkit._moved import MOVED
    for old, new in MOVED.items():
        assert importlib.import_module(f"evalkit.{old}") is importlib.import_module(f"evalkit.{new}"), old
    from evalkit.records import Run
    from evalkit.task import Task
    from evalkit.taskapi.task import Task as NewTask
    assert Task is NewTask and importlib.import_module("evalkit.taskapi.task").__spec__.name == "evalkit.taskapi.task"
    assert importlib.import_module("evalkit.records").Run is Run


def test_the_dashboard_reaches_neither_engine_nor_backends(edges):
    reach = set().union(*(g.closure(edges, m) | {m} for m in edges if _under(m, "evalkit.dashboards")))
    assert sorted(m for m in reach if any(_under(m, f) for f in ("evalkit.run.engine", "evalkit.backends",
                                                                  "evalkit.run.runner", "evalkit.run.cache"))) == []


def test_modules_stay_small():
    # one job per module; the sandbox worker must be self-contained, the executor is its host side
    allowed = {"evalkit/sandbox/worker.py", "evalkit/sandbox/executor.py"}
    big = []
    for folder in ("evalkit", "tasks", "judges", "dashboards"):
        for f in (REPO / folder).rglob("*.py"):
            rel = f.relative_to(REPO).as_posix()
            if f.is_symlink() or any(p.is_symlink() for p in f.parents if REPO in p.parents):
                continue
            if rel not in allowed and len(f.read_text(encoding="utf-8").splitlines()) > 400:
                big.append(rel)
    assert big == []


# ---- metrics: declared by every built-in task --------------------------------------------------
LOWER_IS_BETTER = {"word_perplexity", "byte_perplexity", "bits_per_byte", "ter", "no_answer", "first_last_differ",
                   "invalid_format", "unknown_function", "wrong_arg_type",
                   # agent tasks' tool-use figures (evalkit.taskapi.agent_task.TOOL_USE_METRICS)
                   "turns", "tool_calls", "tokens", "invalid_call_format", "tool_errors",
                   # τ²-bench's failure breakdown (tasks/tau2)
                   "fail_premature", "fail_db", "fail_communicate",
                   # SimpleQA-style graded correctness (tasks/judged/simpleqa.py)
                   "is_incorrect", "is_not_attempted",
                   # τ²-bench telecom's (dual control): its breakdown and the customer's own tool calls
                   "fail_env_assertion", "fail_action", "user_tool_calls"}


def test_every_builtin_task_declares_its_metrics():
    """Each registered built-in task declares its own Metric/MetricGroup objects (no legacy class
    dicts, no aggregate override), each name once, with the right direction; what samples carry is
    checked against it at aggregation (tests/test_metric_declarations.py scores the cheap ones)."""
    from evalkit.taskapi import registry
    from evalkit.taskapi.task import Task
    problems, lower = [], set()
    builtin = {n: c for n, c in registry.all_tasks().items() if c.__module__.startswith("evalkit.tasks.")}
    assert len(builtin) > 13
    for name, cls in builtin.items():
        task = cls()
        declared = task.declared_metrics()
        names = [m["name"] for m in declared]
        if not declared or not task.declares_metrics():
            problems.append(f"{name}: declares no metrics of its own")
        if len(set(names)) != len(names):
            problems.append(f"{name}: a metric declared twice in {names}")
        if cls.higher_is_better or cls.corpus_metrics:
            problems.append(f"{name}: uses the older higher_is_better/corpus_metrics dicts")
        if cls.aggregate is not Task.aggregate:
            problems.append(f"{name}: overrides aggregate (declare a MetricGroup)")
        if any(not isinstance(m["higher_is_better"], bool) or m["level"] not in ("sample", "corpus") for m in declared):
            problems.append(f"{name}: malformed declaration {declared}")
        lower |= {m["name"] for m in declared if not m["higher_is_better"]}
    assert problems == []
    assert lower == LOWER_IS_BETTER


# ---- the run record ----------------------------------------------------------------------------
def test_shipped_schema_is_generated_from_the_dataclasses():
    from evalkit.records import schema as record_schema
    shipped = json.loads(record_schema.SCHEMA_PATH.read_text(encoding="utf-8"))
    assert shipped == record_schema.generate(), "run `python -m evalkit.records.schema` after changing records.py"


SCHEMA1_RECORD = {  # as evalkit wrote it before the typed record (schema 1, no "kind")
    "schema_version": 1, "run_id": "20260101T000000-old-abc123", "created_at": "2026-01-01T00:00:00+00:00",
    "model": {"spec": "hf:smollm2-135m", "name": "smollm2-135m", "backend": "hf", "args": {},
              "identity": {"model": "smollm2-135m"}, "identity_hash": "ab" * 16},
    "config": {"tasks": ["gsm8k"], "limit": 2, "seed": 1234, "num_fewshot": None, "apply_chat_template": False,
               "system_prompt": None, "gen_overrides": {}, "shard": None, "tags": [], "data_paths": {},
               "task_options": {"gsm8k": {"metrics": ["evaluate:/x/m.py"]}}},
    "tasks": {"gsm8k": {"version": "1", "description": "d", "output_type": "generate", "config": {},
                        "num_fewshot": 5, "n_docs": 2, "dataset_fingerprint": "f", "prompt_hash": "p",
                        "data_source": "openai/gsm8k", "samples_file": "samples_gsm8k.jsonl", "extra": {},
                        "breakdowns": {}, "some_future_key": [1, 2],
                        "metrics": {"exact_match_numeric": {"value": 0.5, "stderr": 0.5, "ci_low": 0.09,
                                                            "ci_high": 0.9, "n": 2, "kind": "mean",
                                                            "higher_is_better": True}}}},
    "versions": {"evalkit": "0.1.0"}, "git_sha": None, "engine": {}, "timings": {},
}


def _write_old(tmp_path, data, name="old"):
    d = tmp_path / name
    d.mkdir()
    (d / "run.json").write_text(json.dumps(data))
    rows = [{"doc_id": str(i), "doc_hash": f"h{i}", "prompt": "q", "responses": ["#### 1"], "target": "1",
             "metrics": {"exact_match_numeric": float(i == 0)}, "extracted": None, "extra": {},
             "prompt_hash": "ph"} for i in range(2)]
    (d / "samples_gsm8k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_schema1_records_load_typed_round_trip_and_validate(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from evalkit.records import schema as record_schema
    from evalkit.records import Run, load_run, write_run
    from evalkit.run.config import RunConfig
    rec = load_run(_write_old(tmp_path, SCHEMA1_RECORD))
    assert rec.run.kind == "evaluation" and rec.run.model.backend == "hf"
    assert rec.run.tasks["gsm8k"].metrics["exact_match_numeric"]["value"] == 0.5
    # keys this evalkit does not know survive a read and a write
    assert rec.run.tasks["gsm8k"].other == {"some_future_key": [1, 2]}
    again = Run.from_dict(rec.run.to_dict())
    assert again.to_dict() == rec.run.to_dict()
    out = write_run(tmp_path / "rewritten", rec.run, {"gsm8k": list(rec.samples("gsm8k"))})
    data = json.loads((out / "run.json").read_text())
    assert data["tasks"]["gsm8k"]["some_future_key"] == [1, 2]
    schema = json.loads(record_schema.SCHEMA_PATH.read_text())
    jsonschema.validate(SCHEMA1_RECORD, schema)
    jsonschema.validate(data, schema)
    # schema 1 carried --metric inside the task options: it comes back as the run's appended metric
    cfg = RunConfig.from_record(rec.run.config)
    assert cfg.metrics == ["evaluate:/x/m.py"] and cfg.task_options == {}


def test_schema1_records_compare_with_new_ones(tmp_path):
    from evalkit.compare import CompareOptions, compare_runs
    old = _write_old(tmp_path, SCHEMA1_RECORD)
    new = dict(SCHEMA1_RECORD, schema_version=2, kind="evaluation", run_id="20260102T000000-new-def456")
    c = compare_runs(old, _write_old(tmp_path, new, "new"), CompareOptions())
    assert c.exit_code == 0 and any(r.metric == "exact_match_numeric" for r in c.rows)


def test_a_broken_record_is_named_with_file_and_line(tmp_path):
    from evalkit.records import RecordError, load_run
    d = _write_old(tmp_path, SCHEMA1_RECORD)
    (d / "run.json").write_text('{"schema_version": 1,\n "run_id": ')
    with pytest.raises(RecordError, match=r"run\.json:2: invalid JSON"):
        load_run(d)
    d2 = _write_old(tmp_path, SCHEMA1_RECORD, "lines")
    (d2 / "samples_gsm8k.jsonl").write_text('{"doc_id": "0"}\n{"doc_id": \n')
    with pytest.raises(RecordError, match=r"samples_gsm8k\.jsonl:2: invalid JSON"):
        list(load_run(d2).samples("gsm8k"))


def test_every_writer_goes_through_the_one_builder():
    """No record is built as a dict literal outside evalkit.records (the schema stamp lives there)."""
    offenders = []
    for folder in ("evalkit", "tasks", "judges"):
        for f in (REPO / folder).rglob("*.py"):
            if f.relative_to(REPO).as_posix() in ("evalkit/records/__init__.py", "evalkit/records/record.py", "evalkit/records/schema.py",
                                                  "evalkit/records/provenance.py") or f.is_symlink():
                continue
            text = f.read_text(encoding="utf-8")
            if "SCHEMA_VERSION" in text or "run_id_for(" in text or '"schema_version": SCHEMA' in text:
                offenders.append(f.relative_to(REPO).as_posix())
    assert offenders == []


def test_one_owner_of_the_dataset_and_prompt_hashes():
    """A task entry's dataset fingerprint and prompt hash are computed in evalkit/records/hashes.py only."""
    offenders = []
    for folder in ("evalkit", "tasks", "judges", "dashboards"):
        for f in (REPO / folder).rglob("*.py"):
            rel = f.relative_to(REPO).as_posix()
            if f.is_symlink() or rel == "evalkit/records/hashes.py":
                continue
            text = f.read_text(encoding="utf-8")
            if "dataset_fingerprint=content_hash" in text or 'content_hash([r["prompt_hash"]' in text:
                offenders.append(rel)
    assert offenders == []


def test_every_sample_is_built_by_the_framework():
    """Tasks return values (``Scored``); ``evalkit.taskapi.items.make_sample`` is the one place a
    ``Sample`` is constructed (``Sample.from_dict`` reads saved rows back)."""
    import re
    offenders = []
    for folder in ("evalkit", "tasks", "judges", "dashboards"):
        for f in (REPO / folder).rglob("*.py"):
            rel = f.relative_to(REPO).as_posix()
            if f.is_symlink() or rel == "evalkit/taskapi/items.py":
                continue
            if re.search(r"(?<![\w.])Sample\(", f.read_text(encoding="utf-8")):
                offenders.append(rel)
    assert offenders == []


def test_the_dashboard_shows_schema1_records(tmp_path):
    from evalkit.dashboards.data import ResultsStore
    results = tmp_path / "results"
    results.mkdir()
    shutil.copytree(_write_old(tmp_path, SCHEMA1_RECORD), results / "old")
    store = ResultsStore(results)
    store.refresh()
    cells = store.cells()
    row = cells[cells["run_id"] == SCHEMA1_RECORD["run_id"]]
    assert list(row["task"]) == ["gsm8k"]


def test_loading_the_task_registry_does_not_import_lm_eval():
    """The lm-eval catalog registers itself with the task registry but imports lm-eval only when an
    ``lm-eval:`` name is asked for: `evalkit tasks` stays fast, and the slim install needs no lm-eval."""
    import subprocess
    import sys
    code = ("import sys; from evalkit.taskapi import registry; registry.all_tasks(); "
            "registry.expand(['gsm8k,mmlu_*']); assert 'lm_eval' not in sys.modules, 'lm_eval imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
