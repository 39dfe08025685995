"""Inspect interop on real logs: Inspect itself writes them offline (its ``mockllm/model`` provider,
tiny tasks on local samples, ``_make_logs.py``), ``evalkit import inspect`` reads them value by value,
``evalkit export --format inspect`` writes them back through ``write_eval_log``, and both round trips
give the same rows; an Inspect task mapped to evalkit's gsm8k pairs with an evalkit run by doc."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log  # noqa: E402

from conftest import REPO, evalkit_cli  # noqa: E402
from _fakes import ScriptedBackend  # noqa: E402
from evalkit.cli import main  # noqa: E402
from evalkit.records import load_run  # noqa: E402
from evalkit.scoring.stats import mean_metric  # noqa: E402

HERE = Path(__file__).parent
LETTER = {"C": 1.0, "I": 0.0}
GSM = [("Tom has 3 apples and buys 4 more. How many apples does he have?", "3 + 4 = 7\n#### 7", "He has 7"),
       ("A box holds 6 eggs. How many eggs are in 2 boxes?", "6 * 2 = 12\n#### 12", "The answer is 11"),
       ("Sara reads 5 pages a day for 3 days. How many pages does she read?", "5 * 3 = 15\n#### 15", "15")]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    out = tmp_path_factory.mktemp("inspect_logs")
    gsm = [[q, a.split("#### ")[-1], m] for q, a, m in GSM]
    r = subprocess.run([sys.executable, str(HERE / "_make_logs.py"), str(out), json.dumps(gsm)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def _one(folder: Path, pattern="*") -> Path:
    [p] = [x for x in folder.glob(pattern) if x.suffix in (".eval", ".json") or (x / "run.json").exists()]
    return p


def _import(tmp_path, *args) -> Path:
    out = tmp_path / f"res{len(list(tmp_path.glob('res*')))}"
    assert main(["import", "inspect", *map(str, args), "--output", str(out)]) == 0
    return _one(out)


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_import_reads_every_sample_score_and_usage(logs, tmp_path, fmt):
    path = _one(logs / f"tiny_{fmt}")
    log = read_eval_log(str(path))
    rec = load_run(_import(tmp_path, path))
    assert rec.run.kind == "import" and rec.run.model.spec == "inspect:mockllm/model"
    assert rec.run.model.identity["inspect_version"] == log.eval.packages["inspect_ai"]
    entry = rec.tasks["tiny_task"]
    info = entry.extra["inspect"]
    assert info["task"] == "tiny_task" and info["epochs"] == 2 and info["dataset"]["name"] == "tiny"
    assert info["task_args"] == {} and info["model_usage"]["mockllm/model"]["total_tokens"] == \
        log.stats.model_usage["mockllm/model"].total_tokens
    rows = list(rec.samples("tiny_task"))
    # one row per (sample, epoch), sample by sample, epochs in order
    assert [(r["doc_id"], r["extra"]["inspect"]["epoch"]) for r in rows] == \
        [(i, e) for i in ("a", "b", "c") for e in (1, 2)]
    by_key = {(s.id, s.epoch): s for s in log.samples}
    for r in rows:
        s = by_key[(r["doc_id"], r["extra"]["inspect"]["epoch"])]
        assert r["metrics"]["match"] == LETTER[s.scores["match"].value]
        assert r["metrics"]["length_score"] == s.scores["length_score"].value
        assert r["extra"]["inspect"]["scores"]["match"]["value"] == s.scores["match"].value  # the letter kept
        assert r["responses"] == [s.output.completion] and r["prompt"] == s.input and r["target"] == s.target
        assert r["extra"]["inspect"]["model_usage"]["mockllm/model"]["input_tokens"] == \
            s.model_usage["mockllm/model"].input_tokens
    # epochs are repeats: per-sample mean over epochs (a: C,C; b: C,I; c: I,I), then the interval over samples
    assert sorted(r["metrics"]["match"] for r in rows if r["doc_id"] == "b") == [0.0, 1.0]
    m = entry.metrics["match"]
    expected = mean_metric([1.0, 0.5, 0.0])
    assert (m.value, m.stderr, m.ci_low, m.ci_high, m.n) == \
        (expected.value, expected.stderr, expected.ci_low, expected.ci_high, 3)
    inspect_scores = {es.name: es.metrics for es in log.results.scores}
    assert m["inspect"]["accuracy"] == inspect_scores["match"]["accuracy"].value == 0.5
    assert m["inspect"]["stderr"] == pytest.approx(inspect_scores["match"]["stderr"].value)
    assert m.stderr == pytest.approx(m["inspect"]["stderr"])
    lengths = [sum(len(a) for a in ans) / 20 for ans in (["2", "2"], ["4", "5"], ["Lyon", "Lyon"])]
    ls = entry.metrics["length_score"]
    assert ls.value == pytest.approx(sum(lengths) / 3) == pytest.approx(ls["inspect"]["mean"])
    assert entry.n_docs == 3 and entry.output_type == "generate"


def test_letter_values_map_as_inspect_does():
    from inspect_ai.scorer import Score
    from evalkit.inspect_io.samples import metric_values
    got = metric_values({"c": Score(value="C"), "i": Score(value="I"), "p": Score(value="P"), "n": Score(value="N"),
                         "b": Score(value=True), "s": Score(value="0.25"), "d": Score(value={"x": "C", "y": 0.5}),
                         "l": Score(value=[1, 2])})
    assert got == {"c": 1.0, "i": 0.0, "p": 0.5, "n": 0.0, "b": 1.0, "s": 0.25, "d/x": 1.0, "d/y": 0.5}


def _same_record(a, b, task):
    assert list(a.samples(task)) == list(b.samples(task))
    assert dict(a.tasks[task].metrics) == dict(b.tasks[task].metrics)
    assert a.run.model.to_dict() == b.run.model.to_dict() and a.run.config == b.run.config


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_inspect_to_evalkit_to_inspect_round_trips(logs, tmp_path, fmt):
    src = _one(logs / f"tiny_{fmt}")
    first = _import(tmp_path, src)
    assert main(["export", "--format", "inspect", str(first), "--output", str(tmp_path / "exp"),
                 "--log-format", fmt]) == 0
    exported = _one(tmp_path / "exp")
    assert exported.suffix == f".{fmt}"
    orig, back = read_eval_log(str(src)), read_eval_log(str(exported))  # Inspect reads what evalkit wrote
    key = lambda s: (str(s.id), s.epoch)  # noqa: E731
    for s, t in zip(sorted(orig.samples, key=key), sorted(back.samples, key=key)):
        assert (s.id, s.epoch, s.input, s.target, s.output.completion) == (t.id, t.epoch, t.input, t.target,
                                                                            t.output.completion)
        assert {k: v.value for k, v in s.scores.items()} == {k: v.value for k, v in t.scores.items()}
    assert [(e.name, {k: m.value for k, m in e.metrics.items()}) for e in orig.results.scores] == \
        [(e.name, {k: m.value for k, m in e.metrics.items()}) for e in back.results.scores]
    _same_record(load_run(first), load_run(_import(tmp_path, exported)), "tiny_task")


@pytest.fixture(scope="module")
def gsm_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("gsm8k")
    lines = "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a, _ in GSM)
    (d / "test.jsonl").write_text(lines)
    (d / "train.jsonl").write_text(lines)
    return d


def _gold(r) -> str:
    gold = {q: a.split("#### ")[-1] for q, a, _ in GSM}
    return " #### " + next(v for k, v in gold.items() if k in r.prompt)


def echo_gold(spec: str) -> ScriptedBackend:
    """A backend that answers each GSM8K question with its gold number (no model)."""
    return ScriptedBackend(_gold, name="fake", identity={"backend": "fake", "model": spec})


@pytest.fixture(scope="module")
def evalkit_gsm(tmp_path_factory, gsm_data):
    import evalkit.cli.run as run_mod
    mp = pytest.MonkeyPatch()
    mp.setattr(run_mod, "make_backend", lambda spec, model_args=None, **kw: echo_gold(spec))
    out = tmp_path_factory.mktemp("evalkit_gsm")
    try:
        assert main(["run", "--model", "hf:echo-gold", "--tasks", "gsm8k", "--data", f"gsm8k={gsm_data}",
                     "--num-fewshot", "0", "--output", str(out / "res"), "--cache-dir", str(out / "cache")]) == 0
    finally:
        mp.undo()
    return _one(out / "res")


def test_task_map_gives_evalkit_doc_ids_and_pairs_with_an_evalkit_run(logs, tmp_path, gsm_data, evalkit_gsm, capsys):
    from evalkit.compare.align import align_task
    out = tmp_path / "res"
    assert main(["import", "inspect", str(logs / "gsm"), "--output", str(out), "--task-map", "gsm_inspect=gsm8k",
                 "--data", f"gsm8k={gsm_data}"]) == 0
    assert "gsm8k (Inspect gsm_inspect): 3 samples" in capsys.readouterr().out
    imp, ek = load_run(_one(out)), load_run(evalkit_gsm)
    rows, ek_rows = list(imp.samples("gsm8k")), list(ek.samples("gsm8k"))
    assert [(r["doc_id"], r["doc_hash"]) for r in rows] == [(r["doc_id"], r["doc_hash"]) for r in ek_rows]
    assert [r["metrics"]["match"] for r in rows] == [1.0, 0.0, 1.0]
    assert imp.tasks["gsm8k"].dataset_fingerprint == ek.tasks["gsm8k"].dataset_fingerprint
    aligned = align_task(imp, ek, "gsm8k", allow_prompt_change=True)  # Inspect's prompt is not evalkit's
    assert len(aligned.base_rows) == 3 and aligned.notes == ["task gsm8k: 3 of 3 prompts differ between the runs"]
    # Inspect's scorer named as evalkit's metric: compare pairs the 3 docs on it (2/3 right against 3/3)
    assert main(["import", "inspect", str(logs / "gsm"), "--output", str(tmp_path / "mapped"), "--task-map",
                 "gsm_inspect=gsm8k", "--data", f"gsm8k={gsm_data}", "--metric-map", "match=exact_match_numeric"]) == 0
    mapped = _one(tmp_path / "mapped")
    assert load_run(mapped).tasks["gsm8k"].metrics["exact_match_numeric"]["inspect"]["accuracy"] == pytest.approx(2 / 3)
    capsys.readouterr()
    assert main(["compare", str(mapped), str(evalkit_gsm), "--allow-prompt-change", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert (row["metric"], row["n"], row["baseline"], row["candidate"]) == ("exact_match_numeric", 3, 2 / 3, 1.0)
    # the mapped import goes out to Inspect and comes back the same; the leaderboard shows it like any run
    assert main(["export", "--format", "inspect", str(mapped), "--output", str(tmp_path / "exp")]) == 0
    _same_record(load_run(mapped), load_run(_import(tmp_path, tmp_path / "exp")), "gsm8k")
    from evalkit.dashboards.data import ResultsStore
    store = ResultsStore(tmp_path / "mapped")
    store.refresh()
    cells = store.cells()
    assert list(cells[cells["metric"] == "exact_match_numeric"]["value"]) == [pytest.approx(2 / 3)]
    # --data that evalkit cannot read as the mapped task's (missing, or another task's files): one line, exit 2
    # (#52 item 11: it was imported unpaired with a warning); mapped to a task whose docs these are not: one line
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "test.jsonl").write_text('{"prompt": "def f():", "task_id": "x"}\n')
    for bad in (tmp_path / "missing", tmp_path / "other"):
        assert main(["import", "inspect", str(logs / "gsm"), "--output", str(tmp_path / "nodata"), "--task-map",
                     "gsm_inspect=gsm8k", "--data", f"gsm8k={bad}"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"--data gsm8k={bad}: evalkit cannot read it as gsm8k's data" in err
    assert not (tmp_path / "nodata").exists() or not list((tmp_path / "nodata").glob("*/run.json"))
    assert main(["import", "inspect", str(logs / "tiny_eval"), "--output", str(tmp_path / "w"), "--task-map",
                 "tiny_task=gsm8k", "--data", f"gsm8k={gsm_data}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "6 of 6 samples are no doc of evalkit gsm8k" in err
    assert "--allow-mismatch" in err


def test_evalkit_to_inspect_to_evalkit_round_trips(evalkit_gsm, tmp_path):
    assert main(["export", "--format", "inspect", str(evalkit_gsm), "--output", str(tmp_path / "exp")]) == 0
    log = read_eval_log(str(_one(tmp_path / "exp")))
    assert log.eval.task == "gsm8k" and len(log.samples) == 3
    assert {s.scores["exact_match_numeric"].value for s in log.samples} == {1.0}
    _same_record(load_run(evalkit_gsm), load_run(_import(tmp_path, tmp_path / "exp")), "gsm8k")


def _bad_logs(logs: Path, d: Path) -> dict:
    import zipfile
    d.mkdir()
    ev, js = _one(logs / "tiny_eval"), _one(logs / "tiny_json")
    (d / "trunc.eval").write_bytes(ev.read_bytes()[: ev.stat().st_size // 2])
    (d / "trunc.json").write_text(js.read_text()[:4000])
    (d / "other.json").write_text('{"results": {"acc": 1}}')
    data = json.loads(js.read_text())
    data["version"] = 99
    (d / "v99.json").write_text(json.dumps(data))
    with zipfile.ZipFile(ev) as zi, zipfile.ZipFile(d / "v99.eval", "w") as zo:
        for n in zi.namelist():
            raw = zi.read(n)
            if n in ("header.json", "_journal/start.json"):
                raw = json.dumps({**json.loads(raw), "version": 99}).encode()
            zo.writestr(n, raw)
    with zipfile.ZipFile(d / "v3.eval", "w") as zo:  # a future layout Inspect cannot parse at all
        zo.writestr("header.json", json.dumps({"version": 3, "eval": "a shape from the future"}))
    return {"v3.eval": "unknown Inspect log version 3", "trunc.eval": "truncated or damaged .eval file",
            "trunc.json": "truncated or invalid JSON",
            "other.json": "not an Inspect log (field 'eval'", "v99.json": "unknown Inspect log version 99",
            "v99.eval": "unknown Inspect log version 99"}


def test_bad_logs_give_one_line_errors_naming_the_file(logs, tmp_path, capsys):
    for name, says in _bad_logs(logs, tmp_path / "bad").items():
        path = tmp_path / "bad" / name
        assert main(["import", "inspect", str(path), "--output", str(tmp_path / "r")]) == 2, name
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"{path}: " in err and says in err, err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_without_inspect_the_extra_is_named(logs, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if inspect-ai were not installed
    assert main(["import", "inspect", str(logs / "tiny_eval"), "--output", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'inspect' extra" in err and "[inspect]" in err, err


def test_secrets_in_a_log_never_reach_the_record(logs, tmp_path):
    from evalkit.inspect_io.importer import import_log
    from evalkit.records import write_run
    path = _one(logs / "tiny_json")
    log = read_eval_log(str(path))
    secret = "sk-abcdefghijklmnopqrstuvwxyz123456"
    log.eval.model_args = {"api_key": secret, "temperature_hint": 1}
    log.eval.task_args = {"hf_token": secret, "subset": "x"}
    log.eval.model_base_url = f"https://user:{secret}@example.org/v1"
    log.samples[0].metadata = {"authorization": secret, "topic": "math"}
    run, rows, _ = import_log(path, log)
    out = write_run(tmp_path / "r", run, rows)
    text = (out / "run.json").read_text() + (out / "samples_tiny_task.jsonl").read_text()
    assert secret not in text and '"subset": "x"' in text and '"topic": "math"' in text


def test_an_inspect_task_named_like_an_evalkit_task_pairs_without_a_map(logs, gsm_data):
    from evalkit.inspect_io.importer import import_log
    gsm = read_eval_log(str(_one(logs / "gsm")))
    gsm.eval.task = "gsm8k"
    run, rows, notes = import_log(Path("gsm.eval"), gsm, data_paths={"gsm8k": str(gsm_data)})
    assert [r["doc_id"] for r in rows["gsm8k"]] == ["0", "1", "2"] and notes == []
    tiny = read_eval_log(str(_one(logs / "tiny_eval")))
    tiny.eval.task = "gsm8k"  # not its docs: no error, Inspect's ids kept, said in a note
    run, rows, notes = import_log(Path("tiny.eval"), tiny, data_paths={"gsm8k": str(gsm_data)})
    assert [r["doc_id"] for r in rows["gsm8k"]][:2] == ["a", "a"] and "6 of 6 samples" in notes[0]


def test_a_dependency_inspect_lacks_is_named_not_called_a_bug(logs, tmp_path):
    """Inspect installed without one of its own dependencies (as the old --no-deps install left out jsonpatch):
    one line naming the package and the fix, exit 2, never "a bug in evalkit"."""
    stub = tmp_path / "stub" / "inspect_ai"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    (stub / "log.py").write_text("import jsonpatch_not_installed_here  # noqa\n")
    env = {"PYTHONPATH": f"{tmp_path / 'stub'}{os.pathsep}{REPO}"}
    r = evalkit_cli("import", "inspect", str(logs / "tiny_eval"), "--output", str(tmp_path / "r"), env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "bug" not in r.stderr, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "'inspect_ai'" in line and "'jsonpatch_not_installed_here'" in line and "pip install" in line, line


def test_a_log_imported_twice_or_copied_is_one_record_and_a_bad_metric_map_is_one_line(logs, tmp_path, capsys):
    """#52 item 11: 200 copies of one log became 200 records, a second import another one, and a
    --metric-map naming no scorer of the log was silently accepted."""
    import shutil
    path = _one(logs / "tiny_eval")
    copies = tmp_path / "copies"
    copies.mkdir()
    for k in range(5):
        shutil.copy(path, copies / f"copy{k}{path.suffix}")
    out = tmp_path / "r"
    assert main(["import", "inspect", str(copies), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert len(list(out.glob("*/run.json"))) == 1 and printed.count("skipped: its eval") == 4
    assert main(["import", "inspect", str(path), "--output", str(out)]) == 0
    assert "already imported" in capsys.readouterr().out and len(list(out.glob("*/run.json"))) == 1
    assert main(["import", "inspect", str(path), "--output", str(out), "--force"]) == 0
    assert len(list(out.glob("*/run.json"))) == 2
    assert main(["import", "inspect", str(path), "--output", str(tmp_path / "m"), "--metric-map", "nosuch=acc"]) == 2
    err = capsys.readouterr().err
    assert "--metric-map names metric(s) in no scorer of" in err and "nosuch" in err and "match" in err
    assert not (tmp_path / "m").exists() or not list((tmp_path / "m").glob("*/run.json"))
