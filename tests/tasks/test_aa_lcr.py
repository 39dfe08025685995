"""AA-LCR against the code of ``nvidia-aa-lcr`` 26.3 (``aa_lcr/main.py``, ``core_evals/aa_lcr/output.py``),
executed here with its request function replaced by a script (``generate_with_retry_async``: the
scripted model and judge), so that upstream builds its own prompts, reads its own verdicts and computes
its own figures:

- the prompt of all 100 questions, byte for byte, as upstream's ``generate`` builds them (with and
  without a system prompt), and the equality checker's prompt and verdicts as upstream's ``judge``
  builds and reads them, tricky replies included;
- the figures: upstream's whole ``main`` over the 100 questions (one repeat) and its ``output.py``,
  against evalkit's CLI on the same scripted model and judge (a text-mode ``openai:`` server: the
  run says in one line that it cannot count tokens), question by question; upstream's ``output.py``
  against evalkit's aggregation on scripted verdicts;
- the context check (``aa_lcr_fit``): with the bundled model's tokenizer and a fake context limit
  (``--model-args max_length=N``), a prompt that does not fit stops the CLI in one line before any
  request, and ``truncate=left`` cuts the documents from the left and records the cut; the fit logic
  itself on a toy tokenizer.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import subprocess
import sys
import types

import pandas as pd
import pytest

from _scripted_judge import ScriptedServer
from conftest import require_installed
from evalkit.scoring.metric import Metric
from evalkit.taskapi.items import RunContext
from evalkit.tasks.judged import aa_lcr as ours
from evalkit.tasks.judged import aa_lcr_fit as fit

JUDGE_HEAD = "Assess whether the following CANDIDATE ANSWER is CORRECT or INCORRECT."
DOC_HEAD = "BEGIN INPUT DOCUMENTS\n\n" + " " * 12  # what precedes the documents in upstream's prompt
#: judge replies upstream reads as a verdict, or not (a space, a newline, case, markdown, a full stop)
REPLIES = ("CORRECT", "INCORRECT", " CORRECT", "CORRECT\n", "correct", "**CORRECT**", "INCORRECT.", "CORRECT",
           "Correct or INCORRECT", "")


@pytest.fixture(scope="module")
def ref():
    return require_installed("aa_lcr.main", "nvidia-aa-lcr (AA-LCR's data and reference code)")


@pytest.fixture(scope="module")
def frame(ref):
    """The data as upstream reads it (its own ``pd.read_csv`` of the packaged file)."""
    from importlib import resources
    with resources.files("aa_lcr").joinpath("data/aa_lcr_v2.csv").open("rb") as f:
        return pd.read_csv(f)


def _args(**kw):
    base = dict(model="m", endpoint_url="http://127.0.0.1:9/v1/chat/completions", api_key_name=None, seed=42,
                async_limit=8, system_prompt=None, temperature=0.0, top_p=1.0, max_new_tokens=16, max_retries=1,
                request_timeout=1, num_repeats=1, judge_model="j", judge_url="http://127.0.0.1:9/v1",
                judge_api_key_name=None, judge_temperature=0.0, judge_top_p=1.0, judge_max_new_tokens=1024,
                judge_request_timeout=1, judge_async_limit=8)
    return argparse.Namespace(**{**base, **kw})


def _reply_with(monkeypatch, ref, fn):
    """Upstream's request function replaced: ``fn(messages) -> reply``, the call's kwargs kept."""
    calls = []

    async def fake(client, model, messages, **kw):
        calls.append((messages, kw))
        return fn(messages)
    monkeypatch.setattr(ref, "generate_with_retry_async", fake)
    return calls


@pytest.fixture(scope="module")
def ref_prompts(ref, frame):
    """Upstream's prompt of every question, from its own ``generate`` (in order)."""
    mp = pytest.MonkeyPatch()
    try:
        _reply_with(mp, ref, lambda messages: messages)
        got = asyncio.run(ref.generate(_args(), frame["question"], frame["context"], None, 0))
    finally:
        mp.undo()
    return [m[-1]["content"] for m in got]


# ---- pure parity -----------------------------------------------------------------------------------
def test_prompts_byte_for_byte_on_all_questions(ref, frame, ref_prompts, monkeypatch):
    task = ours.AALCR()
    docs = task.eval_docs()  # the wheel's file through evalkit's reader
    assert len(docs) == len(frame) == 100
    ctx = RunContext()
    for d, (_, row), want in zip(docs, frame.iterrows(), ref_prompts):
        assert (d.query, d.target, d.meta["context"]) == (row["question"], row["answer"], row["context"])
        assert task.messages(d, ctx) == [{"role": "user", "content": want}]
    _reply_with(monkeypatch, ref, lambda messages: messages)  # with a system prompt: two turns, as upstream
    sys_ = asyncio.run(ref.generate(_args(system_prompt="Be brief."), frame["question"][:2], frame["context"][:2],
                                    None, 0))
    assert [task.messages(d, RunContext(system_prompt="Be brief.")) for d in docs[:2]] == sys_


