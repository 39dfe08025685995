"""The judge layer (``evalkit.taskapi.judged``): a user's task declares a judged metric in a few lines,
the run's ``--judge`` answers it through its own backend and cache, and the record carries the values,
the verdicts, the parse failures, the prompt hash and the judge's reliability figures. Played with a
scripted judge behind a local OpenAI-compatible server."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _scripted_judge import ScriptedServer

pytestmark = pytest.mark.server

TASK = '''
from evalkit.scoring.metric import Metric
from evalkit.taskapi.data import DataSource
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.task import Doc, GenerationTask, register_task


class Politeness(JudgedMetric):
    """Pointwise: is the answer polite? (a rubric of one line)"""
    name, kind = "polite", "pointwise"

    def asks(self, doc, answer):
        return [JudgeAsk("rubric", (("user", f"Is this polite? Answer [[YES]] or [[NO]].\\n{answer}"),), 16)]

    def parse(self, ask, text):
        return {"[[YES]]": 1.0, "[[NO]]": 0.0}.get(text.strip())

    def values(self, doc, answer, verdicts):
        v = verdicts["rubric"]
        return {"polite": 0.0 if v is None else v}

    def declarations(self):
        return (Metric("polite"),)


@register_task
class Greet(GenerationTask):
    name = "greet_judged"
    dataset = DataSource(local_files={"test": ["test.jsonl"]})
    metrics = (Metric("nonempty"),)
    judged = (Politeness(),)

    def record_to_doc(self, record, index):
        return Doc(id=str(index), query=record["q"], target="")

    def score_text(self, doc, text):
        return {"nonempty": float(bool(text.strip()))}
'''


def answerer_and_judge(messages):
    text = messages[-1]["content"]
    if text.startswith("Is this polite?"):
        answer = text.split("\n", 1)[1]
        return "[[YES]]" if "please" in answer else ("garbled" if "??" in answer else "[[NO]]")
    return {"greet a": "hello please", "greet b": "go away", "greet c": "??"}[text.strip()]


@pytest.fixture
def user_task(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "greet.py").write_text(TASK)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text("".join(json.dumps({"q": f"greet {c}"}) + "\n" for c in "abc"))
    return tmp_path


def _run(tmp, srv, *extra):
    cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(), "--model-args", f"base_url={srv.base_url}",
           "--include-path", str(tmp / "tasks"), "--tasks", "greet_judged", "--data", f"greet_judged={tmp / 'data'}",
           "--apply-chat-template", "--output", str(tmp / "out"), "--cache-dir", str(tmp / "cache"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_a_user_task_declares_a_judged_metric(user_task):
    with ScriptedServer(answerer_and_judge) as srv:
        r = _run(user_task, srv, "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}")
        assert r.returncode == 0, r.stderr
        judge_calls = [b for b in srv.bodies if b["messages"][-1]["content"].startswith("Is this polite?")]
        assert len(judge_calls) == 3 and all(b.get("temperature", 0) == 0 for b in judge_calls)
        run_dir = next((user_task / "out").iterdir())
        rec = json.loads((run_dir / "run.json").read_text())
        task = rec["tasks"]["greet_judged"]
        assert task["metrics"]["polite"]["value"] == pytest.approx(1 / 3)
        assert rec["judge"]["spec"] == srv.spec() and rec["judge_engine"]["computed"] == 3
        rel = task["extra"]["judge"]["polite"]
        assert rel == {"kind": "pointwise", "asks": 3, "parse_failures": 1, "parse_failure_rate": pytest.approx(1 / 3)}
        rows = [json.loads(x) for x in next(run_dir.glob("samples_greet_judged*.jsonl")).read_text().splitlines()]
        by = {r["responses"][0]: r["extra"]["judged"]["polite"] for r in rows}
        assert by["hello please"]["verdicts"] == {"rubric": 1.0} and by["??"]["parse_failures"] == ["rubric"]
        assert len(by["go away"]["prompt_sha256"]) == 64

        # a rerun asks the judge nothing: its answers are cached under its own identity
        n = len(srv.bodies)
        r = _run(user_task, srv, "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}")
        assert r.returncode == 0, r.stderr
        assert len(srv.bodies) == n


def test_judged_metrics_need_a_judge_before_any_model_loads(user_task):
    r = _run(user_task, type("S", (), {"spec": lambda self: "openai:nothing", "base_url": "http://127.0.0.1:9/v1"})())
    assert r.returncode != 0
    lines = [x for x in r.stderr.strip().splitlines() if x]
    assert len(lines) == 1 and "greet_judged" in lines[0] and "polite" in lines[0] and "--judge" in lines[0]
    assert "Traceback" not in r.stderr


def test_the_task_page_shows_the_judge_beside_the_judged_score(user_task):
    from evalkit.dashboards import data, judging
    with ScriptedServer(answerer_and_judge) as srv:
        r = _run(user_task, srv, "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}")
        assert r.returncode == 0, r.stderr
    store = data.ResultsStore(user_task / "out")
    store.refresh()
    sel = store.cells()
    sel = sel[(sel["task"] == "greet_judged") & (sel["metric"] == "polite")]
    cols = judging.judge_columns(store, sel, "polite")
    assert list(cols.columns) == ["judge", "judge asks", "judge parse failures"]  # pointwise: no swap figure
    row = cols.iloc[0]
    assert row["judge"] == "scripted-judge" and row["judge asks"] == 3
    assert row["judge parse failures"] == pytest.approx(1 / 3)
    plain = store.cells()
    plain = plain[(plain["task"] == "greet_judged") & (plain["metric"] == "nonempty")]
    assert judging.reliability_of(store.record(plain["run_id"].iloc[0]), "greet_judged", "nonempty")["asks"] == 3


def test_judge_max_tokens_sets_every_judge_reply_length(user_task):
    with ScriptedServer(answerer_and_judge) as srv:
        r = _run(user_task, srv, "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}",
                 "--task-args", "greet_judged:judge_max_tokens=7")
        assert r.returncode == 0, r.stderr
        judge_calls = [b for b in srv.bodies if b["messages"][-1]["content"].startswith("Is this polite?")]
        assert len(judge_calls) == 3 and {b.get("max_tokens", b.get("max_completion_tokens")) for b in judge_calls} == {7}
    r = _run(user_task, type("S", (), {"spec": lambda self: "openai:x", "base_url": "http://127.0.0.1:9/v1"})(),
             "--task-args", "greet_judged:judge_max_tokenz=7", "--judge", "openai:x")
    assert r.returncode != 0 and "judge_max_tokens" in r.stderr and "Traceback" not in r.stderr


CATALOG_TASK = '''
from evalkit.scoring.metric import Metric
from evalkit.taskapi import registry
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.task import register_task


class Shows(JudgedMetric):
    name, kind = "shows_work", "reference"

    def asks(self, doc, answer):
        return [JudgeAsk("check", (("user", f"Does this show its work? [[YES]]/[[NO]]\\n{answer}"),), 16)]

    def parse(self, ask, text):
        return {"[[YES]]": 1.0, "[[NO]]": 0.0}.get(text.strip())

    def values(self, doc, answer, verdicts):
        return {"shows_work": verdicts["check"] or 0.0}

    def declarations(self):
        return (Metric("shows_work"),)


@register_task
class Gsm8kShows(registry.get_task_class("lm-eval:gsm8k")):
    name = "gsm8k_shows_work"
    lm_eval_name = "gsm8k"
    judged = (Shows(),)
'''


def test_a_catalog_task_gains_a_judged_metric_in_a_task_file(tmp_path):
    pytest.importorskip("lm_eval")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "shows.py").write_text(CATALOG_TASK)
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "test"):
        (data / f"{split}.jsonl").write_text("".join(json.dumps({"question": f"What is {i} + 2?", "answer": f"so\n#### {i + 2}"})
                                                     + "\n" for i in range(3)))

    def script(messages):
        text = messages[-1]["content"]
        if text.startswith("Does this show its work?"):
            return "[[YES]]" if "because" in text else "[[NO]]"
        return "2 + 2 = 4 because I added\n#### 4" if "What is 2 + 2?" in text.rsplit("Question:", 1)[-1] else "#### 9"

    with ScriptedServer(script) as srv:
        cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(), "--model-args", f"base_url={srv.base_url}",
               "--include-path", str(tmp_path / "tasks"), "--tasks", "gsm8k_shows_work", "--data",
               f"gsm8k_shows_work={data}", "--output", str(tmp_path / "out"), "--judge", srv.spec(),
               "--judge-args", f"base_url={srv.base_url}", "--num-fewshot", "0"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rec = json.loads(next((tmp_path / "out").glob("*/run.json")).read_text())
    m = rec["tasks"]["gsm8k_shows_work"]["metrics"]
    assert m["shows_work"]["value"] == pytest.approx(1 / 3) and m["exact_match,strict-match"]["value"] == pytest.approx(1 / 3)


def test_the_readmes_judged_task_runs_as_written(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tasks"))
    from test_readme_tasks import readme_task_files
    (tmp_path / "mytasks").mkdir()
    (tmp_path / "mytasks" / "advice.py").write_text(readme_task_files()[2])
    (tmp_path / "advice.jsonl").write_text("".join(json.dumps({"question": q}) + "\n" for q in ("How do I sleep better?",
                                                                                              "Is coffee bad?")))

    def script(messages):
        text = messages[-1]["content"]
        if "Rate the answer's helpfulness" in text:
            return "Clear and kind. [[10]]" if "routine" in text else "Unhelpful. [[1]]"
        return "Keep a routine." if "sleep" in text else "Ask someone."

    with ScriptedServer(script) as srv:
        cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(), "--model-args", f"base_url={srv.base_url}",
               "--include-path", str(tmp_path / "mytasks"), "--tasks", "advice", "--data",
               f"advice={tmp_path / 'advice.jsonl'}", "--apply-chat-template", "--judge", srv.spec(), "--judge-args",
               f"base_url={srv.base_url}", "--output", str(tmp_path / "out")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rec = json.loads(next((tmp_path / "out").glob("*/run.json")).read_text())
    assert rec["tasks"]["advice"]["metrics"]["helpful"]["value"] == pytest.approx(0.5)
    assert rec["tasks"]["advice"]["extra"]["judge"]["helpful"]["parse_failures"] == 0


def test_a_second_judge_gives_the_judges_agreement(user_task):
    def strict_judge(messages):  # says NO where the first judge says YES on "hello please"; parses the rest alike
        text = messages[-1]["content"]
        return "[[NO]]" if text.startswith("Is this polite?") else answerer_and_judge(messages)

    with ScriptedServer(answerer_and_judge) as srv, ScriptedServer(strict_judge, model="strict-judge") as other:
        r = _run(user_task, srv, "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}",
                 "--second-judge", other.spec(), "--second-judge-args", f"base_url={other.base_url}")
        assert r.returncode == 0, r.stderr
        assert sum(b["messages"][-1]["content"].startswith("Is this polite?") for b in other.bodies) == 3
    rec = json.loads(next((user_task / "out").glob("*/run.json")).read_text())
    assert rec["judge"]["second"]["spec"] == "openai:strict-judge" and rec["judge"]["second"]["engine"]["computed"] == 3
    rel = rec["tasks"]["greet_judged"]["extra"]["judge"]["polite"]
    # both judges gave a verdict on 2 answers ("??" has none from the first): "go away" NO/NO, "hello please" YES/NO
    assert rel["agreement_asks"] == 2 and rel["agreement"] == pytest.approx(0.5)
    # chance agreement from the marginals (first: YES, NO; second: NO, NO) is 0.5, so kappa is 0
    assert rel["kappa"] == pytest.approx(0.0)
    assert rec["tasks"]["greet_judged"]["metrics"]["polite"]["value"] == pytest.approx(1 / 3)  # the first judge's
    r = _run(user_task, srv, "--second-judge", "openai:x")
    assert r.returncode != 0 and "needs a first one" in r.stderr and "Traceback" not in r.stderr


def test_agreement_and_kappa_on_hand_worked_verdicts():
    from evalkit.taskapi.judged import agreement
    pairs = [(1, 1), (1, 1), (0, 0), (1, 0), (None, 1), (0, None)]
    got = agreement(pairs)
    # 4 pairs with both: observed 3/4; first (1,1,0,1): p1=3/4; second (1,1,0,0): p1=1/2; chance 3/8 + 1/8 = 1/2
    assert got == {"agreement": 0.75, "kappa": pytest.approx(0.5), "agreement_asks": 4}
    assert agreement([(None, 1)]) == {"agreement": None, "kappa": None, "agreement_asks": 0}
    assert agreement([(1, 1), (1, 1)])["kappa"] is None
