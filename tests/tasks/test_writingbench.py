"""WritingBench against llm-eval-framework's own code (``eval_framework/tasks/writingbench_task.py``,
``writingbench/prompt.py`` and ``calculate_scores.py``), on the same judge replies: the judge prompt
byte for byte, which replies upstream's ``_parse_score_response`` accepts, every query's score and the
pooled, per-domain and per-requirement figures of ``calculate_scores`` over all 1,000 queries (with
parse failures left out as upstream leaves out a skipped criterion), then the real CLI through a
scripted model and judge (``--limit 6``) beside upstream's ``WritingBenchTask.run`` with the same
model and judge.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from _scripted_judge import ScriptedServer
from evalkit.taskapi.data import DataError
from evalkit.taskapi.items import Sample
from evalkit.tasks.judged import writingbench as wb
from eval_framework.tasks import writingbench_task as up_task  # the reference: a missing package fails here
from eval_framework.tasks.writingbench import calculate_scores as up_scores
from eval_framework.tasks.writingbench import prompt as up_prompt

WHEEL = Path(up_task.__file__).parent / "writingbench" / "benchmark_query"


@pytest.fixture(scope="module")
def docs():
    return wb.WritingBench().eval_docs()


def judge_reply(messages: list, failures: bool = False) -> str:
    """A scripted judge: a score from a hash of the prompt, in the formats judges write; with
    ``failures``, some replies upstream's parser rejects."""
    h = hashlib.sha256(messages[-1]["content"].encode()).digest()
    body = json.dumps({"score": 1 + h[0] % 10, "reason": "scripted"}, indent=4)
    if failures and h[2] % 5 == 0:
        return ["score: 7", '{"score": "7", "reason": "x"}', '{"score": 7}', '{"score": 7.5, "reason": "x"}',
                "[7]"][h[3] % 5]
    return [f"```json\n{body}\n```", body, f"Here is my evaluation:\n{body}\nThat is all.", f"```\n{body}```"][h[1] % 4]


def answer(query: str) -> str:
    h = hashlib.sha256(query.encode()).digest()
    text = f"Scripted piece for {query[:20]!r}." + " More prose." * (h[0] % 30)
    return f"<think>planning it</think>\n\n{text}" if h[1] % 2 else text


def script(messages: list) -> str:
    return judge_reply(messages) if messages[0]["content"] == wb.evaluate_system else answer(messages[-1]["content"])


def test_the_judge_prompt_is_upstreams_byte_for_byte(docs):
    assert (wb.evaluate_system, wb.evaluate_prompt) == (up_prompt.evaluate_system, up_prompt.evaluate_prompt)
    doc = docs[0]
    asks = wb.CriteriaScores().asks(doc, "<think>x</think>\n An answer. ")
    assert [a.tag for a in asks] == ["c0", "c1", "c2", "c3", "c4"]
    for a, criterion in zip(asks, doc.meta["checklist"]):  # writingbench_task.score_one's messages
        want = up_prompt.evaluate_prompt.format(query=doc.query, response="An answer.", criteria=criterion)
        assert a.messages == (("system", up_prompt.evaluate_system), ("user", want))


REPLIES = ['{"score": 7, "reason": "ok"}', '```json\n{"score": 3, "reason": "r"}\n```', 'x {"score": 10, "reason": "r"} y',
           '{"score": 0, "reason": "r"}', '{"score": 11, "reason": "r"}', '{"score": true, "reason": "r"}',
           '{"score": 7.0, "reason": "r"}', '{"score": "7", "reason": "r"}', '{"score": 7, "reason": 5}',
           '{"score": 7}', "score: 7", "", "{}", "[7]", "7", '{"a": {"score": 2, "reason": "r"}}',
           '```\n{"score": 4, "reason": "r"}```', '{"score": 5, "reason": "a"} and {"score": 6, "reason": "b"}']


def test_replies_are_read_as_upstream_reads_them():
    parse = up_task.WritingBenchTask()._parse_score_response
    for text in REPLIES:
        try:
            want = parse(text)
        except AttributeError:  # upstream fails on JSON that is not an object ("[7]", "7"): no score here
            want = None
        got = wb.parse_score(text)
        assert got == (None if want is None else want["score"]), text


def _samples(docs, verdicts_of) -> list:
    """evalkit's samples from scripted verdicts, as the judge layer builds them."""
    task, metric = wb.WritingBench(), wb.CriteriaScores()
    out = []
    for d in docs:
        v = verdicts_of(d)
        extra = {**task.score_text(d, "").extra, "judged": {metric.name: metric.extra(d, "", v)}}
        out.append(Sample(d.id, d.hash(), None, [], None, metric.values(d, "", v), extra=extra))
    return out


