"""lm-eval interop on real output: lm-eval 0.4.x runs the tiny model on MMLU items (offline, a local
JSONL through a task YAML that includes lm-eval's own MMLU template), `evalkit import lm-eval` reads
it, and the imported run pairs with an evalkit run of the same items in compare, gate and the
leaderboard store; `evalkit export --format lm-eval` then re-import gives the same rows."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

lm_eval = pytest.importorskip("lm_eval")

from evalkit.cli import main  # noqa: E402
from evalkit.records import load_run  # noqa: E402

pytestmark = pytest.mark.slow
SUBJECT = "abstract_algebra"
TASK = f"mmlu_{SUBJECT}"
LM_TASK = f"mmlu_local_{SUBJECT}"
N = 6

YAML = """include: {lm_tasks}/mmlu/default/_default_template_yaml
task: {task}
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    test: {test}
    dev: {dev}
description: "The following are multiple choice questions (with answers) about abstract algebra.\\n\\n"
"""


@pytest.fixture(scope="module")
def mmlu_dir():
    from conftest import shared
    return shared("mmlu")


@pytest.fixture(scope="module")
def lm_eval_out(tmp_path_factory, tiny_model_dir, mmlu_dir):
    """Real lm-eval output: 6 MMLU questions, zero-shot, float32, with --log_samples."""
    from evalkit.taskapi import registry
    tmp = tmp_path_factory.mktemp("lm_eval")
    t = registry.get_task_class(TASK)(data_path=str(mmlu_dir))
    rows = lambda docs: "".join(json.dumps({"question": d.query, "subject": SUBJECT, "choices": d.choices,  # noqa: E731
                                            "answer": d.gold}) + "\n" for d in docs)
    (tmp / "test.jsonl").write_text(rows(t.eval_docs()[:N + 2]))
    (tmp / "dev.jsonl").write_text(rows(t.load_docs("dev")))
    (tmp / "tasks").mkdir()
    (tmp / "tasks" / "mmlu_local.yaml").write_text(YAML.format(
        lm_tasks=Path(lm_eval.__file__).parent / "tasks", task=LM_TASK, test=tmp / "test.jsonl", dev=tmp / "dev.jsonl"))
    out = tmp / "out"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                        f"pretrained={tiny_model_dir},dtype=float32", "--tasks", LM_TASK, "--include_path",
                        str(tmp / "tasks"), "--num_fewshot", "0", "--batch_size", "8", "--limit", str(N),
                        "--output_path", str(out), "--log_samples"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("interop")


@pytest.fixture(scope="module")
def evalkit_run(work, tiny_model_dir, mmlu_dir):
    """evalkit on the same questions (its own prompt and doc ids)."""
    res = work / "results"
    assert main(["run", "--model", f"hf:{tiny_model_dir}", "--model-args", "dtype=float32", "--tasks", TASK,
                 "--data", f"{TASK}={mmlu_dir}", "--num-fewshot", "0", "--limit", str(N), "--output", str(res),
                 "--cache-dir", str(work / "cache"), "--tag", "evalkit"]) == 0
    return next(p for p in res.iterdir() if (p / "run.json").exists())


@pytest.fixture(scope="module")
def imported(lm_eval_out, work, mmlu_dir, evalkit_run):
    before = {p.name for p in (work / "results").iterdir()}
    assert main(["import", "lm-eval", str(lm_eval_out), "--output", str(work / "results"),
                 "--task-map", f"{LM_TASK}={TASK}", "--data", f"{TASK}={mmlu_dir}"]) == 0
    new = [p for p in (work / "results").iterdir() if p.name not in before and (p / "run.json").exists()]
    assert len(new) == 1
    return new[0]


def _lm_files(out: Path):
    """The results object and sample lines of the lm-eval layout under ``out`` (beside results_*.json)."""
    path = Path(glob.glob(str(out / "**" / "results_*.json"), recursive=True)[0])
    samples = [json.loads(x) for f in sorted(path.parent.glob("samples_*.jsonl")) for x in open(f)]
    return json.load(open(path)), samples


def test_import_reads_metrics_samples_and_identities(lm_eval_out, imported, evalkit_run):
    res, lm_samples = _lm_files(lm_eval_out)
    rec, ek = load_run(imported), load_run(evalkit_run)
    assert rec.data["kind"] == "import" and list(rec.tasks) == [TASK]
    m = rec.metrics(TASK)["acc"]
    assert m["value"] == res["results"][LM_TASK]["acc,none"] and m["stderr"] == res["results"][LM_TASK]["acc_stderr,none"]
    assert m["n"] == N and m["ci_low"] is not None
    assert rec.model["backend"] == "lm-eval hf" and rec.model["args"]["dtype"] == "float32"
    assert rec.data["config"]["limit"] == N and rec.data["config"]["num_fewshot"] == 0
    rows, ek_rows = list(rec.samples(TASK)), list(ek.samples(TASK))
    assert len(rows) == N
    by_lm = {str(s["doc_id"]): s for s in lm_samples}
    for row, ek_row in zip(rows, ek_rows):
        lm = by_lm[str(row["extra"]["lm_eval"]["doc_id"])]
        assert row["metrics"]["acc"] == lm["acc"]                          # per-sample values
        assert (row["doc_id"], row["doc_hash"]) == (ek_row["doc_id"], ek_row["doc_hash"])  # evalkit's identities
        assert row["prompt_hash"] == ek_row["prompt_hash"]                 # the same prompt text
        assert max(abs(a[0] - b[0]) for a, b in zip(row["responses"], ek_row["responses"])) < 1e-4
    assert rec.tasks[TASK]["extra"]["lm_eval"]["prompts_identical_to_evalkit"] == N
    assert rec.tasks[TASK]["prompt_hash"] == ek.tasks[TASK]["prompt_hash"]


def test_compare_and_gate_pair_the_import_with_evalkit(imported, evalkit_run, work, tiny_model_dir, capsys):
    report = work / "cmp.json"
    assert main(["compare", str(imported), str(evalkit_run), "--format", "json", "--report", str(report)]) == 0
    cmp = json.loads(report.read_text())
    assert "acc" in json.dumps(cmp) and "different data" not in json.dumps(cmp)
    gate = work / "gate.toml"
    gate.write_text(f'baseline = "{imported}"\noutput = "{work / "gated"}"\ncache_dir = "{work / "cache"}"\n')
    assert main(["gate", "--config", str(gate), "--candidate", f"hf:{tiny_model_dir}",
                 "--candidate-args", "dtype=float32"]) == 0
    err = capsys.readouterr().err
    assert "0 computed" in err  # the candidate replayed the imported run's items: all from evalkit's cache
    cand = next((work / "gated").iterdir())
    assert [r["doc_id"] for r in load_run(cand).samples(TASK)] == [r["doc_id"] for r in load_run(imported).samples(TASK)]


def test_import_without_evalkit_data_does_not_pair(lm_eval_out, work, evalkit_run):
    out = work / "unmapped"
    assert main(["import", "lm-eval", str(lm_eval_out), "--output", str(out)]) == 0
    rec = load_run(next(out.iterdir()))
    assert list(rec.tasks) == [LM_TASK] and next(rec.samples(LM_TASK))["doc_id"] == "0"
    assert main(["compare", str(rec.path), str(evalkit_run)]) == 2  # no such task in the evalkit run: refused


def test_leaderboard_store_shows_the_import(imported, evalkit_run, work):
    from dashboards.store import ResultsStore
    store = ResultsStore(work / "results")
    store.refresh()
    runs = store.runs()
    assert set(runs["run_id"]) >= {load_run(imported).run_id, load_run(evalkit_run).run_id}
    cells = store.cells()
    acc = cells[(cells["task"] == TASK) & (cells["metric"] == "acc")]
    assert len(acc) == 2 and acc["col"].nunique() == 1  # one column: same task version and prompts
    assert set(acc["backend"]) == {"hf", "lm-eval hf"}


def test_export_then_import_round_trips(imported, evalkit_run, work):
    _, real_lines = _lm_files(next(iter([Path(load_run(imported).data["config"]["lm_eval"]["results_file"]).parent])))
    for src in (evalkit_run, imported):
        out = work / f"export_{src.name}"
        assert main(["export", "--format", "lm-eval", str(src), "--output", str(out)]) == 0
        res, lines = _lm_files(out)
        assert {"results", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "config"} <= set(res)
        assert "acc,none" in res["results"][TASK] and "acc_stderr,none" in res["results"][TASK]
        assert set(real_lines[0]) <= set(lines[0])  # every field lm-eval writes per sample
        back = work / f"back_{src.name}"
        assert main(["import", "lm-eval", str(out), "--output", str(back)]) == 0
        again = load_run(next(back.iterdir()))
        orig = load_run(src)
        keys = ("doc_id", "doc_hash", "prompt_hash", "metrics", "responses", "target")
        assert [{k: r[k] for k in keys} for r in again.samples(TASK)] == \
               [{k: r[k] for k in keys} for r in orig.samples(TASK)]
        assert again.metrics(TASK) == orig.metrics(TASK)
        assert main(["compare", str(orig.path), str(again.path)]) == 0


def test_lm_eval_command_line_writes_what_lm_eval_writes(lm_eval_out, work, tiny_model_dir, mmlu_dir, capsys):
    """lm-eval's own command line (program name replaced; --data added: evalkit reads local files
    where lm-eval read our YAML) gives lm-eval's files with lm-eval's numbers."""
    out = work / "lm_style"
    argv = ["--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32", "--tasks", TASK,
            "--num_fewshot", "0", "--batch_size", "8", "--device", "cpu", "--limit", str(N),
            "--output_path", str(out), "--log_samples", "--data", f"{TASK}={mmlu_dir}",
            "--cache-dir", str(work / "cache")]
    assert main(argv) == 0
    assert "cached 24, computed 0" in capsys.readouterr().out  # the same model identity as `evalkit run`'s
    ref, ref_lines = _lm_files(lm_eval_out)
    ours, our_lines = _lm_files(out)
    assert ours["results"][TASK]["acc,none"] == ref["results"][LM_TASK]["acc,none"]
    assert ours["n-shot"][TASK] == ref["n-shot"][LM_TASK] == 0
    ref_by = {x["doc_id"]: x for x in ref_lines}
    assert sorted(x["doc_id"] for x in our_lines) == sorted(ref_by)
    for x in our_lines:
        r = ref_by[x["doc_id"]]
        assert x["acc"] == r["acc"] and x["arguments"] == r["arguments"] and x["target"] != ""
        assert max(abs(float(a[0][0]) - float(b[0][0])) for a, b in zip(x["resps"], r["resps"])) < 1e-4
        assert x["prompt_hash"] == r["prompt_hash"]  # sha256 of the same context text
    assert any((p / "run.json").exists() for p in out.iterdir())  # and the evalkit run record


GSM8K_YAML = """include: {lm_tasks}/gsm8k/gsm8k.yaml
task: gsm8k_local
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    train: {gsm8k}/train.jsonl
    test: {gsm8k}/test.jsonl