def test_checker_prompt_and_verdicts_as_upstream_reads_them(ref, monkeypatch):
    questions = ["Which {x} is it?", "Q2", "Q3 %s", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10", "Q11"]
    official = [f"official {i} {{0}}" for i in range(len(questions))]
    candidates = ["cand {question}", "", "plain", "a\nb", "x", "y", "z", "w", "v", "u", "t"]
    replies = dict(zip(candidates, (*REPLIES, None)))  # None: a reply whose content is null
    cand = lambda m: m[0]["content"].rsplit("ASSESS: ", 1)[1].split("\n\nReply only")[0]  # noqa: E731
    calls = _reply_with(monkeypatch, ref, lambda m: replies[cand(m)])
    got = asyncio.run(ref.judge(_args(), questions, official, candidates, None))  # in order (gather)
    asked = {cand(m): (m, kw) for m, kw in calls}
    metric = ours.EqualityCheck()
    for q, o, c, g in zip(questions, official, candidates, got):
        messages, kw = asked[c]
        doc = types.SimpleNamespace(query=q, target=o)
        ask, = metric.asks(doc, c)
        assert ask.messages == (("user", messages[0]["content"]),) and len(messages) == 1
        assert ask.max_tokens == kw["max_new_tokens"] == 1024
        assert metric.parse(ask, replies[c]) == g
    assert [metric.parse(None, r) for r in REPLIES] == [1, 0, None, None, None, None, None, 1, None, None]


def _output_module(monkeypatch):
    """Upstream's ``output.py`` (its import of nemo-evaluator's result class stubbed: a plain holder)."""
    api = types.ModuleType("nemo_evaluator.api.api_dataclasses")
    api.EvaluationResult = lambda tasks, groups: tasks
    for name, mod in (("nemo_evaluator", types.ModuleType("nemo_evaluator")),
                      ("nemo_evaluator.api", types.ModuleType("nemo_evaluator.api")),
                      ("nemo_evaluator.api.api_dataclasses", api)):
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.delitem(sys.modules, "core_evals.aa_lcr.output", raising=False)
    import core_evals.aa_lcr.output as out
    return out


def test_figures_against_upstream_output_on_scripted_verdicts(monkeypatch, tmp_path):
    out = _output_module(monkeypatch)
    verdicts = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0]
    pd.DataFrame({"average_judgement": verdicts}).to_csv(tmp_path / "m_results.csv", index=False)
    want = out.parse_output(str(tmp_path))["aa_lcr"]["metrics"]["accuracy"]["scores"]["accuracy"]
    metric = ours.EqualityCheck()
    samples = [types.SimpleNamespace(metrics=metric.values(None, "", {"equality": v})) for v in verdicts]
    got = Metric("accuracy").aggregate(samples, 0, "aa_lcr")
    assert got.value == pytest.approx(want["value"], abs=1e-12)
    assert got.stderr == pytest.approx(want["stats"]["stderr"], abs=1e-12)
    samples.append(types.SimpleNamespace(metrics=metric.values(None, "", {"equality": None})))
    assert Metric("accuracy").aggregate(samples, 0, "aa_lcr").n == len(verdicts)  # no verdict: not counted
    assert Metric("accuracy_strict").aggregate(samples, 0, "aa_lcr").value == pytest.approx(sum(verdicts) / 14)


# ---- the context check on a toy tokenizer ------------------------------------------------------------
class _Backend:
    max_length = 60

    def apply_chat_template(self, messages):
        return "".join(f"<{m['role']}> {m['content']} " for m in messages)


def _ctx(tokenize=lambda text: text.split(), **kw):
    kw.setdefault("max_length", _Backend.max_length)  # as the run sets it from the backend
    return RunContext(tokenize=tokenize, render_chat=_Backend().apply_chat_template, **kw)


def _fit(options, ctx, documents, max_tokens=10):
    f = fit.PromptFit("aa_lcr", options)
    f.fit("7", documents, lambda d: [{"role": "user", "content": ours.lcr_prompt("what?", d)}], ctx, max_tokens, True)
    return f


