"""One model, one row: runs of one model under other generation settings or backends fill one row
(its newest run per cell, with a note), records made by ``evalkit score --name X`` belong to model X,
two different weights under one name stay apart, and the sidebar's switch splits rows by settings."""
from __future__ import annotations

from evalkit.records import write_run
from evalkit.dashboards import board, tables
from evalkit.dashboards.store import ResultsStore


def _run(out, run_id, minute, model, gen=None, value=0.5):
    metric = {"value": value, "ci_low": value - 0.05, "ci_high": value + 0.05, "n": 100, "kind": "mean",
              "higher_is_better": True}
    run = {"schema_version": 1, "run_id": run_id, "created_at": f"2026-03-01T00:{minute:02d}:00+00:00",
           "model": model, "config": {"gen_overrides": gen or {}},
           "tasks": {"qa": {"version": "1", "prompt_hash": "p", "n_docs": 100, "metrics": {"acc": metric}}}}
    write_run(out, run, {"qa": [{"doc_id": "0", "prompt": "Q", "responses": ["A"], "target": "A",
                                 "metrics": {"acc": 1.0}}]})


def _hf(name, content):
    return {"name": name, "backend": "hf", "spec": f"hf:{name}", "identity_hash": f"{content}-{name}",
            "identity": {"backend": "hf", "model": name, "content": {"sha256": content}}}


def _scored(name, sha):
    return {"name": name, "backend": "predictions", "spec": f"predictions:/tmp/{sha}.jsonl", "identity_hash": sha,
            "identity": {"predictions": f"/tmp/{sha}.jsonl", "sha256": sha}}


def test_a_model_is_one_row_whatever_its_settings_and_scored_files(tmp_path):
    out = tmp_path / "results"
    _run(out, "t0", 1, _hf("llama", "w1"), {"temperature": 0.0}, 0.40)
    _run(out, "t7", 2, _hf("llama", "w1"), {"temperature": 0.7}, 0.45)          # other settings, same weights
    _run(out, "s1", 3, _scored("team-model", "aaa"), value=0.6)
    _run(out, "s2", 4, _scored("team-model", "bbb"), value=0.7)                 # another predictions file
    _run(out, "ft", 5, _hf("llama", "w2"), value=0.9)                           # other weights, same name
    store = ResultsStore(out)
    store.refresh()
    lb = board.build_leaderboard(tables.filter_cells(store.cells(), tables.Filters()))
    rows = dict(zip(lb.display["model"], lb.entries))
    assert len(rows) == 3 and "team-model" in rows
    llamas = sorted(m for m in rows if m.startswith("llama"))
    assert len(llamas) == 2 and all(m.startswith("llama [weights ") for m in llamas)
    shown = lb.cells.set_index("label")["run_id"]
    assert shown["team-model"] == "s2"                                          # the newest run fills the cell
    assert any("several settings" in n for n in lb.notes)
    split = board.build_leaderboard(tables.filter_cells(store.cells(), tables.Filters(by_settings=True)))
    assert len(split.entries) == 5                                              # a row per setting
    assert any("temperature=0.7" in m for m in split.display["model"])