fewshot_config:
  sampler: first_n
"""


def test_fewshot_as_multiturn_prompts_equal_lm_eval(tmp_path, tiny_model_dir, hf_backend):
    """With a chat template, lm-eval's default few-shot form (one user and one assistant turn per
    example) and evalkit's render to the same text."""
    from conftest import shared

    from evalkit.taskapi import registry
    from evalkit.taskapi.items import RunContext
    gsm8k = shared("gsm8k")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "gsm8k_local.yaml").write_text(GSM8K_YAML.format(
        lm_tasks=Path(lm_eval.__file__).parent / "tasks", gsm8k=gsm8k))
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                        f"pretrained={tiny_model_dir},dtype=float32", "--tasks", "gsm8k_local", "--include_path",
                        str(tmp_path / "tasks"), "--num_fewshot", "2", "--apply_chat_template", "--limit", "2",
                        "--gen_kwargs", "max_gen_toks=2", "--output_path", str(tmp_path / "out"), "--log_samples"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    _, lines = _lm_files(tmp_path / "out")
    ref = {x["doc_id"]: x["arguments"]["gen_args_0"]["arg_0"] for x in lines}
    task = registry.get_task_class("gsm8k")(data_path=str(gsm8k))
    docs = task.eval_docs()
    ctx = RunContext(num_fewshot=2, apply_chat_template=True, render_chat=hf_backend.apply_chat_template)
    for i in (0, 1):
        req = task.requests(docs[i], ctx)[0]
        assert hf_backend.apply_chat_template(req.message_dicts()) == ref[i]
        assert [m["role"] for m in req.message_dicts()] == ["user", "assistant", "user", "assistant", "user"]
    single = RunContext(num_fewshot=2, apply_chat_template=True, fewshot_as_multiturn=False,
                        render_chat=hf_backend.apply_chat_template)
    assert hf_backend.apply_chat_template(task.requests(docs[0], single)[0].message_dicts()) != ref[0]


