"""``--thinking-budgets``: accuracy against thinking budget from one trace (budget forcing), on the
bundled model with a chat template that opens a ``<think>`` trace: every trace generated once at the
largest budget, one forced answer per budget; a cached rerun with another budget list generates only
the new forced answers; a separate greedy run at one budget makes the very same forced requests."""
from __future__ import annotations

from pathlib import Path

import pytest

import evalkit
from evalkit.run.budget_forcing import BudgetForcing

from conftest import evalkit_cli, shared

TEMPLATE = str(Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "chat_templates" / "chatml_think.jinja")


def test_parse_budgets():
    assert BudgetForcing.parse("64,16,32,16").budgets == (16, 32, 64)
    assert BudgetForcing.parse([8], 12).to_record() == {"budgets": [8], "answer_tokens": 12}
    for bad in ("", "0,8", "a,b"):
        with pytest.raises(ValueError, match="--thinking-budgets"):
            BudgetForcing.parse(bad)


def test_cli_checks_the_flags(tmp_path):
    r = evalkit_cli("run", "--model", "hf:smollm2-135m", "--tasks", "gsm8k", "--forced-answer-tokens", "8", "--output",
                    str(tmp_path))
    assert r.returncode != 0 and "--forced-answer-tokens applies with --thinking-budgets" in r.stderr
    r = evalkit_cli("run", "--model", "hf:smollm2-135m", "--tasks", "gsm8k", "--thinking-budgets", "0,8", "--output",
                    str(tmp_path))
    assert r.returncode != 0 and "--thinking-budgets" in r.stderr and "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def runs(tiny_model_dir, tmp_path_factory):
    from evalkit.backends import make_backend
    backend = make_backend(f"hf:{tiny_model_dir}", {"chat_template": TEMPLATE, "threads": 1})
    cache = tmp_path_factory.mktemp("budget_cache")
    results = tmp_path_factory.mktemp("budget_results")

    def run(budgets, output=None):
        return evalkit.evaluate(model=backend, tasks=["gsm8k"], limit=3, data={"gsm8k": str(shared("gsm8k"))},
                                num_fewshot=0, apply_chat_template=True, thinking_budgets=budgets,
                                forced_answer_tokens=16, output=output, cache_dir=str(cache))
    out = {"first": run([8, 16, 32], str(results)), "rerun": run([8, 24, 32]), "single": run([16]),
           "results": results}
    backend.close()
    return out


def test_one_trace_a_forced_answer_per_budget(runs):
    run = runs["first"]
    entry = run.tasks["gsm8k"]
    rows = run.samples["gsm8k"]
    per = [r["extra"]["thinking_budgets"] for r in rows]
    # 3 traces (32 tokens at most), then one forced answer per budget, the same request where a
    # trace ended before the budget
    distinct = {(i, b) if p[str(b)]["cut"] else (i, "whole") for i, p in enumerate(per) for b in (8, 16, 32)}
    assert run.engine["computed_generate"] == 3 + len(distinct)
    for p in per:
        assert [p[b]["trace_tokens"] <= int(b) for b in ("8", "16", "32")] == [True] * 3
        assert p["8"]["cut"] and p["8"]["trace_tokens"] == 8, "the model writes more than 8 tokens of trace"
    info = entry.extra["thinking_budgets"]
    assert info["budgets"] == [8, 16, 32] and info["answer_tokens"] == 16
    assert info["per_budget"]["8"]["cut_share"] == 1.0
    for b in (8, 16, 32):
        got = entry.breakdowns[f"thinking_budget:{b}"]["exact_match_flexible"]
        vals = [p[str(b)]["metrics"]["exact_match_flexible"] for p in per]
        assert got["value"] == pytest.approx(sum(vals) / 3) and got["n"] == 3
    # the entry is the largest budget's: its responses are the forced answers after a closed trace
    assert entry.metrics["exact_match_flexible"]["value"] == entry.breakdowns["thinking_budget:32"][
        "exact_match_flexible"]["value"]
    for r in rows:
        t = r["extra"]["thinking"]
        assert t["status"] == "closed" and t["trace"] and r["extra"]["thinking_budgets"]["32"]["extracted"] == r["extracted"]


def test_rerun_with_other_budgets_generates_only_new_forced_answers(runs):
    rerun = runs["rerun"]
    per = [r["extra"]["thinking_budgets"] for r in rerun.samples["gsm8k"]]
    new = sum(p["24"]["cut"] for p in per)  # an uncut trace at 24 is the request already made at 32
    assert rerun.engine["computed_generate"] == new and rerun.engine["cached"] >= 3 + 3
    first = [r["extra"]["thinking_budgets"] for r in runs["first"].samples["gsm8k"]]
    assert [p["8"] for p in per] == [p["8"] for p in first] and [p["32"] for p in per] == [p["32"] for p in first]


def test_a_separate_greedy_run_at_one_budget_makes_the_same_forced_requests(runs):
    single = runs["single"]
    assert single.engine["computed_generate"] == 3, "its 3 traces (16 tokens) only: the forced answers were cached"
    first = [r["extra"]["thinking_budgets"]["16"] for r in runs["first"].samples["gsm8k"]]
    alone = [r["extra"]["thinking_budgets"]["16"] for r in single.samples["gsm8k"]]
    assert alone == first


