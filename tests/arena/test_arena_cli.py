"""``evalkit arena``: rating imported battles, scheduling, and judged arenas on the tiny model."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evalkit.arena import Battle, compute_bt, load_battles
from evalkit.cli import main
from evalkit.judges.arena import Scheduler, rate
from evalkit.taskapi.task import Doc
from tests.conftest import shared


def _record(out: Path) -> tuple[Path, dict]:
    (path,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    return path, json.loads((path / "run.json").read_text())


def test_rate_imported_arena_hard_battles(tmp_path, capsys):
    src = shared("chatbot_arena", "arena_hard_battles.jsonl")
    assert main(["arena", "rate", str(src), "--output", str(tmp_path), "--rounds", "20"]) == 0
    printed = capsys.readouterr().out
    assert "claude-3-5-sonnet-20240620" in printed and "2136 battles" in printed
    path, run = _record(tmp_path)
    arena = run["tasks"]["arena"]
    battles = load_battles(src)
    fit = compute_bt(battles)
    assert list(arena["ratings"]) == list(fit)                     # ordered by rating
    for m, r in arena["ratings"].items():
        assert r["rating"] == pytest.approx(fit[m], abs=0.01)
        assert r["ci_low"] <= r["rating"] <= r["ci_high"] and r["rank"] >= 1
        assert r["wins"] + r["losses"] + r["ties"] == r["n_battles"]
    assert arena["ratings"]["claude-3-haiku-20240307"]["n_battles"] == 2136
    ex = arena["extra"]
    assert ex["battle_count_matrix"]["gpt-4o"]["claude-3-haiku-20240307"] == 554
    wr = ex["win_rate_matrix"]
    assert wr["gpt-4o"]["gpt-4o"] is None and 0.8 < wr["gpt-4o"]["claude-3-haiku-20240307"] < 1
    assert sum(ex["outcomes"].values()) == 2136 and arena["n_docs"] == 2136
    assert load_battles(path / arena["battles_file"]) == battles   # the record keeps its battles
    assert run["model"]["backend"] == "arena" and run["config"]["arena"]["method"] == "bt"


def test_rate_elo_anchor_and_errors(tmp_path, capsys):
    f = tmp_path / "b.json"
    f.write_text(json.dumps([{"model_a": "x", "model_b": "y", "winner": "model_a"},
                             {"model_a": "y", "model_b": "z", "winner": "tie (bothbad)"},
                             {"model_a": "z", "model_b": "x", "winner": "model_a"},
                             {"model_a": "y", "model_b": "x", "winner": "model_a"}]))
    s = rate(load_battles(f), "bt", rounds=10, seed=1, anchor="y", anchor_rating=1200)
    assert s["ratings"]["y"]["rating"] == 1200 and s["anchor"] == "y"
    e = rate(load_battles(f), "elo", rounds=10, seed=1)
    assert e["point"] == "median" and set(e["ratings"]) == {"x", "y", "z"}
    assert main(["arena", "rate", str(f), "--no-output", "--method", "elo", "--rounds", "5"]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"model_a": "x", "model_b": "y", "winner": "model_a"}\n'
                   '{"model_a": "x", "model_b": "y", "winner": "a"}\n')
    assert main(["arena", "rate", str(bad), "--no-output"]) == 2
    assert "bad.jsonl:2: field 'winner'" in capsys.readouterr().err


def test_budgeted_schedule_spends_exactly_the_budget_on_informative_pairs():
    docs = [Doc(str(i), f"p{i}", meta={"turns": [f"p{i}"], "category": "general"}) for i in range(6)]
    s = Scheduler(["a", "b", "c"], docs, budget=7, seed=3, round_size=3)
    first = s.next_round([])
    assert len(first) == 3 and {(a, b) for a, b, _ in first} == {("a", "b"), ("a", "c"), ("b", "c")}
    # a beats everyone, b-c tie: the b-c pair stays the least known
    battles = [Battle("0", "a", "b", "model_a"), Battle("0", "a", "c", "model_a"), Battle("0", "b", "c", "tie")]
    second = s.next_round(battles)
    assert len(second) == 3 and second[0][:2] == ("b", "c")     # the least known pair goes first
    third = s.next_round(battles)
    assert [m[:2] for m in third] == [("b", "c")] and s.next_round(battles) == [] and s.spent == 7
    assert Counter(m[:2] for m in first + second + third)[("b", "c")] == 3
    seen = [(a, b, d.id) for a, b, d in first + second + third]
    assert len(seen) == len(set(seen))                       # never the same prompt twice for a pair
    full = Scheduler(["a", "b"], docs, budget=None, seed=0)
    assert len(full.next_round([])) == 6 and full.next_round([]) == []


def test_run_validates_before_loading_models(tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "1", "prompt": "Hi"}\n{"id": "1", "prompt": "Again"}\n')
    assert main(["arena", "run", "--models", "hf:a,hf:b", "--prompts", str(prompts), "--judge", "hf:a",
                 "--no-output", "--no-cache"]) == 2
    assert "appear more than once" in capsys.readouterr().err
    assert main(["arena", "run", "--models", "hf:a", "--prompts", str(prompts), "--judge", "hf:a",
                 "--no-cache"]) == 2
    assert "at least two models" in capsys.readouterr().err
    assert main(["arena", "run", "--models", "hf:a,hf:a", "--prompts", str(prompts), "--judge", "hf:a",
                 "--no-cache"]) == 2
    assert "@name=" in capsys.readouterr().err
    assert main(["arena", "run", "--models", "hf:a,hf:b", "--judge", "hf:j@temperature=1"]) == 2
    assert "no @overrides" in capsys.readouterr().err


@pytest.mark.slow
def test_three_sampling_variants_of_the_tiny_model_end_to_end(tiny_model_dir, tmp_path, capsys):
    """Done-when (arena): three small models (the tiny model greedy and at two sampling settings),
    judged pairwise by the tiny model on CPU, rated."""
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "capital", "prompt": "What is the capital of France?"}\n'
                       '{"id": "add", "prompt": "What is 2+3?", "reference": "5"}\n')
    m = f"hf:{tiny_model_dir}"
    models = f"{m},{m}@temperature=0.8@seed=1@name=warm,{m}@temperature=1.2@top_p=0.9@name=hot"
    out = tmp_path / "results"
    assert main(["arena", "run", "--models", models, "--prompts", str(prompts), "--judge", m, "--max-tokens", "12",
                 "--judge-max-tokens", "16", "--judge-retries", "1", "--rounds", "20", "--output", str(out),
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    printed = capsys.readouterr().out
    assert "warm" in printed and "hot" in printed and "swap disagreement" in printed
    path, run = _record(out)
    arena = run["tasks"]["arena"]
    assert set(arena["ratings"]) == {"smollm2-135m", "warm", "hot"}
    battles = load_battles(path / "battles.jsonl")
    rel = arena["extra"]["judge_reliability"]
    assert rel["n_pairs"] == 6 and rel["n_judgments"] == 12 and len(battles) == 6 - rel["unresolved_pairs"]
    assert rel["parsed_first_try"] + rel["parsed_on_retry"] + rel["parse_failures"] == 12
    assert all(b.judge == "hf:smollm2-135m" and b.extra["turn"] == 1 for b in battles)
    assert {b.extra["template"] for b in battles if b.prompt_id == "add"} <= {"pair-math-v1"}
    assert sum(r["n_battles"] for r in arena["ratings"].values()) == 2 * len(battles)
    rows = [json.loads(x) for x in (path / "samples_arena.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["g1"]["outputs"] and r["g2"]["outputs"] for r in rows)
    # each variant generated its own answers (distinct requests, so none came from another's cache)
    assert {n: run["engine"][n]["computed_generate"] for n in ("smollm2-135m", "warm", "hot")} == {
        "smollm2-135m": 2, "warm": 2, "hot": 2}


@pytest.mark.slow
def test_published_answer_files_judged_pairwise_give_battles(tiny_model_dir, tmp_path, capsys):
    """Done-when (judges): two published FastChat answer files judged pairwise -> arena battles."""
    mt = shared("mt_bench")
    out = tmp_path / "results"
    assert main(["arena", "run", "--answers", str(mt / "model_answer" / "alpaca-13b.jsonl"),
                 "--answers", str(mt / "model_answer" / "llama-13b.jsonl"), "--prompts", "mt_bench",
                 "--data", str(mt), "--questions", "116", "--judge", f"hf:{tiny_model_dir}",
                 "--judge-max-tokens", "16", "--judge-retries", "0", "--rounds", "10", "--output", str(out),
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    capsys.readouterr()
    path, run = _record(out)
    battles = load_battles(path / "battles.jsonl")
    assert len(battles) == 2 and {(b.prompt_id, b.extra["turn"]) for b in battles} == {("116", 1), ("116", 2)}
    assert all({b.model_a, b.model_b} == {"alpaca-13b", "llama-13b"} for b in battles)
    assert {b.extra["template"] for b in battles} == {"pair-math-v1", "pair-math-v1-multi-turn"}
    assert set(run["tasks"]["arena"]["ratings"]) == {"alpaca-13b", "llama-13b"}
    # and the arena rates them again from the file alone
    assert main(["arena", "rate", str(path / "battles.jsonl"), "--no-output", "--rounds", "5"]) == 0
    assert "alpaca-13b" in capsys.readouterr().out