def test_import_refuses_files_that_contradict_themselves(lm_eval_out, work, capsys, tmp_path):
    """#38: a results value beside samples that say otherwise was kept (with the samples' CI), and a run
    mapped to another evalkit task was recorded under that task's name. One-line errors now, or notes
    with --allow-mismatch."""
    import shutil
    from conftest import shared
    edited = tmp_path / "edited"
    shutil.copytree(lm_eval_out, edited)
    path = Path(glob.glob(str(edited / "**" / "results_*.json"), recursive=True)[0])
    res = json.loads(path.read_text())
    true = res["results"][LM_TASK]["acc,none"]
    res["results"][LM_TASK]["acc,none"] = true + 0.25
    path.write_text(json.dumps(res))
    out = tmp_path / "r"
    assert main(["import", "lm-eval", str(edited), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"acc,none = {true + 0.25:g}, but the mean of its {N} samples is {true:g}" in err and "Traceback" not in err
    assert main(["import", "lm-eval", str(edited), "--output", str(out), "--allow-mismatch"]) == 0
    rec = load_run(next(out.iterdir()))
    assert rec.metrics(LM_TASK)["acc"]["value"] == pytest.approx(true)
    capsys.readouterr()
    wrong = ["import", "lm-eval", str(lm_eval_out), "--output", str(tmp_path / "w"), "--task-map",
             f"{LM_TASK}=gsm8k", "--data", f"gsm8k={shared('gsm8k')}"]
    assert main(wrong) == 2
    err = capsys.readouterr().err
    assert f"of {N} docs are not evalkit gsm8k's doc" in err and "--allow-mismatch" in err
    assert main(wrong + ["--allow-mismatch"]) == 0
    assert list(load_run(next((tmp_path / "w").iterdir())).tasks) == [LM_TASK]
