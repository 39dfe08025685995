"""Scores on finished and on truncated answers (olmo-eval #399: 0.956 on finished, 0.241 on
truncated, hidden in one average): a GSM8K run where a scripted model's answers are cut at
max_tokens on some items, checked by hand; the warning `evalkit run` prints, and the task view's
columns on the leaderboard."""
from __future__ import annotations

import pytest

from evalkit.records import load_run
from evalkit.run.cache import NullCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
from evalkit.scoring.budgets import split_warning
from evalkit.taskapi.requests import Completion
from _fakes import ScriptedBackend


def _item(golds: list, r) -> int:
    return next(k for k, q in enumerate(golds) if q[0] in r.prompt)


def _cut_some(golds: list, r):
    i = _item(golds, r)
    gold = golds[i][1]
    if i < 12:
        return f"So it is {gold}.\n#### {gold}"
    if i < 14:
        return Completion(f"#### {gold} and then the model goes on and on", "length")
    if i < 16:
        return Completion("Let me think about this very carefully step by", "length")
    return "#### 123456789"


def cut_some(golds: list) -> ScriptedBackend:
    """Right answers that finish on items 0-11; the same text cut at max_tokens on items 12-15 (right
    on 12 and 13 only: the answer made it before the cut); wrong and finished on 16-19."""
    return ScriptedBackend(lambda r: _cut_some(golds, r), name="cut-some")


@pytest.fixture(scope="module")
def run(tmp_path_factory, shared_data):
    import json
    rows = [json.loads(x) for x in open(shared_data / "gsm8k" / "test.jsonl")][:20]
    golds = [(r["question"], r["answer"].split("####")[-1].strip()) for r in rows]
    out = tmp_path_factory.mktemp("split")
    rec = evaluate(cut_some(golds), RunConfig(tasks=["gsm8k"], limit=20, num_fewshot=0,
                                             data_paths={"gsm8k": str(shared_data / "gsm8k")}),
                   NullCache(), str(out / "results"), progress=False)
    return load_run(rec.path)


def test_finished_and_truncated_scores_by_hand(run):
    b = run.tasks["gsm8k"].budget
    assert b["hit_token_limit"] == pytest.approx(4 / 20)
    s = b["split"]["exact_match_strict"]
    assert s["finished"]["n"] == 16 and s["finished"]["value"] == pytest.approx(12 / 16)
    assert s["truncated"]["n"] == 4 and s["truncated"]["value"] == pytest.approx(2 / 4)
    assert s["overall"]["value"] == pytest.approx(14 / 20) == run.metrics("gsm8k")["exact_match_strict"].value
    for part in ("finished", "truncated"):
        assert s[part]["ci_low"] <= s[part]["value"] <= s[part]["ci_high"]
    assert split_warning(b, "exact_match_strict") == ("exact_match_strict 0.750 on 16 finished responses, 0.500 on 4 "
                                                      "truncated at max_tokens (20%): the average mixes the two")
    assert any("finished responses" in w for w in b["warnings"])              # what `evalkit run` prints


def test_the_task_view_shows_the_split(run):
    pytest.importorskip("streamlit")
    import pandas as pd
    from evalkit.dashboards import tables
    from evalkit.dashboards.store import ResultsStore
    store = ResultsStore(run.path.parent)
    store.refresh()
    sel = pd.DataFrame({"run_id": [run.run_id], "task": ["gsm8k"]})
    cols = tables.budget_columns(store, sel, "exact_match_strict")
    assert cols["exact_match_strict finished"].iloc[0].startswith("0.750 [")
    assert cols["exact_match_strict truncated"].iloc[0].endswith("n=4")
    assert "hit max_tokens" in cols and list(tables.budget_columns(store, sel).columns) == list(
        tables.BUDGET_COLUMNS.values())                                        # no metric: shares only


def finishes(golds: list) -> ScriptedBackend:
    """Right on items 0-13 and wrong on 16-19, as cut_some, but every answer finishes (items 12-15 right)."""
    def reply(r):
        i = _item(golds, r)
        return f"#### {golds[i][1]}" if 12 <= i < 16 else _cut_some(golds, r)
    return ScriptedBackend(reply, name="finishes")


def test_compare_says_when_two_runs_differ_mainly_in_truncation(run, tmp_path, shared_data):
    import json
    from evalkit.compare.analysis import compare_runs
    rows = [json.loads(x) for x in open(shared_data / "gsm8k" / "test.jsonl")][:20]
    golds = [(r["question"], r["answer"].split("####")[-1].strip()) for r in rows]
    base = evaluate(finishes(golds), RunConfig(tasks=["gsm8k"], limit=20, num_fewshot=0,
                                               data_paths={"gsm8k": str(shared_data / "gsm8k")}),
                    NullCache(), str(tmp_path), progress=False)
    c = compare_runs(base.path, run.path)
    note = next(n for n in c.notes if "stopped at max_tokens" in n)
    assert note.startswith("gsm8k: 20% of the candidate's responses stopped at max_tokens, 0% of the baseline's")
    assert "on the 16 items both runs finished" in note and note.endswith("mainly truncation (raise max_tokens, "
                                                                          "or compare finished answers)")
    assert not [n for n in compare_runs(run.path, run.path).notes if "max_tokens" in n]   # same runs: nothing


def test_compare_counts_every_completion_of_a_repeat_run():
    """Repeat rows: the truncated share is over all completions, and an item counts as finished
    only when every one of its completions finished."""
    from types import SimpleNamespace
    from evalkit.compare.truncation import truncation_notes

    def row(cuts, value):
        comps = [{"finish_reason": "length" if c else "stop"} for c in cuts]
        return {"metrics": {"acc": value}, "extra": {"finish_reason": comps[0]["finish_reason"], "completions": comps}}
    base = [row([0, 0, 0, 0], 1.0)] * 4 + [row([0, 0, 0, 0], 0.0)] * 4
    cand = [row([0, 1, 1, 1], 0.25)] * 4 + [row([0, 0, 0, 0], 0.0)] * 4   # first completions all finished
    t = SimpleNamespace(name="gsm8k", base_rows=base, cand_rows=cand)
    diff = SimpleNamespace(kind="mean", n=8, diff=-0.375, primary=True, metric="acc")
    (note,) = truncation_notes(t, [diff])
    assert note.startswith("gsm8k: 38% of the candidate's responses stopped at max_tokens, 0% of the baseline's")
    assert "+0 on the 4 items both runs finished" in note and note.endswith("mainly truncation (raise max_tokens, "
                                                                           "or compare finished answers)")