def test_every_figure_is_calculate_scores_on_the_same_scores(docs, tmp_path):
    rng = np.random.default_rng(5)

    def verdicts(d):
        dead = rng.uniform() < 0.02  # a query whose criteria all fail
        return {f"c{i}": None if dead or rng.uniform() < 0.1 else int(rng.integers(1, 11))
                for i in range(len(d.meta["checklist"]))}
    samples = _samples(docs, verdicts)
    with open(tmp_path / "scores.jsonl", "w", encoding="utf-8") as f:  # what upstream's run writes for them
        for d, s in zip(docs, samples):
            scores = s.extra["judged"]["writingbench"]["scores"]
            if scores:
                f.write(json.dumps({"index": d.meta["index"], "scores": {k: [{"score": x, "reason": "r"} for x in v]
                                                                          for k, v in scores.items()}}) + "\n")
    scores_data, overall, count, details = up_scores.read_scores_file(str(tmp_path / "scores.jsonl"))
    assert {s.extra["index"]: s.metrics["query_score"] for s in samples if "query_score" in s.metrics} == \
        pytest.approx(scores_data, rel=1e-12)
    assert 900 < count < 1000
    assert wb.pooled(wb.criterion_sums(samples))["score"] == pytest.approx(overall, rel=1e-12)
    d1, d2 = up_scores.calculate_domain_scores(scores_data, up_scores.read_domain_file(str(WHEEL / wb.QUERIES)))
    req_r, req_c = up_scores.calculate_requirement_scores(
        scores_data, details, *up_scores.read_requirement_file(str(WHEEL / "requirement")))
    got = wb.WritingBench().breakdowns(samples)
    want = {**{f"domain1:{k}": v for k, v in d1.items()}, **{f"domain2:{k}": v for k, v in d2.items()}}
    assert len(d1) == 6 and len(d2) == 100
    assert {k: v["query_score"].value for k, v in got.items() if k.startswith("domain")} == pytest.approx(want)
    assert {f"{k}/{m}": mv.value for k, v in got.items() if k.startswith("requirement") for m, mv in v.items()} == \
        pytest.approx({f"requirement:{r}/{m}": x[r] for r in wb.REQUIREMENTS for m, x in (("R", req_r), ("C", req_c))})


def test_subsets_and_bad_data(tmp_path):
    style = wb.WritingBench(requirement="style").eval_docs()
    assert len(style) == 442 and all("style" in d.meta["requirement"] for d in style)
    edu = wb.WritingBench(domain1="Education").eval_docs()
    assert len(edu) == 111 and {d.meta["domain1"] for d in edu} == {"Education"}
    with pytest.raises(ValueError, match="domain1='Nowhere'"):
        wb.WritingBench(domain1="Nowhere").eval_docs()
    with pytest.raises(ValueError, match="requirement='tone'"):
        wb.WritingBench(requirement="tone").eval_docs()
    (tmp_path / wb.QUERIES).write_text(json.dumps({"index": 1, "query": "q", "checklist": [{"name": "a"}]}) + "\n"
                                       + json.dumps({"index": 2, "query": "q", "checklist": "none"}) + "\n")
    with pytest.raises(DataError, match=rf"{wb.QUERIES}:2: field 'checklist' should be list"):
        wb.WritingBench(data_path=str(tmp_path)).eval_docs()
    with pytest.raises(DataError, match="no benchmark_all.jsonl"):
        wb.WritingBench(data_path=str(tmp_path / "sub")).load_docs("test", path=str(tmp_path.parent))


class Sampler:
    """An upstream sampler playing the same script."""

    def __init__(self, fn):
        self.fn, self.seen, self.model = fn, [], "scripted"

    def __call__(self, messages):
        self.seen.append(tuple((m["role"], m["content"]) for m in messages))
        return types.SimpleNamespace(response_text=self.fn(messages))


@pytest.mark.server
def test_the_cli_gives_upstreams_figures(tmp_path, docs):
    model, judge = Sampler(lambda m: answer(m[-1]["content"])), Sampler(judge_reply)
    summary = up_task.WritingBenchTask(num_threads=4).run(model, judge, str(tmp_path / "up"), max_examples=6,
                                                          write_excel=False)
    with ScriptedServer(script) as srv:
        cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(), "--model-args", f"base_url={srv.base_url}",
               "--tasks", "writingbench", "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}",
               "--apply-chat-template", "--limit", "6", "--output", str(tmp_path / "out"),
               "--cache-dir", str(tmp_path / "cache")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        chats = [tuple((m["role"], m["content"]) for m in b["messages"]) for b in srv.bodies]
    assert sorted(c for c in chats if c[0][0] == "system") == sorted(judge.seen)  # 30 judge prompts, byte for byte
    assert sorted(c for c in chats if c[0][0] != "system") == sorted(model.seen)
    run_dir = next((tmp_path / "out").iterdir())
    task = json.loads((run_dir / "run.json").read_text())["tasks"]["writingbench"]
    rows = [json.loads(x) for x in next(run_dir.glob("samples_writingbench*.jsonl")).read_text().splitlines()]
    scores_data = up_scores.read_scores_file(str(tmp_path / "up" / "scores" / "scores.jsonl"))[0]
    assert {r["extra"]["index"]: r["metrics"]["query_score"] for r in rows} == pytest.approx(scores_data, rel=1e-12)
    assert task["metrics"]["score"]["value"] == pytest.approx(summary["overall_avg"], rel=1e-12)
    lo, hi = task["metrics"]["score"]["ci_low"], task["metrics"]["score"]["ci_high"]
    assert lo <= task["metrics"]["score"]["value"] <= hi and summary["n_queries"] == 6
    b = task["breakdowns"]
    assert {k: v["query_score"]["value"] for k, v in b.items() if k.startswith("domain")} == pytest.approx(
        {**{f"domain1:{k}": v for k, v in summary["domain1"].items()},
         **{f"domain2:{k}": v for k, v in summary["domain2"].items()}})
    reqs = {r for r in wb.REQUIREMENTS if summary["requirement_R"][r]}  # upstream: 0 for a requirement with no query
    assert reqs and {f"{k}/{m}": mv["value"] for k, v in b.items() if k.startswith("requirement")
                     for m, mv in v.items()} == pytest.approx({f"requirement:{r}/{m}": summary[f"requirement_{m}"][r]
                                                               for r in reqs for m in ("R", "C")})
    assert task["extra"]["judge"]["writingbench"] == {"kind": "pointwise", "asks": 30, "parse_failures": 0,
                                                      "parse_failure_rate": 0.0}
