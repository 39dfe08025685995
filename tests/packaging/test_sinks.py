"""Result sinks: MLflow (local file store) and W&B (offline run files) read back with their own client
libraries hold the same numbers as run.json; the hub sink builds real huggingface_hub commit operations
(dry run: no hub access here); no secret reaches any of them."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from evalkit.cli import main
from tests.compare.test_compare import binary_items, copy_task, fake_backend, make_run  # noqa: F401 - copy_task is a fixture

SECRET = "sk-evalkitTESTsecret0123456789"
HF_SECRET = "hf_evalkitTESTsecret0123456789"


GIT_SHA = "5eed5eed0123456789abcdef0123456789abcdef"


@pytest.fixture
def record(tmp_path, monkeypatch):
    """A two-task record; its model block carries an API key as an old record might have."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("HF_TOKEN", HF_SECRET)
    items = binary_items([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], "exact_match")
    for i, it in enumerate(items):
        it.update(prompt=f"Question {i}: what is {i}+{i}?", response=f" {2 * i}", target=str(2 * i))
    cont = [{"doc_id": i, "metrics": {"score": 0.1 * i}} for i in range(8)]
    path = make_run(tmp_path / "results", "run-sinks", {"gsm8k": items, "judge_scores": cont})
    data = json.loads((path / "run.json").read_text())
    data["model"]["args"] = {"api_key": SECRET, "dtype": "bfloat16"}   # unscrubbed, as from an old writer
    data["git_sha"] = GIT_SHA                                          # the commit the run was made at
    (path / "run.json").write_text(json.dumps(data))
    return path


def expected_metrics(path: Path) -> dict:
    out = {}
    for task, t in json.loads((path / "run.json").read_text())["tasks"].items():
        for m, v in t["metrics"].items():
            out[f"{task}/{m}"] = v["value"]
            for stat in ("ci_low", "ci_high", "stderr", "n"):
                out[f"{task}/{m}.{stat}"] = float(v[stat])
    return out


def no_secret_below(folder: Path):
    """No credential, and no git metadata (the README's promise), in anything a sink wrote."""
    for f in folder.rglob("*"):
        if f.is_file():
            blob = f.read_bytes()
            assert SECRET.encode() not in blob and HF_SECRET.encode() not in blob, f
            assert GIT_SHA.encode() not in blob, f