def test_the_leaderboard_reads_the_curve(runs):
    """The leaderboard's breakdown rows (drawn as a curve against the budget) from the written record."""
    from evalkit.dashboards import data, tables
    store = data.ResultsStore(runs["results"])
    store.refresh()
    cells = store.cells()
    col = cells[cells["task"] == "gsm8k"]["col"].iloc[0]
    bd = tables.breakdowns(store, cells, col)
    part = bd[(bd["dimension"] == "thinking_budget") & (bd["metric"] == "exact_match_flexible")]
    assert sorted(part["group"].astype(int)) == [8, 16, 32] and part["n"].eq(3).all()


def test_evalkit_score_rescores_every_budget_from_the_rows(runs, tmp_path):
    """``evalkit score`` of a budget run scores each budget's saved responses again: the same curve
    as the model run, and an edited budget's responses change that budget's figures only."""
    import json
    import shutil

    from evalkit.run.workflows.rescore import ScoreConfig, rescore

    src = Path(runs["first"].path)
    again = rescore(ScoreConfig(task="gsm8k", predictions=str(src)), output_dir=str(tmp_path / "out"))
    first = runs["first"].tasks["gsm8k"]
    entry = again.tasks["gsm8k"]
    for b in (8, 16, 32):
        key = f"thinking_budget:{b}"
        assert {m: v["value"] for m, v in entry.breakdowns[key].items()} == \
               {m: v["value"] for m, v in first.breakdowns[key].items()}
    assert entry.extra["thinking_budgets"] == first.extra["thinking_budgets"]
    assert again.config["budget_forcing"] == {"budgets": [8, 16, 32], "answer_tokens": 16}
    old = [r["extra"]["thinking_budgets"] for r in runs["first"].samples["gsm8k"]]
    assert [r["extra"]["thinking_budgets"] for r in again.samples["gsm8k"]] == json.loads(json.dumps(old))

    # the model's answer at budget 8 replaced by the right one for the first problem: only budget 8 moves
    edited = tmp_path / "edited"
    shutil.copytree(src, edited)
    rows = [json.loads(line) for line in (edited / "samples_gsm8k.jsonl").read_text().splitlines()]
    gold = rows[0]["target"]
    rows[0]["extra"]["thinking_budgets"]["8"]["responses"] = [f"The answer is {gold}."]
    (edited / "samples_gsm8k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    moved = rescore(ScoreConfig(task="gsm8k", predictions=str(edited)), output_dir=None)
    per = moved.samples["gsm8k"][0]["extra"]["thinking_budgets"]
    assert per["8"]["metrics"]["exact_match_flexible"] == 1.0
    assert [per[b]["metrics"] for b in ("16", "32")] == [old[0][b]["metrics"] for b in ("16", "32")]
    want = (sum(p["8"]["metrics"]["exact_match_flexible"] for p in old[1:]) + 1.0) / 3
    assert moved.tasks["gsm8k"].breakdowns["thinking_budget:8"]["exact_match_flexible"]["value"] == pytest.approx(want)


def test_setups_that_cannot_mean_anything_are_refused_or_warned(tiny_model_dir, hf_backend, tmp_path, caplog):
    """#52 item 9: a budget past the model's context is refused before any generation; a model that never
    opens a thinking trace gives a flat curve, and the run says so."""
    opts = dict(model=hf_backend, tasks=["gsm8k"], limit=1, data={"gsm8k": str(shared("gsm8k"))}, num_fewshot=0,
                apply_chat_template=True, forced_answer_tokens=8, output=None, cache_dir=str(tmp_path / "c"))
    with pytest.raises(ValueError, match=r"--thinking-budgets 1000000000: .* context of 8,192 tokens"):
        evalkit.evaluate(thinking_budgets=[16, 10 ** 9], **opts)
    with caplog.at_level("WARNING"):
        evalkit.evaluate(thinking_budgets=[4, 8], **opts)  # the bundled template opens no <think>
    assert any("no answer of the 1 opened a thinking trace" in r.getMessage() and "curve is flat" in r.getMessage()
               for r in caplog.records)


def test_the_max_tokens_advice_under_reasoning_names_its_own_flag(capsys, monkeypatch):
    """#52 item 9: the warning advised --reasoning to a run that had given it."""
    from types import SimpleNamespace
    import evalkit.scoring.budgets as budgets
    from evalkit.cli.run import budget_warnings
    line = f"40% of responses {budgets._WHAT['hit_token_limit']}"
    run = SimpleNamespace(tasks={"gsm8k": SimpleNamespace(budget={"warnings": [line]})})
    monkeypatch.setattr(budgets, "run_usage", lambda tasks: {})
    budget_warnings(run, reasoning=False)
    assert "or use --reasoning" in capsys.readouterr().err
    budget_warnings(run, reasoning=True)
    err = capsys.readouterr().err
    assert "raise --thinking-budget" in err and "--reasoning" not in err
