"""MuSR and MMLU-Pro, whose data cannot be had here, on small fixtures the test writes in their hub
datasets' layouts: the native tasks (``musr``, ``mmlu_pro``) read them, and lm-eval's own
``leaderboard_musr`` and ``leaderboard_mmlu_pro`` (through evalkit's catalog) on the same files make
exactly the same requests and give the same per-item verdicts and leaderboard-v2 figures."""
from __future__ import annotations

import pytest

pd = pytest.importorskip("pandas")

from evalkit.run.cache import NullCache  # noqa: E402
from evalkit.run.config import RunConfig  # noqa: E402
from evalkit.run.runner import evaluate  # noqa: E402
from evalkit.run.suite_summary import bench_rows  # noqa: E402
from evalkit.scoring import leaderboard_v2 as lb  # noqa: E402
from evalkit.taskapi import registry  # noqa: E402
from evalkit.taskapi.data import DataError  # noqa: E402
from _fakes import ScriptedBackend, hashed_logprob  # noqa: E402

CATEGORIES = ("math", "law", "biology", "history")


def mmlu_pro_rows(n: int, offset: int) -> list:
    rows = []
    for i in range(n):
        k = (4, 10, 9, 7)[i % 4]
        rows.append({"question_id": offset + i, "question": f"Question {offset + i}: which option is right?",
                     "options": [f"option {j} of {offset + i}" for j in range(k)], "answer": "ABCDEFGHIJ"[i % k],
                     "answer_index": i % k, "cot_content": "", "category": CATEGORIES[i % 4], "src": "fixture"})
    return rows


def musr_rows(subtask: str, n: int) -> list:
    width = {"murder_mysteries": 2, "object_placements": 5, "team_allocation": 3}[subtask]
    rows = []
    for i in range(n):
        choices = [f"{subtask} answer {j}" for j in range(width)]
        rows.append({"narrative": f"A {subtask} story, number {i}.\nIt goes on.", "question": f"Who or where ({i})?",
                     "choices": repr(choices), "answer_index": i % width, "answer_choice": choices[i % width]})
    return rows


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    (root / "mmlu_pro" / "data").mkdir(parents=True)
    pd.DataFrame(mmlu_pro_rows(8, 100)).to_parquet(root / "mmlu_pro" / "data" / "test-00000-of-00001.parquet")
    pd.DataFrame(mmlu_pro_rows(6, 0)).to_parquet(root / "mmlu_pro" / "data" / "validation-00000-of-00001.parquet")
    (root / "musr" / "data").mkdir(parents=True)
    (root / "musr_csv").mkdir()
    for sub in ("murder_mysteries", "object_placements", "team_allocation"):
        frame = pd.DataFrame(musr_rows(sub, 3))
        frame.to_parquet(root / "musr" / "data" / f"{sub}-00000-of-00001.parquet")      # the parquet conversion
        frame.to_csv(root / "musr_csv" / {"murder_mysteries": "murder_mystery.csv"}.get(sub, f"{sub}.csv"),
                     index=False)                                                      # TAUR-Lab's own files
    return root


def run(task: str, data: str):
    backend = ScriptedBackend(loglikelihood=hashed_logprob, identity={"model": "scripted-mc"})
    out = evaluate(backend, RunConfig(tasks=[task], data_paths={task: data}), NullCache(), None, progress=False)
    return out, sorted({(r.context, r.continuation) for r in backend.requests})


@pytest.mark.parametrize("native, theirs, folder, kind, metric", [
    ("mmlu_pro", "lm-eval:leaderboard_mmlu_pro", "mmlu_pro", "mmlu_pro", "acc"),
    ("musr", "lm-eval:leaderboard_musr", "musr", "musr", "acc_norm")])
def test_native_task_equals_lm_evals_leaderboard_task(hub, native, theirs, folder, kind, metric):
    pytest.importorskip("lm_eval")
    ours, our_requests = run(native, str(hub / folder))
    lm, lm_requests = run(theirs, str(hub / folder))
    assert our_requests == lm_requests and len(our_requests) > 20           # the same prompts and options
    mine, other = ours.samples[native], lm.samples[theirs]
    assert len(mine) == len(other) == (8 if kind == "mmlu_pro" else 9)
    assert [r["metrics"][metric] for r in mine] == [r["metrics"][metric] for r in other]
    assert ours.tasks[native].metrics[metric].value == lm.tasks[theirs].metrics[metric].value
    ba, bb = bench_rows(kind, native, mine), bench_rows(kind, theirs, other)
    assert lb.score(ba) == pytest.approx(lb.score(bb))                       # the same leaderboard-v2 figure
    assert sorted(len(v) for v in ba.subtasks.values()) == sorted(len(v) for v in bb.subtasks.values())


def test_musr_reads_taur_labs_csv_files_and_the_parquet_conversion_alike(hub):
    task = registry.get_task_class("musr")
    csv_docs = task(data_path=str(hub / "musr_csv")).eval_docs()
    parquet_docs = task(data_path=str(hub / "musr")).eval_docs()
    assert [(d.id, d.query, d.choices, d.gold) for d in csv_docs] == \
        [(d.id, d.query, d.choices, d.gold) for d in parquet_docs]
    assert csv_docs[0].query.endswith("\n\n1 - murder_mysteries answer 0\n2 - murder_mysteries answer 1\n\nAnswer:")
    one = registry.get_task_class("musr_team_allocation")(data_path=str(hub / "musr")).eval_docs()
    assert [d.id for d in one] == ["team_allocation-0", "team_allocation-1", "team_allocation-2"]


def test_bad_fixtures_fail_in_one_line(hub, tmp_path):
    (tmp_path / "data").mkdir()
    bad = mmlu_pro_rows(2, 0)
    bad[1]["answer"], bad[1]["answer_index"] = "Z", 42
    pd.DataFrame(bad).to_parquet(tmp_path / "data" / "test-00000-of-00001.parquet")
    with pytest.raises(DataError, match=r"test-00000-of-00001.parquet.*'answer'"):
        registry.get_task_class("mmlu_pro")(data_path=str(tmp_path)).eval_docs()
    with pytest.raises(DataError, match="no file for MuSR split 'murder_mysteries'"):
        registry.get_task_class("musr")(data_path=str(tmp_path)).eval_docs()
