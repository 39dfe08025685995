"""The Streamlit app (dashboards/app.py) through streamlit's AppTest, headless, on real run records
(_dashboard_records.py): every view's widgets and what they show."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("altair")
from streamlit.testing.v1 import AppTest  # noqa: E402

import _dashboard_records as recs  # noqa: E402
from evalkit.dashboards import data as ddata  # noqa: E402
from evalkit.records import load_run  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"


@pytest.fixture(scope="session")
def results(tmp_path_factory) -> Path:
    return recs.fast_records(tmp_path_factory.mktemp("dashboard"))


def start(monkeypatch, results, *battles) -> AppTest:
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", ":".join(map(str, battles)))
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frame(at, column: str):
    """The first dataframe on the page that has ``column``."""
    for df in at.dataframe:
        if column in df.value.columns:
            return df.value
    raise AssertionError(f"no dataframe with column {column!r}: {[list(d.value.columns) for d in at.dataframe]}")


def run_dir(results: Path, model: str, n_docs: int = None) -> Path:
    for p in sorted(results.iterdir()):
        if (p / "run.json").exists():
            r = load_run(p)
            if r.model.get("name") == model and (n_docs is None or next(iter(r.tasks.values()))["n_docs"] == n_docs):
                return p
    raise AssertionError(model)


def gsm50(results) -> str:
    t = load_run(run_dir(results, "gpt3-6b-finetuned", 50)).tasks["gsm8k"]
    return ddata.col_key("gsm8k", t["version"], t["prompt_hash"])


def test_leaderboard_view(monkeypatch, results):
    at = start(monkeypatch, results)
    assert at.title[0].value == "Leaderboard"
    lb = frame(at, "rank")
    assert {"gpt3-175b-verifier", "newstest2017.online-A.0", "claude-3-haiku-20240307",
            "math-reference-2of3"} <= set(lb["model"])
    assert "translation" in lb.columns and any(c.startswith("gsm8k (prompt") for c in lb.columns)
    bleu = load_run(run_dir(results, "newstest2017.uedin-nmt.4722")).metrics("translation")["bleu"]
    cell = lb.set_index("model").loc["newstest2017.uedin-nmt.4722", "translation"]
    assert cell.startswith(f"{bleu['value']:.2f} [{bleu['ci_low']:.2f}, {bleu['ci_high']:.2f}] n=200")
    captions = " ".join(c.value for c in at.caption)
    assert "shares the rank" in captions and "mean win rate" in captions
    assert any("prompts differ" in i.value for i in at.info)

    # metric per column, then sort by that column, best first and worst first
    col = gsm50(results)
    at.selectbox(key=f"metric::{col}").set_value("exact_match_flexible")
    at.selectbox(key="lb_sort").set_value(col)
    rerun(at)
    lb = frame(at, "rank")
    assert list(lb["model"][:3]) == ["gpt3-175b-verifier", "gpt3-175b-finetuned", "gpt3-6b-finetuned"]
    assert list(lb["rank"][:3]) == ["1=", "1=", "3"]
    label = next(c for c in lb.columns if c.startswith("gsm8k (prompt") and "50 docs" in c)
    assert lb[label].iloc[0].startswith("0.540 [0.404, 0.670] n=50 #1=")
    at.toggle(key="lb_best_first").set_value(False)
    rerun(at)
    assert frame(at, "rank")["model"].iloc[0] == "gpt3-6b-finetuned"

    # column chooser and filters
    at.toggle(key="lb_best_first").set_value(True)
    at.multiselect(key="lb_columns").set_value([col])
    rerun(at)
    lb = frame(at, "rank")
    assert [c for c in lb.columns if c not in ("rank", "model", "overall", "coverage")] == [label] and len(lb) == 3
    at.multiselect(key="lb_columns").set_value([])            # empty = all columns
    at.sidebar.multiselect(key="f_tag").set_value(["wmt"])
    rerun(at)
    lb = frame(at, "rank")
    assert [c for c in lb.columns if c not in ("rank", "model", "overall", "coverage")] == ["translation"]
    assert set(lb["model"]) == {"newstest2017.uedin-nmt.4722", "newstest2017.online-A.0"}
    assert list(lb["rank"]) == ["1", "2"] and lb["model"].iloc[0] == "newstest2017.uedin-nmt.4722"


def test_provenance_and_family_filter(monkeypatch, results):
    at = start(monkeypatch, results)
    at.sidebar.multiselect(key="f_family").set_value(["translation"])
    rerun(at)
    assert set(frame(at, "rank")["model"]) == {"newstest2017.uedin-nmt.4722", "newstest2017.online-A.0"}
    at.selectbox(key="prov_model").set_value("newstest2017.online-A.0")
    rerun(at)
    prov = at.table[0].value["value"]
    rec = load_run(run_dir(results, "newstest2017.online-A.0"))
    assert prov["run_id"] == rec.run_id and prov["prompt_hash"] == rec.tasks["translation"]["prompt_hash"]
    assert prov["evalkit_version"] == rec.data["versions"]["evalkit"] and prov["backend"] == "predictions"
    assert prov["created_at"].startswith(rec.data["created_at"][:10])


def test_task_view_chart_breakdowns_and_samples(monkeypatch, results):
    at = start(monkeypatch, results)
    at.sidebar.radio(key="view").set_value("Task")
    rerun(at)
    col = gsm50(results)
    at.selectbox(key="task_col").set_value(col)
    rerun(at)
    at.selectbox(key=f"task_metric::{col}").set_value("exact_match_flexible")
    rerun(at)
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    rule = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "rule")    # the CI whiskers
    assert rule["encoding"]["y"]["sort"] == ["gpt3-175b-verifier", "gpt3-175b-finetuned", "gpt3-6b-finetuned"]
    assert rule["encoding"]["x2"]["field"] == "ci_high"
    table = frame(at, "ci_low")
    assert list(table["rank"]) == [1, 1, 3]

    # samples: failures only, paging, the full text of one sample
    at.selectbox(key="sample_run").set_value(load_run(run_dir(results, "gpt3-6b-finetuned", 50)).run_id)
    rerun(at)
    at.checkbox(key="sample_failures").check()
    rerun(at)
    assert "41 samples" in at.number_input(key="sample_page").label
    shown = frame(at, "response")
    assert len(shown) == 41 and (shown["metric:exact_match_flexible"] == 0).all()
    doc = shown["doc_id"].iloc[0]
    at.selectbox(key="sample_doc").set_value(doc)
    rerun(at)
    sols = [json.loads(line) for line in open(recs.SHARED / "gsm8k" / "example_model_solutions.jsonl")][:50]
    codes = [c.value for c in at.code]
    assert codes[0].startswith("Question:") and codes[0].rstrip().endswith("Answer:")   # the question itself
    assert codes[1].startswith("Question:") and len(codes[1]) > 160        # the few-shot examples, folded
    assert codes[2] == sols[int(doc)]["6b_finetuning"]["solution"]        # the answer in full
    at.text_input(key="sample_query").input("zzz-no-such-text")
    rerun(at)
    assert "0 samples" in at.number_input(key="sample_page").label

    # breakdowns of the MATH-500 column: levels and subjects
    t = load_run(run_dir(results, "math-reference-2of3")).tasks["math500"]
    math_col = ddata.col_key("math500", t["version"], t["prompt_hash"])
    at.selectbox(key="task_col").set_value(math_col)
    rerun(at)
    assert set(at.selectbox(key="bd_dim").options) == {"subject", "level"}
    at.selectbox(key="bd_dim").set_value("level")
    rerun(at)
    bd = frame(at, "math-reference-2of3")
    assert list(bd.columns) == ["math-reference-2of3"] and len(bd) == 5


def test_compare_view(monkeypatch, results):
    at = start(monkeypatch, results)
    at.sidebar.radio(key="view").set_value("Compare")
    rerun(at)
    ids = {load_run(p).run_id: p for p in results.iterdir() if (p / "run.json").exists()}
    base = load_run(run_dir(results, "gpt3-175b-verifier")).run_id
    cand = load_run(run_dir(results, "gpt3-6b-finetuned", 50)).run_id
    assert base in ids and cand in ids
    at.selectbox(key="cmp_base").set_value(base)
    at.selectbox(key="cmp_cand").set_value(cand)
    rerun(at)
    assert at.error and "regression" in at.error[0].value and "exit 1" in at.error[0].value
    table = frame(at, "verdict")
    assert set(table["task"]) == {"gsm8k"} and "regressed" in set(table["verdict"])
    flips = frame(at, "direction")
    assert len(flips) > 0 and set(flips["direction"]) <= {"right → wrong", "wrong → right"}
    at.selectbox(key="cmp_flip").set_value(0)
    rerun(at)
    codes = [c.value for c in at.code]
    assert len(codes) == 3 and codes[1] != codes[2]              # prompt, baseline | candidate
    # different data: refused, then compared on the common docs when allowed
    at.selectbox(key="cmp_base").set_value(load_run(run_dir(results, "gpt3-6b-finetuned", 20)).run_id)
    rerun(at)
    assert at.error and "Not comparable" in at.error[0].value
    at.checkbox(key="cmp_allow_data").check()
    rerun(at)
    assert set(frame(at, "verdict")["n"]) == {"20"} and any("common docs" in i.value for i in at.info)


def test_arena_view(monkeypatch, results):
    at = start(monkeypatch, results)
    at.sidebar.radio(key="view").set_value("Arena")
    rerun(at)
    ratings = frame(at, "rating")
    rec = load_run(next(p for p in results.iterdir() if "arena" in p.name))
    assert list(ratings["model"]) == list(rec.tasks["arena"]["ratings"])
    assert list(ratings["rank"]) == [r["rank"] for r in rec.tasks["arena"]["ratings"].values()]
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert len(specs) == 3                                        # ratings with whiskers + two heatmaps
    assert any(layer["mark"]["type"] == "rect" for s in specs[1:] for layer in s["layer"])


def test_battles_file_and_empty_results(monkeypatch, tmp_path):
    at = start(monkeypatch, tmp_path)
    assert any("No run records" in i.value for i in at.info)
    battles = recs.need("chatbot_arena", "arena_hard_battles.jsonl")
    at = start(monkeypatch, tmp_path, battles)
    lb = frame(at, "rank")
    assert len(lb) == 5 and list(lb.columns)[-1] == "arena"


def test_judge_figures_and_mt_bench_breakdowns(monkeypatch, tmp_path):
    at = start(monkeypatch, recs.mt_bench_like(tmp_path))
    assert any(h.value == "Judge reliability" for h in at.subheader)
    figs = frame(at, "parse_failure_rate")
    assert figs["judge"].iloc[0] == "judge-x" and figs["parse_failure_rate"].iloc[0] == 0.25
    at.sidebar.radio(key="view").set_value("Task")
    rerun(at)
    assert at.selectbox(key="bd_dim").options == ["category", "turn"]
    at.selectbox(key="bd_dim").set_value("turn")
    rerun(at)
    turns = frame(at, "m")
    assert list(turns.index) == ["1", "2"] and turns["m"].iloc[0].startswith("7.000 [6.500, 7.500] n=2")


def test_cli_starts_streamlit_on_loopback_without_usage_stats(tmp_path):
    from evalkit.cli import leaderboard

    cmd = leaderboard.streamlit_command("127.0.0.1", 8600)
    assert cmd[1:3] == ["-m", "evalkit.dashboards.serve"]          # streamlit run app.py, warmed up
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    assert flags["--server.address"] == "127.0.0.1" and flags["--server.port"] == "8600"
    assert flags["--browser.gatherUsageStats"] == "false" and flags["--server.headless"] == "true"
    env = leaderboard.environment(str(tmp_path), [])
    assert env["EVALKIT_DASHBOARD_RESULTS"] == str(tmp_path.resolve())


@pytest.mark.slow
def test_tiny_model_runs_on_the_leaderboard(monkeypatch, tmp_path_factory, tiny_model_dir):
    full = recs.model_records(tmp_path_factory.mktemp("dashboard_full"), tiny_model_dir)
    at = start(monkeypatch, full)
    at.sidebar.multiselect(key="f_tag").set_value(["tiny"])
    rerun(at)
    lb = frame(at, "rank")
    assert list(lb["model"]) == ["smollm2-135m"]                 # one model, one row: its newest run shown
    assert any("several settings" in i.value for i in at.info)
    at.sidebar.toggle(key="f_by_settings").set_value(True)      # a row per setting
    rerun(at)
    lb = frame(at, "rank")
    assert set(lb["model"]) == {"smollm2-135m [max_tokens=16]", "smollm2-135m [max_tokens=4]"}
    cols = [c for c in lb.columns if c not in ("rank", "model", "overall", "coverage")]
    assert len(cols) == 1 and cols[0].startswith("gsm8k (prompt") and "4 docs" in cols[0]
    assert all(" n=4 #1=" in v for v in lb[cols[0]])                         # one column, two rows, tied
    at.sidebar.radio(key="view").set_value("Compare")
    rerun(at)
    runs = {load_run(p).data["config"]["gen_overrides"]["max_tokens"]: load_run(p).run_id
            for p in full.iterdir() if "smollm2" in p.name}
    at.selectbox(key="cmp_base").set_value(runs[16])
    at.selectbox(key="cmp_cand").set_value(runs[4])
    rerun(at)
    table = frame(at, "verdict")
    assert set(table["n"]) == {"4"} and len(table) == 3