def test_fit_counts_refuses_and_cuts_from_the_left(monkeypatch):
    words = " ".join(f"w{i}" for i in range(100))
    f = _fit({}, _ctx(), " ".join(f"w{i}" for i in range(20)))
    assert f.sizes["7"] == {"prompt_tokens": 42, "max_prompt_tokens": 50} and "7" not in f.cut
    with pytest.raises(ValueError) as e:
        _fit({}, _ctx(), words)
    assert "question 7's prompt is 122 tokens" in str(e.value) and "truncate=left" in str(e.value)
    assert "\n" not in str(e.value)
    f = _fit({"truncate": "left"}, _ctx(), words)
    s, cut = f.sizes["7"], f.cut["7"]
    assert s["prompt_tokens"] <= 50 and s["prompt_tokens_full"] == 122 and s["truncated_chars"] == cut
    assert s["truncated_tokens"] == 122 - s["prompt_tokens"]
    assert 50 - fit.SLACK <= s["prompt_tokens"]  # the search stops within SLACK tokens of the room
    monkeypatch.setattr(fit, "SLACK", 0)  # ... or, with none, where the prompt fills its room
    cut = _fit({"truncate": "left"}, _ctx(), words).cut["7"]
    size = lambda c: len(_ctx().render_chat([{"role": "user", "content": ours.lcr_prompt("what?", words[c:])}])
                         .split())  # noqa: E731
    assert size(cut) == 50 < size(cut - 4)
    with pytest.raises(ValueError, match="expected left"):
        fit.PromptFit("aa_lcr", {"truncate": "right"})
    with pytest.raises(ValueError, match="without any document"):
        _fit({"truncate": "left"}, _ctx(), words, max_tokens=55)


def test_fit_without_a_tokenizer_or_a_context_length(caplog):
    def none(text):
        raise NotImplementedError("no tokenizer")
    with caplog.at_level(logging.WARNING):
        f = _fit({}, _ctx(tokenize=none), "a b c")
        f.fit("8", "d", lambda d: [{"role": "user", "content": d}], _ctx(tokenize=none), 10, True)
    assert f.sizes == {} and len(caplog.records) == 1 and "no tokenizer" in caplog.records[0].getMessage()
    with pytest.raises(ValueError, match="tokenizer=DIR_OR_HUB_ID"):
        _fit({"truncate": "left"}, _ctx(tokenize=none), "a b c")
    f = _fit({}, RunContext(tokenize=str.split), "a b c")  # no backend to ask: counted, not checked
    assert f.sizes["7"] == {"prompt_tokens": len(ours.lcr_prompt("what?", "a b c").split())}


# ---- the CLI against upstream's whole run --------------------------------------------------------------
def _answer(k: int, official: str) -> str:
    return [official, "I don't know.", "{braces} {0} and %s " + official, "", "The answer is: " + official][k % 5]


def _script(frame, prompts):
    """The scripted model (an answer by question) and judge (a reply by question, from ``REPLIES``)."""
    index = {p: i for i, p in enumerate(prompts)}
    questions = list(frame["question"])

    def script(messages):
        text = messages[-1]["content"]
        if text.startswith(JUDGE_HEAD):
            rest = text.split("The question, for reference only: ", 1)[1]
            k = next(i for i, q in enumerate(questions) if rest.startswith(q + "\nThe OFFICIAL ANSWER: "))
            return REPLIES[(k * 7) % len(REPLIES)]
        k = index[text]  # a prompt upstream did not build: KeyError, the test fails
        return _answer(k, frame["answer"][k])
    return script


