"""The leaderboard's data layer (evalkit.dashboards.data/tables/pairs) on real run records written
by ``evalkit score`` and ``evalkit arena rate`` (see _dashboard_records.py); no Streamlit."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import _dashboard_records as recs
from evalkit.arena import battle_count_matrix, load_battles, win_rate_matrix
from evalkit.cli import main
from evalkit.compare import NotComparable
from evalkit.compare.analysis import CompareOptions
from evalkit.dashboards import board, data, pairs, tables
from evalkit.records import load_run
from evalkit.records.index import INDEX_NAME


@pytest.fixture(scope="session")
def results(tmp_path_factory) -> Path:
    return recs.fast_records(tmp_path_factory.mktemp("dashboard"))


@pytest.fixture
def store(results) -> data.ResultsStore:
    s = data.ResultsStore(results)
    s.refresh()
    return s


def run_of(store, model: str, n_docs: int = None) -> str:
    c = store.cells()
    sel = c[(c["model"] == model) & ((c["n_docs"] == n_docs) if n_docs else True)]
    return sel["run_id"].iloc[0]


def gsm_col(store, n_docs: int) -> str:
    c = store.cells()
    return c[(c["task"] == "gsm8k") & (c["n_docs"] == n_docs)]["col"].iloc[0]


def test_data_layer_does_not_import_streamlit():
    code = ("import sys; import evalkit.dashboards.data, evalkit.dashboards.tables, evalkit.dashboards.pairs, "
            "evalkit.dashboards.charts; assert 'streamlit' not in sys.modules, 'streamlit imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_summaries_first_samples_on_demand_and_refresh(results, tmp_path, monkeypatch):
    root = tmp_path / "r"
    shutil.copytree(results, root)
    (root / INDEX_NAME).unlink(missing_ok=True)         # copied with its mtimes: it would still be valid
    loads, sample_reads = [], []
    from evalkit.dashboards import samples as dsamples
    from evalkit.records import index as run_index          # the store reads records through the run index
    real_load, real_read = run_index.load_run, dsamples.read_samples
    monkeypatch.setattr(run_index, "load_run", lambda p: loads.append(p) or real_load(p))
    monkeypatch.setattr(dsamples, "read_samples", lambda path: sample_reads.append(path.name) or real_read(path))
    s = data.ResultsStore(root)
    assert s.refresh() and len(loads) == len(list(root.glob("*/run.json"))) == 8
    assert len(s.cells()) > 0 and sample_reads == []          # summaries only
    assert not s.refresh() and len(loads) == 8                # nothing changed: nothing re-read
    v = s.version
    target = next(root.glob("*gpt3-175b-verifier*/run.json"))
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert s.refresh() and len(loads) == 9 and s.version == v + 1   # only the touched record
    shutil.rmtree(next(root.glob("*online-A*")))
    assert s.refresh() and "newstest2017.online-A.0" not in set(s.cells()["model"])
    run_id = run_of(s, "gpt3-6b-finetuned", 50)
    first = s.samples(run_id, "gsm8k")
    again = s.samples(run_id, "gsm8k")
    assert first is again and sample_reads == ["samples_gsm8k.jsonl"] and len(first) == 50


def test_cells_are_the_records_numbers(store):
    cells = store.cells()
    for rec in store.records().values():
        for task, t in rec.tasks.items():
            got = cells[(cells["run_id"] == rec.run_id) & (cells["task"] == task)].set_index("metric")
            if task == "arena":
                for model, r in t["ratings"].items():
                    row = got[got["model"] == model].iloc[0]
                    assert (row["value"], row["ci_low"], row["ci_high"], row["n"]) == (
                        r["rating"], r["ci_low"], r["ci_high"], r["n_battles"])
                continue
            assert list(got.index) == list(t["metrics"])
            for m, mv in t["metrics"].items():
                assert got.loc[m, "value"] == pytest.approx(mv["value"]) and got.loc[m, "n"] == mv["n"]
                assert got.loc[m, "ci_low"] == pytest.approx(mv["ci_low"])
                assert got.loc[m, "ci_high"] == pytest.approx(mv["ci_high"])
                assert got.loc[m, "prompt_hash"] == t["prompt_hash"]


def test_rows_and_columns_keep_differing_prompts_apart(store):
    cells = store.cells()
    meta = tables.columns(cells).set_index("col")
    gsm = meta[meta["task"] == "gsm8k"]
    assert len(gsm) == 2                                   # 50 and 20 questions: different prompt sets
    for col, row in gsm.iterrows():
        n = cells[cells["col"] == col]["n_docs"].iloc[0]
        assert row["col_label"].startswith("gsm8k (prompt ") and f"{n} docs" in row["col_label"]
        assert "prompts differ" in row["col_note"]
    big = cells[cells["col"] == gsm_col(store, 50)]
    assert set(big["model"]) == set(recs.GPT3.values())
    small = cells[cells["col"] == gsm_col(store, 20)]
    assert set(small["model"]) == {"gpt3-6b-finetuned"}
    assert set(small["entry"]) <= set(big["entry"])        # same system, same row, two columns
    mt = meta[meta["task"] == "translation"]
    assert list(mt["col_label"]) == ["translation"] and mt["family"].iloc[0] == "translation"
    assert cells[cells["task"] == "translation"]["model"].nunique() == 2
    arena = cells[cells["task"] == "arena"]
    assert arena["model"].nunique() == 5 and set(arena["backend"]) == {"arena"}


def test_tied_ranks_rule():
    # real GSM8K intervals (6B, 175B finetuned, 175B verifier on 50 questions)
    v, lo, hi = [0.18, 0.32, 0.54], [0.0977, 0.2076, 0.4040], [0.3080, 0.4581, 0.6703]
    assert list(tables.tied_ranks(v, lo, hi)) == [3, 1, 1]
    # C overlaps the leader A but comes after B, which does not: C joins B's group (ranks stay monotone)
    assert list(tables.tied_ranks([10, 9, 8], [9.5, 8.9, 7.0], [10.5, 9.1, 9.6])) == [1, 2, 2]
    assert list(tables.tied_ranks([60, 65], [59, 64], [61, 66], higher_is_better=False)) == [1, 2]
    r = tables.tied_ranks([0.5, np.nan, 0.5, 0.4], [None] * 4, [None] * 4)
    assert r[0] == r[2] == 1 and np.isnan(r[1]) and r[3] == 3     # no CI: point intervals
    assert list(tables.win_rates([1.0, 1.0, 0.0])) == [0.75, 0.75, 0.0]
    assert list(tables.win_rates([3.0, 1.0], higher_is_better=False)) == [0.0, 1.0]


def test_leaderboard_cells_ranks_overall_and_sorting(store):
    cells = tables.filter_cells(store.cells(), tables.Filters())
    g50 = gsm_col(store, 50)
    tr = cells[cells["task"] == "translation"]["col"].iloc[0]
    lb = board.build_leaderboard(cells, {g50: "exact_match_flexible"}, [g50, tr], sort_by=g50)
    d = lb.display.set_index("model")
    label = lb.column_labels[g50]
    top = list(lb.display["model"][:3])
    assert top == ["gpt3-175b-verifier", "gpt3-175b-finetuned", "gpt3-6b-finetuned"]
    assert list(lb.display["rank"][:3]) == ["1=", "1=", "3"]
    rec = store.record(run_of(store, "gpt3-175b-verifier", 50)).metrics("gsm8k")["exact_match_flexible"]
    assert d.loc["gpt3-175b-verifier", label] == (
        f"{rec['value']:.3f} [{rec['ci_low']:.3f}, {rec['ci_high']:.3f}] n=50 #1=")
    assert d.loc["gpt3-6b-finetuned", label].endswith("n=50 #3")
    bleu = store.record(run_of(store, "newstest2017.uedin-nmt.4722")).metrics("translation")["bleu"]
    assert d.loc["newstest2017.uedin-nmt.4722", "translation"].startswith(
        f"{bleu['value']:.2f} [{bleu['ci_low']:.2f}, {bleu['ci_high']:.2f}] n=200")
    ov = lb.values[tables.OVERALL]
    assert ov.to_dict() == pytest.approx({e: x for e, x in ov.items()}, nan_ok=True)
    by_model = dict(zip(lb.display["model"], lb.display[tables.OVERALL]))
    # the overall ranks over the column most models share (GSM8K, 3 models); the WMT rows cover none of it
    assert lb.overall_cols == [g50]
    assert by_model["gpt3-175b-verifier"].startswith("1.000 [")
    assert by_model["gpt3-175b-finetuned"].startswith("0.500 [")
    cover = dict(zip(lb.display["model"], lb.display["coverage"]))
    assert by_model["newstest2017.uedin-nmt.4722"] == "–" and cover["newstest2017.uedin-nmt.4722"] == "0/1"
    worst_first = board.build_leaderboard(cells, {g50: "exact_match_flexible"}, [g50], g50, best_first=False)
    assert list(worst_first.display["model"][:3]) == top[::-1]
    by_overall = board.build_leaderboard(cells, {g50: "exact_match_flexible"}, [g50, tr])
    assert list(by_overall.values[tables.OVERALL].dropna()) == sorted(by_overall.values[tables.OVERALL].dropna(),
                                                                      reverse=True)
    assert lb.notes and "prompts differ" in lb.notes[0]


def test_lower_is_better_column_sorts_ascending(store):
    cells = store.cells()
    tr = cells[cells["task"] == "translation"]["col"].iloc[0]
    lb = board.build_leaderboard(cells, {tr: "ter"}, [tr], sort_by=tr)
    ter = {m: store.record(run_of(store, m)).metrics("translation")["ter"]["value"] for m in lb.display["model"]}
    assert list(lb.display["model"]) == sorted(ter, key=ter.get)          # lower TER first
    assert lb.display["rank"].iloc[0].startswith("1")


def test_filters(store, results, tmp_path):
    cells = store.cells()
    only = lambda **kw: tables.filter_cells(cells, tables.Filters(**kw))  # noqa: E731
    assert set(only(families=["translation"])["task"]) == {"translation"}
    assert set(only(backends=["arena"])["task"]) == {"arena"}
    assert set(only(tags=["wmt"])["model"]) == {"newstest2017.uedin-nmt.4722", "newstest2017.online-A.0"}
    day = cells["created_at"].max().date()
    assert len(only(since=day, until=day)) == len(only())
    assert len(only(since=day + pd.Timedelta(days=1))) == 0 and len(only(until=day - pd.Timedelta(days=1))) == 0
    # a second run in the same cell (a rescore of a saved run): newest shown, both kept when asked
    root = tmp_path / "r"
    shutil.copytree(results, root)
    old = next(p for p in root.glob("*gpt3-6b-finetuned*") if load_run(p).tasks["gsm8k"]["n_docs"] == 50)
    assert main(["score", "--task", "gsm8k", "--predictions", str(old), "--output", str(root)]) == 0
    s = data.ResultsStore(root)
    s.refresh()
    c = s.cells()
    col = c[(c["task"] == "gsm8k") & (c["n_docs"] == 50)]["col"].iloc[0]
    mine = c[(c["model"] == "gpt3-6b-finetuned") & (c["col"] == col) & (c["metric"] == "exact_match_flexible")]
    assert len(mine) == 2 and set(mine["n_runs"]) == {2}
    latest = tables.filter_cells(c, tables.Filters())
    kept = latest[(latest["model"] == "gpt3-6b-finetuned") & (latest["col"] == col)
                  & (latest["metric"] == "exact_match_flexible")]
    assert len(kept) == 1 and kept["created_at"].iloc[0] == mine["created_at"].max()
    assert len(tables.filter_cells(c, tables.Filters(latest_only=False))) == len(c)
    lb = board.build_leaderboard(latest, None, [col])
    assert any("several runs" in n for n in lb.notes)


def test_provenance_names_every_cells_run(store):
    cells = tables.filter_cells(store.cells(), tables.Filters())
    lb = board.build_leaderboard(cells)
    prov = tables.provenance(store, lb.cells)
    assert len(prov) == len(lb.cells.drop_duplicates(["entry", "col"]))
    for _, p in prov.iterrows():
        rec = store.record(p["run_id"])
        task = lb.cells[lb.cells["run_id"] == p["run_id"]]["task"].iloc[0]
        assert p["prompt_hash"] == rec.tasks[task]["prompt_hash"]
        assert p["task_version"] == str(rec.tasks[task]["version"])
        assert p["evalkit_version"] == rec.data["versions"]["evalkit"]
        assert p["identity_hash"] == rec.model["identity_hash"] and p["backend"] == rec.model["backend"]
        assert p["created_at"].startswith(rec.data["created_at"][:19].replace("T", " "))


def test_samples_frame_and_failures(store):
    run_id = run_of(store, "gpt3-6b-finetuned", 50)
    frame = store.samples(run_id, "gsm8k")
    sols = [json.loads(line) for line in open(recs.SHARED / "gsm8k" / "example_model_solutions.jsonl")][:50]
    assert frame["response"].iloc[0] == sols[0]["6b_finetuning"]["solution"]
    assert frame["prompt"].iloc[0].rstrip().endswith("Answer:") and frame["target"].iloc[0] == "18"
    assert set(data.sample_metrics(frame)) >= {"exact_match_strict", "exact_match_flexible"}
    acc = store.record(run_id).metrics("gsm8k")["exact_match_flexible"]["value"]
    fails = data.failures(frame, "exact_match_flexible")
    assert fails.sum() == round(50 * (1 - acc)) == 41
    wrong = frame[fails]
    assert (wrong["metric:exact_match_flexible"] == 0).all()
    tr = store.samples(run_of(store, "newstest2017.online-A.0"), "translation")
    assert len(tr) == 200 and data.sample_metrics(tr) == [] and not data.failures(tr, "bleu").any()


def test_redacted_tasks_never_reach_the_frames(results, tmp_path):
    src = next(p for p in results.glob("*gpt3-6b-finetuned*") if load_run(p).tasks["gsm8k"]["n_docs"] == 20)
    dst = tmp_path / "r" / src.name
    shutil.copytree(src, dst)
    run = json.loads((dst / "run.json").read_text())
    run["tasks"] = {"gpqa_diamond": {**run["tasks"]["gsm8k"], "samples_file": "samples_gpqa_diamond.jsonl"}}
    (dst / "run.json").write_text(json.dumps(run))
    (dst / "samples_gsm8k.jsonl").rename(dst / "samples_gpqa_diamond.jsonl")
    s = data.ResultsStore(tmp_path / "r")
    s.refresh()
    frame = s.samples(run["run_id"], "gpqa_diamond")
    assert len(frame) == 20 and frame.attrs["redacted"]
    for col in ("prompt", "response", "target", "extracted"):
        assert set(frame[col]) == {data.HIDDEN}
    assert "metric:exact_match_flexible" in frame          # ids and metrics stay


def test_breakdowns_math_levels_and_subjects(store):
    cells = store.cells()
    col = cells[cells["task"] == "math500"]["col"].iloc[0]
    bd = tables.breakdowns(store, cells, col)
    rec = store.record(cells[cells["col"] == col]["run_id"].iloc[0])
    assert set(bd["dimension"]) == {"subject", "level"}
    lv = bd[(bd["dimension"] == "level") & (bd["metric"] == "math_verify")].set_index("group")
    want = rec.tasks["math500"]["breakdowns"]
    assert set(lv.index) == {k.split(":")[1] for k in want if k.startswith("level:")}
    for g, row in lv.iterrows():
        assert row["value"] == want[f"level:{g}"]["math_verify"]["value"] and row["n"] == want[f"level:{g}"][
            "math_verify"]["n"]
    assert lv["n"].sum() == 30


def test_mt_bench_categories_turns_and_judge_figures(tmp_path):
    s = data.ResultsStore(recs.mt_bench_like(tmp_path))
    s.refresh()
    col = s.cells()["col"].iloc[0]
    bd = tables.breakdowns(s, s.cells(), col)
    cats = bd[bd["dimension"] == "category"].set_index("group")["value"].to_dict()
    turns = bd[bd["dimension"] == "turn"].set_index("group")
    assert cats == {"writing": 8.0, "math": 4.0}
    assert turns["value"].to_dict() == {"1": 7.0, "2": 5.0} and set(turns["metric"]) == {"score"}
    j = tables.judge_reliability(s)
    assert len(j) == 1 and j["judge"].iloc[0] == "judge-x" and j["parse_failure_rate"].iloc[0] == 0.25


def test_compare_is_evalkit_compare(store, capsys):
    base, cand = run_of(store, "gpt3-175b-verifier", 50), run_of(store, "gpt3-6b-finetuned", 50)
    c = pairs.compare(store, base, cand)
    frame = pairs.comparison_frame(c)
    capsys.readouterr()
    rc = main(["compare", str(store.record(base).path), str(store.record(cand).path), "--format", "json"])
    cli = json.loads(capsys.readouterr().out)
    assert rc == c.exit_code == 1
    assert list(frame["verdict"]) == [r["verdict"] for r in cli["rows"]]
    assert [float(x.split()[0]) for x in frame["diff"]] == pytest.approx(
        [round(r["diff"] * r["scale"], 2) for r in cli["rows"]])
    flips = pairs.flipped_items(store, c, base, cand)
    f = cli["flips"]["gsm8k"]
    assert len(flips) == f["n_right_to_wrong"] + f["n_wrong_to_right"] > 0
    assert sorted(flips[flips["direction"] == "right → wrong"]["doc_id"]) == sorted(map(str, f["right_to_wrong_ids"]))
    doc = flips["doc_id"].iloc[0]
    b = store.samples(base, "gsm8k").set_index("doc_id").loc[doc]
    k = store.samples(cand, "gsm8k").set_index("doc_id").loc[doc]
    assert flips["baseline"].iloc[0].startswith(b["response"]) and flips["candidate"].iloc[0].startswith(k["response"])
    text = pairs.comparison_text(c)
    assert text["verdict"] == "regression" and text["power"]


def test_compare_refuses_different_data_unless_allowed(store):
    base, cand = run_of(store, "gpt3-6b-finetuned", 50), run_of(store, "gpt3-6b-finetuned", 20)
    with pytest.raises(NotComparable, match="different data"):
        pairs.compare(store, base, cand)
    c = pairs.compare(store, base, cand, CompareOptions(allow_data_change=True))
    assert {r.n for r in c.rows} == {20} and c.notes


def test_arena_board_matches_the_battles(store):
    boards = pairs.arena_boards(store)
    assert len(boards) == 1
    b = boards[0]
    rec = store.record(b.run_id)
    assert list(b.ratings["model"]) == list(rec.tasks["arena"]["ratings"])
    battles = load_battles(rec.path / "battles.jsonl")
    order = list(b.ratings["model"])
    want = win_rate_matrix(battles, order)
    np.testing.assert_allclose(b.win_rate.to_numpy(), want.to_numpy(), atol=1e-4)
    np.testing.assert_array_equal(b.battle_count.to_numpy(), battle_count_matrix(battles, order).to_numpy())
    assert b.ratings.set_index("model")["n_battles"].to_dict() == {
        m: int(battle_count_matrix(battles, order).loc[m].sum()) for m in order}


def test_battles_file_is_rated_in_memory(tmp_path):
    path = recs.need("chatbot_arena", "arena_hard_battles.jsonl")
    s = data.ResultsStore(tmp_path, battles=[path], rating_rounds=10)
    s.refresh()
    c = s.cells()
    assert set(c["task"]) == {"arena"} and c["model"].nunique() == 5
    assert c.set_index("model").loc["claude-3-haiku-20240307", "n"] == 2136
    assert len(pairs.arena_boards(s)) == 1 and not s.refresh()


def test_hundreds_of_runs_and_samples_stay_fast(results, tmp_path):
    """300 run records (copies of a real one under other names) and one task with 200,000 samples."""
    src = next(p for p in results.glob("*gpt3-6b-finetuned*") if load_run(p).tasks["gsm8k"]["n_docs"] == 50)
    root = tmp_path / "many"
    run = json.loads((src / "run.json").read_text())
    lines = (src / "samples_gsm8k.jsonl").read_text().splitlines()
    for i in range(300):
        d = root / f"run{i:03d}"
        d.mkdir(parents=True)
        r = {**run, "run_id": f"run{i:03d}", "model": {**run["model"], "name": f"model-{i % 150}",
                                                       "identity_hash": f"h{i}"}}
        (d / "run.json").write_text(json.dumps(r))
        os.link(src / "samples_gsm8k.jsonl", d / "samples_gsm8k.jsonl")
    big = root / "run000" / "samples_gsm8k.jsonl"
    big.unlink()                                           # a hard link: never write through it
    with open(big, "w") as f:
        for k in range(200_000):
            row = json.loads(lines[k % 50])
            row["doc_id"] = str(k)
            f.write(json.dumps(row) + "\n")
    s = data.ResultsStore(root)
    t0 = time.perf_counter()
    s.refresh()
    cells = tables.filter_cells(s.cells(), tables.Filters())
    lb = board.build_leaderboard(cells)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert not s.refresh()
    t_again = time.perf_counter() - t0
    t0 = time.perf_counter()
    frame = s.samples("run000", "gsm8k")
    t_samples = time.perf_counter() - t0
    t0 = time.perf_counter()
    s.samples("run000", "gsm8k")
    t_cached = time.perf_counter() - t0
    print(f"\n300 runs: first load + leaderboard {t_first:.2f}s, refresh {t_again * 1000:.1f}ms; "
          f"200k samples: read {t_samples:.2f}s, cached {t_cached * 1000:.2f}ms")
    big.unlink()                                           # ~0.5 GB: don't leave it in pytest's tmp
    assert len(lb.display) == 150 and len(frame) == 200_000     # two runs per model (same name and weights)
    assert t_first < 60 and t_again < 2 and t_samples < 120 and t_cached < 1