def test_mlflow_file_store_read_back(tmp_path, record):
    mlflow = pytest.importorskip("mlflow")
    store = tmp_path / "mlruns"
    assert main(["log", str(record), "--to", "mlflow", "--mlflow-uri", str(store),
                 "--mlflow-experiment", "gate-tests"]) == 0
    client = mlflow.MlflowClient(tracking_uri=store.as_uri())
    exp = client.get_experiment_by_name("gate-tests")
    (run,) = client.search_runs([exp.experiment_id])
    want = expected_metrics(record)
    assert run.data.metrics.keys() == want.keys()
    for k, v in want.items():
        assert run.data.metrics[k] == pytest.approx(v, abs=0, rel=1e-12), k
    assert run.data.params["config.seed"] == "1234" and run.data.params["model.args.dtype"] == "bfloat16"
    assert run.data.params["model.args.api_key"] == "<redacted>"
    assert run.data.tags["evalkit.run_id"] == "run-sinks" and run.info.status == "FINISHED"
    table = json.loads(Path(client.download_artifacts(run.info.run_id, "samples/gsm8k.json",
                                                      str(tmp_path))).read_text())
    rows = [dict(zip(table["columns"], r)) for r in table["data"]]
    samples = [json.loads(line) for line in (record / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert [r["exact_match"] for r in rows] == [s["metrics"]["exact_match"] for s in samples]
    assert rows[3]["prompt"] == "Question 3: what is 3+3?" and rows[3]["response"] == " 6"
    logged = json.loads(Path(client.download_artifacts(run.info.run_id, "run.json", str(tmp_path / "r"))).read_text())
    assert logged["tasks"] == json.loads((record / "run.json").read_text())["tasks"]
    no_secret_below(store)


def wandb_records(run_file: Path):
    """The records of a W&B offline run file (LevelDB log framing, 32 KiB blocks, 7-byte headers),
    decoded with wandb's own protobuf classes."""
    from wandb.proto import wandb_internal_pb2 as pb
    data, block, pos, buf = run_file.read_bytes(), 32768, 7, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        pos += 7
        chunk, pos = data[pos:pos + length], pos + length
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf + chunk)
            buf = b""
            yield rec
        elif kind in (2, 3):
            buf += chunk


def test_wandb_offline_run_read_back(tmp_path, record, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-home"))
    wdir = tmp_path / "wb"
    assert main(["log", str(record), "--to", "wandb", "--wandb-dir", str(wdir), "--wandb-project", "gate-tests"]) == 0
    (run_dir,) = (wdir / "wandb").glob("offline-run-*")
    (run_file,) = run_dir.glob("run-*.wandb")
    summary, config, project = {}, {}, None
    for rec in wandb_records(run_file):
        kind = rec.WhichOneof("record_type")
        if kind == "summary":
            for u in rec.summary.update:
                if u.key:
                    summary[u.key] = json.loads(u.value_json)
        elif kind == "run":
            project = project or rec.run.project
            config.update({u.key: json.loads(u.value_json) for u in rec.run.config.update})
        elif kind == "config":
            config.update({u.key: json.loads(u.value_json) for u in rec.config.update})
    assert project == "gate-tests"
    want = expected_metrics(record)
    for k, v in want.items():
        assert summary[k] == pytest.approx(v, abs=0, rel=1e-12), k
    assert config["config.seed"] == 1234 and config["model.args.api_key"] == "<redacted>"
    (table_file,) = run_dir.glob("files/media/table/samples/gsm8k*.table.json")
    table = json.loads(table_file.read_text())
    col = table["columns"].index("exact_match")
    assert [r[col] for r in table["data"]] == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    no_secret_below(wdir)


def test_hub_dry_run_builds_the_commit_and_offline_push_fails_cleanly(tmp_path, record, capsys, monkeypatch):
    hf = pytest.importorskip("huggingface_hub")
    from evalkit.sinks import hub_sink, payload
    p = payload.build(record)
    ops = hub_sink.operations(p, hf)
    assert all(isinstance(op, hf.CommitOperationAdd) for op in ops)
    by_path = {op.path_in_repo: op for op in ops}
    assert set(by_path) == {"runs/run-sinks/run.json", "runs/run-sinks/README.md",
                            "runs/run-sinks/samples_gsm8k.jsonl", "runs/run-sinks/samples_judge_scores.jsonl"}
    with by_path["runs/run-sinks/run.json"].as_file() as f:
        pushed = json.loads(f.read())
    assert pushed["model"]["args"]["api_key"] == "<redacted>"
    with by_path["runs/run-sinks/README.md"].as_file() as f:
        card = f.read().decode()
    v = json.loads((record / "run.json").read_text())["tasks"]["gsm8k"]["metrics"]["exact_match"]
    assert f"| gsm8k | exact_match | {v['value']:.4f} | [{v['ci_low']:.4f}, {v['ci_high']:.4f}] | 10 |" in card
    assert main(["log", str(record), "--to", "hub", "--repo", "me/evals", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run, nothing sent" in out and "runs/run-sinks/samples_gsm8k.jsonl" in out
    assert SECRET not in out and HF_SECRET not in out
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["log", str(record), "--to", "hub", "--repo", "me/evals"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalkit log: error: hub:") and len(err.strip().splitlines()) == 1
    assert main(["log", str(record), "--to", "hub", "--repo", "noslash", "--dry-run"]) == 2


def test_gpqa_questions_never_reach_a_sink(tmp_path):
    from evalkit.sinks import payload
    items = binary_items([1, 0, 1], "acc")
    for it in items:
        it["prompt"] = "SECRET GPQA QUESTION"
    path = make_run(tmp_path / "results", "run-gpqa", {"gpqa_diamond": items})
    p = payload.build(path)
    cols, rows = p.tables["gpqa_diamond"]
    assert "SECRET GPQA QUESTION" not in json.dumps(rows) and rows[0][cols.index("prompt")] == "<hidden>"
    assert set(p.files) == {"run.json"}


def test_run_log_to_mlflow_after_the_record_is_written(tmp_path, copy_task, monkeypatch, capsys):  # noqa: F811
    mlflow = pytest.importorskip("mlflow")
    import evalkit.cli.run as run_mod
    monkeypatch.setattr(run_mod, "make_backend", lambda spec, model_args=None, **kw: fake_backend(spec))
    tasks, data = copy_task
    store = tmp_path / "mlruns"
    assert main(["run", "--model", "hf:fake-good", "--tasks", "copy_digits", "--include-path", str(tasks),
                 "--data", f"copy_digits={data}", "--limit", "12", "--output", str(tmp_path / "results"),
                 "--no-cache", "--log-to", "mlflow", "--mlflow-uri", str(store)]) == 0
    assert "mlflow: logged" in capsys.readouterr().err
    (record,) = (tmp_path / "results").iterdir()
    client = mlflow.MlflowClient(tracking_uri=store.as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("evalkit").experiment_id])
    assert run.data.metrics == pytest.approx(expected_metrics(record))


def test_missing_sink_package_names_the_extra(tmp_path, record, monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "wandb", None)      # `import wandb` now fails as if not installed
    assert main(["log", str(record), "--to", "wandb"]) == 2
    err = capsys.readouterr().err.strip()
    from evalkit.util.extras import install_hint  # from where this copy came from (a clone here)
    assert err == ("evalkit log: error: the wandb sink needs the Python package 'wandb' (the 'wandb' extra): "
                   + install_hint("wandb"))
