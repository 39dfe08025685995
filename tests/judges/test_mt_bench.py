"""MT-Bench: FastChat's data and references, two-pass generation, and the tiny model answering and
judging a question end to end (single and pairwise against a published answer file)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evalkit.arena import load_battles
from evalkit.run.cache import ResponseCache
from evalkit.cli import main
from evalkit.taskapi.data import DataError
from evalkit.run.engine import Engine
from evalkit.judges.contestants import parse_model
from evalkit.judges.mt_bench import MTBenchConfig, generate_answers, load_questions, summarize
from evalkit.tasks.mt_bench import MTBench, load_references, temperature_for
from tests.conftest import shared
from tests.judges.test_judges import scripted


@pytest.fixture(scope="module")
def mt_dir() -> Path:
    return shared("mt_bench")


def test_questions_categories_and_temperatures(mt_dir):
    docs = MTBench(data_path=str(mt_dir)).questions()
    assert len(docs) == 80 and all(len(d.meta["turns"]) == 2 for d in docs)
    assert Counter(d.meta["category"] for d in docs) == {c: 10 for c in
        ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")}
    by_id = {d.id: d for d in docs}
    assert by_id["81"].meta["category"] == "writing" and temperature_for(by_id["81"]) == 0.7
    assert temperature_for(by_id["111"]) == 0.0 and temperature_for(by_id["141"]) == 0.1
    cfg = MTBenchConfig(data_path=str(mt_dir), question_ids=["120", "81"], limit=1)
    assert [d.id for d in load_questions(cfg)] == ["120"]
    with pytest.raises(ValueError, match="no question.*999"):
        load_questions(MTBenchConfig(data_path=str(mt_dir), question_ids=["999"]))


def test_run_points_to_the_right_command(capsys):
    assert main(["run", "--model", "hf:smollm2-135m", "--tasks", "mt_bench"]) == 2
    err = capsys.readouterr().err
    assert "evalkit mt-bench" in err and "judge" in err
    assert main(["tasks"]) == 0 and "evalkit mt-bench" in capsys.readouterr().out


def test_reference_sets(mt_dir, tmp_path):
    docs = MTBench(data_path=str(mt_dir)).questions()
    gpt4, info = load_references(docs, "gpt-4", str(mt_dir))
    assert len(gpt4) == 30 == info["n"] and set(gpt4) == {str(i) for i in range(101, 131)}
    assert "Area = 0" in gpt4["111"][0]                       # GPT-4's known mistake
    fixed, info = load_references(docs, "corrected", str(mt_dir))
    assert len(fixed) == 30 and fixed["111"] == ["Area is 3", "5pi"] and info["fallback_to_gpt4"] == ["123"]
    assert fixed["123"] == gpt4["123"]
    assert load_references([d for d in docs if d.meta["category"] == "writing"], "gpt-4")[0] == {}
    with pytest.raises(DataError, match="reference_answer"):
        load_references(docs, "gpt-4", None)
    own = tmp_path / "refs.jsonl"
    own.write_text("".join(json.dumps({"question_id": int(q), "choices": [{"turns": ["x", "y"]}]}) + "\n"
                           for q in gpt4 if q != "130"))
    with pytest.raises(DataError, match="none for question 130"):
        load_references(docs, str(own), str(mt_dir))


def test_two_passes_turn_two_sees_turn_one(mt_dir, tmp_path):
    docs = load_questions(MTBenchConfig(data_path=str(mt_dir), question_ids=["81", "111"]))
    backend = scripted(lambda r: f"  answer to {r.messages[-1][1][:12]!r} after {len(r.messages)} msgs  ")
    c = parse_model("hf:x@seed=5")
    cache = ResponseCache(tmp_path / "c.sqlite")
    try:
        answers = generate_answers(Engine(backend, cache), c, docs, seed=1, max_tokens=32, system_prompt="Be brief.")
    finally:
        cache.close()
    passes = [reqs for kind, reqs in backend.calls if kind == "generate"]
    assert [len(p) for p in passes] == [2, 2]
    r81 = next(r for r in passes[1] if "Hawaii" in r.messages[1][1])
    assert [m[0] for m in r81.messages] == ["system", "user", "assistant", "user"]
    assert r81.messages[2][1] == answers["81"][0] and answers["81"][0].startswith("answer to")  # stripped
    assert r81.params.temperature == 0.7 and r81.params.seed is not None and r81.params.max_tokens == 32
    r111 = next(r for r in passes[1] if r is not r81)
    assert r111.params.temperature == 0.0 and r111.params.seed is None


@pytest.mark.slow
def test_tiny_model_answers_and_judges_end_to_end(mt_dir, tiny_model_dir, tmp_path, capsys, monkeypatch):
    """Done-when: the tiny model answers MT-Bench and (as the judge) grades it, single and pairwise
    against a published answer file; the record has ratings and the reliability figures."""
    out, cache = tmp_path / "results", tmp_path / "cache"
    alpaca_file = str(mt_dir / "model_answer" / "alpaca-13b.jsonl")
    args = ["mt-bench", "--model", f"hf:{tiny_model_dir}", "--answers", alpaca_file,
            "--baseline", "alpaca-13b", "--mode", "single,pairwise", "--judge", f"hf:{tiny_model_dir}",
            "--data", str(mt_dir), "--questions", "116", "--max-tokens", "16", "--judge-max-tokens", "16",
            "--judge-retries", "0", "--output", str(out), "--cache-dir", str(cache)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "score_turn1" in printed and "win_rate" in printed and "swap disagreement" in printed
    runs = {json.loads((p / "run.json").read_text())["model"]["name"]: p for p in out.iterdir()}
    assert set(runs) == {"smollm2-135m", "alpaca-13b"}
    tiny = json.loads((runs["smollm2-135m"] / "run.json").read_text())
    t = tiny["tasks"]["mt_bench"]
    assert set(t["metrics"]) == {"score", "score_turn1", "score_turn2", "win_rate"}
    assert 1 <= t["metrics"]["score"]["value"] <= 10 and t["metrics"]["score"]["n"] == 2
    assert 0 <= t["metrics"]["win_rate"]["value"] <= 1 and set(t["breakdowns"]) == {"math"}
    judge = t["extra"]["judge"]
    assert judge["name"] == "hf:smollm2-135m" and tiny["judge"]["identity_hash"] == judge["identity_hash"]
    single, pair = judge["single"], judge["pairwise"]
    assert single["n_judgments"] == 2 and pair["n_judgments"] == 4 and pair["n_pairs"] == 2
    for figs in (single, pair):
        assert 0 <= figs["parse_failure_rate"] <= 1
        assert figs["parsed_first_try"] + figs["parsed_on_retry"] + figs["parse_failures"] == figs["n_judgments"]
        assert figs["unresolved"] == 0            # constrained verdicts resolve what parsing could not
    assert pair["swap_disagreement_rate"] is not None and pair["opponents"]["alpaca-13b"]
    assert t["extra"]["templates"]["single-ref"]["name"] == "single-math-v1"
    assert t["extra"]["references"]["set"] == "gpt-4" and tiny["model"]["backend"] == "hf"
    rows = [json.loads(x) for x in (runs["smollm2-135m"] / "samples_mt_bench.jsonl").read_text().splitlines()]
    assert [r["doc_id"] for r in rows] == ["116"] and len(rows[0]["responses"]) == 2
    js = rows[0]["extra"]["judgments"]
    assert [j["turn"] for j in js] == [1, 2] and js[0]["template"] == "single-math-v1"
    assert "x+y = 4z" in js[0]["user_prompt"] and "[The Start of Reference Answer]" in js[0]["user_prompt"]
    # on the shared judge layer: each sample's record of both gradings and the layer's figures beside MT-Bench's
    layer = rows[0]["extra"]["judged"]
    rated, duel = layer["mt_bench_single"], layer["mt_bench_pairwise"]
    assert rated["kind"] == "pointwise" and rated["asks"] == 2
    assert [rated["verdicts"]["turn1"], rated["verdicts"]["turn2"]] == [j["value"] for j in js]
    assert duel["kind"] == "pairwise" and set(duel["verdicts"]) == {"turn1:g1", "turn1:g2", "turn2:g1", "turn2:g2"}
    games = rows[0]["extra"]["pairwise"]
    assert [duel["verdicts"][f"turn{g['turn']}:g1"] for g in games] == [g["g1"]["value"] for g in games]
    assert single["asks"] == 2 and len(rated["parse_failures"]) == single["parse_failures"]
    assert pair["asks"] == 4 and pair["kind"] == "pairwise" and pair["swap_games"] in (0, 1)
    if pair["swap_games"]:
        assert pair["swap_consistency"] == float(pair["swap_disagreements"] == 0)
    # the leaderboard's task page on the real record: the judge and its figures beside the score
    from _dashboard_records import app_page
    page = app_page(out, monkeypatch)
    table = next(d.value for d in page.dataframe if "judge parse failures" in d.value.columns)
    assert set(table["judge"]) == {"hf:smollm2-135m"}
    battles = load_battles(runs["smollm2-135m"] / "battles_mt_bench.jsonl")
    assert len(battles) == 2 and {b.extra["turn"] for b in battles} == {1, 2}
    assert all(b.model_a == "smollm2-135m" and b.model_b == "alpaca-13b" and b.judge == "hf:smollm2-135m"
               for b in battles)
    alpaca = json.loads((runs["alpaca-13b"] / "run.json").read_text())
    assert alpaca["model"]["backend"] == "imported" and alpaca["tasks"]["mt_bench"]["metrics"]["score"]["n"] == 2
    # a rerun answers and judges nothing anew: everything is in the cache
    assert main(args[:-4] + ["--output", str(tmp_path / "again"), "--cache-dir", str(cache)]) == 0
    again = json.loads(next((tmp_path / "again").iterdir()).joinpath("run.json").read_text())
    assert again["judge_engine"].get("computed", 0) == 0 and again["judge_engine"]["cached"] > 0
    assert again["engine"].get("computed", 0) == 0 or again["model"]["backend"] == "imported"


def test_summary_counts_failures_not_drops():
    from evalkit.judges.judge import Judgment
    from evalkit.taskapi.task import Doc
    docs = [Doc("1", "q", meta={"category": "math", "turns": ["a", "b"]}),
            Doc("2", "q", meta={"category": "writing", "turns": ["a", "b"]})]
    js = []
    for qid, turn, v in (("1", 1, 8.0), ("1", 2, None), ("2", 1, 4.0), ("2", 2, 6.0)):
        j = Judgment("t", "v", "p", value=v, source="parsed" if v else "failed")
        j.meta = {"qid": qid, "turn": turn, "category": "math" if qid == "1" else "writing"}
        js.append(j)
    metrics, breakdowns, per_q = summarize(docs, js, [], "m")
    assert metrics["score"].value == pytest.approx(6.0) and metrics["score"].n == 3
    assert metrics["score_turn2"].n == 1 and breakdowns["math"]["score"].value == 8.0
    assert per_q["1"] == {"score_turn1": 8.0, "score_turn2": None, "score": 8.0}
