"""The run index beside a results folder (evalkit.records.index) and `evalkit runs`: incremental updates,
a rebuild that loses nothing, filters, concurrent writers, and the leaderboard stopping on SIGTERM."""
from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from _dashboard_records import many_models
from evalkit.cli import main
from evalkit.records import index, load_run


def _snapshot(results) -> list:
    return [{k: v for k, v in r.items()} for r in index.runs(results)]


def test_update_reads_only_new_or_changed_records_and_forgets_removed_ones(tmp_path):
    results = many_models(tmp_path / "results", 8)
    first = index.update(results)
    assert (first.read, first.removed, first.total, first.unreadable) == (8, 0, 8, {})
    assert index.update(results).read == 0                              # nothing changed: nothing read
    folder = sorted(p for p in results.iterdir() if p.is_dir())[3]
    data = json.loads((folder / "run.json").read_text())
    data["tasks"]["gsm8k_like"]["metrics"]["exact_match"]["value"] = 0.123
    (folder / "run.json").write_text(json.dumps(data))
    again = index.update(results)
    assert (again.read, again.total) == (1, 8)
    got = [m for r in index.runs(results) if r["folder"] == folder.name for m in r["metrics"]
           if m["metric"] == "exact_match"]
    assert got[0]["value"] == 0.123
    shutil.rmtree(folder)
    gone = index.update(results)
    assert (gone.read, gone.removed, gone.total) == (0, 1, 7)


def test_the_index_holds_what_the_records_say_and_a_rebuild_loses_nothing(tmp_path):
    results = many_models(tmp_path / "results", 6)
    index.update(results)
    before = _snapshot(results)
    for r in before:                                                    # every metric, value and CI
        run = load_run(results / r["folder"]).run
        want = {(t, name, mv["value"], mv["ci_low"], mv["ci_high"]) for t, e in run.tasks.items()
                for name, mv in e.metrics.items()}
        assert {(m["task"], m["metric"], m["value"], m["ci_low"], m["ci_high"]) for m in r["metrics"]} == want
        assert (r["model"], r["run_id"], r["created_at"]) == (run.model.name, run.run_id, run.created_at)
    index.index_path(results).unlink()
    assert index.update(results).read == 6
    assert _snapshot(results) == before


def test_filters_by_model_task_tag_and_date(tmp_path):
    results = many_models(tmp_path / "results", 8)
    index.update(results)
    q = index.Query
    assert [r["model"] for r in index.runs(results, q(model="*family-9b-*"))] == \
        ["example-org/long-model-family-9b-instruct-v2.2"]
    assert len(index.runs(results, q(model="hf:*"))) == 8              # the spec matches too
    by_task = index.runs(results, q(task="gsm8k*"))
    assert len(by_task) == 8 and {m["task"] for r in by_task for m in r["metrics"]} == {"gsm8k_like"}
    assert len(index.runs(results, q(tag="many"))) == 8 and index.runs(results, q(tag="man")) == []
    assert len(index.runs(results, q(since="2026-02-01", until="2026-02-01"))) == 8
    assert index.runs(results, q(since="2026-02-02")) == []
    assert len(index.runs(results, q(until="2026-02-01T00:03:00+00:00"))) == 3   # 00:00, 00:01, 00:02
    newest = index.runs(results)
    assert [r["created_at"] for r in newest] == sorted((r["created_at"] for r in newest), reverse=True)


def test_a_half_written_record_is_named_and_read_once_it_is_whole(tmp_path):
    results = many_models(tmp_path / "results", 2)
    bad = results / "partial-run"
    bad.mkdir()
    (bad / "run.json").write_text('{"schema_version": 2, "run_id": ')
    done = index.update(results)
    assert done.total == 2 and len(done.unreadable) == 1 and str(bad / "run.json") in done.unreadable[bad.name]
    good = next(p for p in results.iterdir() if p.is_dir() and p != bad)
    (bad / "run.json").write_text((good / "run.json").read_text())
    assert index.update(results).total == 3


def test_two_writers_and_a_run_finishing_corrupt_nothing(tmp_path):
    """Two processes update the index in a loop while new records keep arriving."""
    results = many_models(tmp_path / "results", 4)
    spare = many_models(tmp_path / "more", 12)
    loop = f"from evalkit.records import index\nfor _ in range(15): index.update({str(results)!r})"
    writers = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(2)]
    for folder in sorted(p for p in spare.iterdir() if p.is_dir()):
        shutil.copytree(folder, results / f"new-{folder.name}")
        time.sleep(0.05)
    for w in writers:
        assert w.wait(120) == 0
    final = index.update(results)
    assert final.total == 16 and final.unreadable == {}
    con = sqlite3.connect(index.index_path(results))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n_metrics = con.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    assert n_metrics == 16 * 3                                          # each run's three tasks, once


def test_runs_command_lists_shows_and_rebuilds(tmp_path, capsys):
    results = many_models(tmp_path / "results", 5)
    assert main(["runs", "list", "--results", str(results), "--model", "*7b*", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in found] == ["many-00"]
    assert main(["runs", "list", "--results", str(results), "--task", "tiny_task"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["created", "(UTC)", "model", "kind", "tasks", "tags", "folder"] and len(out) == 6
    assert all("tiny_task" in line and "many" in line for line in out[1:])
    assert main(["runs", "show", "many-02", "--results", str(results)]) == 0
    shown = capsys.readouterr().out
    assert "mmlu_like" in shown and "acc" in shown and "95% CI" in shown
    assert main(["runs", "index", "--rebuild", "--results", str(results)]) == 0
    assert capsys.readouterr().out.startswith("5 run(s) indexed (5 read, 0 removed, 0 unreadable)")


@pytest.mark.parametrize("argv, message", [
    (["runs", "list", "--since", "last week"], "--since 'last week': expected a date YYYY-MM-DD"),
    (["runs", "show", "nope"], "nope: no run of that folder name or run id"),
])
def test_runs_command_bad_input_is_one_line(argv, message, tmp_path, capsys):
    results = many_models(tmp_path / "results", 1)
    assert main(argv + ["--results", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert main(["runs", "list", "--results", str(tmp_path / "missing")]) == 2
    assert "no such results folder" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_leaderboard_stops_its_server_on_sigterm(tmp_path):
    results = many_models(tmp_path / "results", 1)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", "leaderboard", "--results", str(results),
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not _listening(port):
            assert proc.poll() is None and time.time() < deadline, "the leaderboard did not start"
            time.sleep(0.5)
        proc.terminate()                                                # SIGTERM to evalkit, not to streamlit
        assert proc.wait(30) == 0
        deadline = time.time() + 15
        while _listening(port) and time.time() < deadline:
            time.sleep(0.2)
        assert not _listening(port), "streamlit still serves after evalkit was stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