def _cli(srv, tmp, *extra, model_args=""):
    cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(),
           "--model-args", f"base_url={srv.base_url}{model_args}", "--judge", srv.spec(),
           "--judge-args", f"base_url={srv.base_url}", "--tasks", "aa_lcr", "--output", str(tmp / "out"),
           "--cache-dir", str(tmp / "cache"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def _record(tmp):
    folder = next((tmp / "out").iterdir())
    rows = [json.loads(x) for x in (folder / "samples_aa_lcr.jsonl").read_text().splitlines()]
    return json.loads((folder / "run.json").read_text()), rows


@pytest.mark.server
def test_cli_figures_equal_upstream_run_question_by_question(ref, frame, ref_prompts, monkeypatch, tmp_path):
    script = _script(frame, ref_prompts)
    _reply_with(monkeypatch, ref, script)
    monkeypatch.setattr(sys, "argv", ["aa_lcr", "--model", "m", "--num_repeats", "1", "--cache_dir", "",
                                      "--output_dir", str(tmp_path / "ref")])
    ref.main()
    theirs = pd.read_csv(tmp_path / "ref" / "m_results.csv")
    want = _output_module(monkeypatch).parse_output(str(tmp_path / "ref"))["aa_lcr"]["metrics"]["accuracy"]["scores"]

    with ScriptedServer(script) as srv:
        r = _cli(srv, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        judge_tokens = {b.get("max_tokens") for b in srv.bodies if b["messages"][-1]["content"].startswith(JUDGE_HEAD)}
    assert sum("has no tokenizer" in line for line in r.stderr.splitlines()) == 1
    rec, rows = _record(tmp_path)
    assert judge_tokens == {1024} and len(rows) == 100
    for row, (_, t) in zip(rows, theirs.iterrows()):
        k = int(row["doc_id"])
        assert row["responses"] == [_answer(k, frame["answer"][k])]
        j = t["judgements_0"]
        assert row["extra"]["judged"]["aa_lcr"]["verdicts"]["equality"] == (None if math.isnan(j) else int(j))
        assert row["metrics"].get("accuracy") == (None if math.isnan(j) else float(j))
        assert row["prompt"]["chars"] == len(ref_prompts[k]) and "prompt_size" not in row["extra"]
    got = rec["tasks"]["aa_lcr"]["metrics"]
    assert got["accuracy"]["value"] == pytest.approx(want["accuracy"]["value"], abs=1e-12)
    assert got["accuracy"]["n"] == theirs["judgements_0"].notna().sum()
    assert math.isnan(want["accuracy"]["stats"]["stderr"])  # upstream's output.py: NaN once a verdict is missing
    assert got["accuracy_strict"]["value"] == pytest.approx(theirs["judgements_0"].fillna(0).mean())
    assert rec["tasks"]["aa_lcr"]["extra"]["judge"]["aa_lcr"]["parse_failures"] == theirs["judgements_0"].isna().sum()


@pytest.mark.server
def test_cli_refuses_a_prompt_longer_than_the_context_then_cuts_it_when_asked(frame, ref_prompts, tiny_model_dir,
                                                                               tmp_path):
    """Two questions (one document set, ~110k tokens of the bundled model's), a 3,000-token context."""
    script = _script(frame, ref_prompts)
    index = {}

    def cut_script(messages):  # the answering model accepts upstream's prompt with the documents cut
        text = messages[-1]["content"]
        if text.startswith(JUDGE_HEAD):
            return script(messages)
        k = next(i for i, p in enumerate(ref_prompts[:2]) if p.endswith(text[len(DOC_HEAD):]))
        index[k] = text
        return script([{"role": "user", "content": ref_prompts[k]}])

    args = f",tokenizer={tiny_model_dir},max_length=3000"
    with ScriptedServer(cut_script) as srv:
        r = _cli(srv, tmp_path / "a", "--limit", "2", "--gen-kwargs", "max_tokens=64", model_args=args)
        assert r.returncode != 0 and srv.bodies == []  # nothing was sent
        errors = [line for line in r.stderr.splitlines() if line.startswith("evalkit run: error:")]
        assert len(errors) == 1 and "question 0's prompt is" in errors[0] and "truncate=left" in errors[0], r.stderr
        n_full = int(errors[0].split("prompt is ")[1].split(" tokens")[0].replace(",", ""))
        assert n_full > 100_000
        r = _cli(srv, tmp_path / "b", "--limit", "2", "--gen-kwargs", "max_tokens=64",
                 "--task-args", "aa_lcr:truncate=left", model_args=args)
        assert r.returncode == 0, r.stderr[-3000:]
    rec, rows = _record(tmp_path / "b")
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    for row in rows:
        k, size = int(row["doc_id"]), row["extra"]["prompt_size"]
        sent = index[k]
        assert ref_prompts[k] == sent[:len(DOC_HEAD)] + ref_prompts[k][len(DOC_HEAD):size["truncated_chars"] +
                                                                       len(DOC_HEAD)] + sent[len(DOC_HEAD):]
        rendered = tok.apply_chat_template([{"role": "user", "content": sent}], tokenize=False,
                                           add_generation_prompt=True)
        assert len(tok.encode(rendered, add_special_tokens=False)) == size["prompt_tokens"]
        assert 2936 - fit.SLACK <= size["prompt_tokens"] <= 2936 == size["max_prompt_tokens"]
        assert size["truncated_tokens"] == size["prompt_tokens_full"] - size["prompt_tokens"]
    assert rows[0]["extra"]["prompt_size"]["prompt_tokens_full"] == n_full  # as the refusal counted it
    assert rec["tasks"]["aa_lcr"]["extra"]["aa_lcr"]["truncated"] == 2
