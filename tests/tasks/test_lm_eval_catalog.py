"""lm-eval's catalog as evalkit names it: listing, expansion of tags and groups, the bare-name
fallback, and bad input (YAML errors, missing splits, an offline hub, a task hook that raises)."""
from __future__ import annotations

import pytest

pytest.importorskip("lm_eval")

from evalkit.cli import main  # noqa: E402
from evalkit.taskapi import registry  # noqa: E402
from evalkit.util.errors import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def catalog():
    from evalkit.tasks.lm_eval_catalog import catalog as c
    c.manager()  # the index, once for the module
    return c


def test_names_expand_as_lm_eval_groups_them(catalog):
    assert registry.expand(["lm-eval:ai2_arc"]) == ["lm-eval:arc_challenge", "lm-eval:arc_easy"]  # a tag: its tasks
    assert registry.expand(["lm-eval:mmlu"]) == ["lm-eval:mmlu"]  # an aggregating group: one task
    assert registry.expand(["lm-eval:mmlu_astronomy*,gsm8k"])[:2] == ["lm-eval:mmlu_astronomy",
                                                                     "lm-eval:mmlu_astronomy_continuation"]
    assert registry.expand(["lm-eval:mmlu_astronomy*,gsm8k"])[-1] == "gsm8k"
    assert catalog.kind("mmlu") == "group" and catalog.kind("lm-eval:gsm8k") == "task" and catalog.kind("ai2_arc") == "tag"
    assert len(catalog.manager().all_subtasks) > 13000


def test_a_bare_name_evalkit_lacks_runs_as_lm_eval_with_a_note(catalog, capsys):
    assert registry.expand(["hellaswag"]) == ["lm-eval:hellaswag"]
    assert "note: 'hellaswag' is not an evalkit task; running lm-eval:hellaswag" in capsys.readouterr().err
    assert registry.expand(["gsm8k"]) == ["gsm8k"]  # evalkit's own wins


def test_unknown_names_suggest_from_both_catalogs(catalog):
    with pytest.raises(ValueError, match=r"Did you mean: mmlu_abstract_algebra, lm-eval:mmlu_abstract_algebra"):
        registry.expand(["mmlu_abstract_algbra"])
    with pytest.raises(ConfigError, match=r"unknown task 'lm-eval:hellaswg'\. Did you mean: lm-eval:hellaswag"):
        registry.expand(["lm-eval:hellaswg"])


def test_tasks_command_lists_lm_eval_names(catalog, capsys):
    assert main(["tasks", "--lm-eval", "mmlu_astronomy"]) == 0
    out, err = capsys.readouterr()
    assert "lm-eval:mmlu_astronomy  task\n" in out and "lm-eval:mmlu_astronomy_generative  task" in out
    assert f"{len(out.splitlines())} of lm-eval 0.4.13's names" in err


def test_a_yaml_error_names_the_file_and_line(tmp_path, catalog):
    (tmp_path / "bad.yaml").write_text("task: broken\ndoc_to_text: [unclosed\noutput_type: generate_until\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:\d+: .*flow sequence"):
        registry.include_path(str(tmp_path))


def test_a_bad_config_value_names_the_task_and_file(tmp_path, catalog):
    (tmp_path / "t.yaml").write_text("task: bogus_kind\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
                                     f"    test: {tmp_path / 'test.jsonl'}\ntest_split: test\noutput_type: bogus\n")
    (tmp_path / "test.jsonl").write_text('{"q": "x"}\n')
    registry.include_path(str(tmp_path))
    with pytest.raises(ConfigError, match=r"lm-eval:bogus_kind \(.*t\.yaml\): .*invalid output_type 'bogus'"):
        registry.get_task_class("lm-eval:bogus_kind")()


def test_local_data_errors_name_the_split_and_the_fix(tmp_path, catalog, monkeypatch):
    cls = registry.get_task_class("lm-eval:gsm8k")
    (tmp_path / "test.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n')
    with pytest.raises(ConfigError, match=r"--data lm-eval:gsm8k=.*no file for split 'train'.*found: test"):
        cls(data_path=str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match=r"lm-eval:gsm8k: the dataset openai/gsm8k \(config 'main'\) could not be "
                                          r"loaded .*pass --data lm-eval:gsm8k=PATH"):
        cls()


@pytest.mark.slow
def test_a_task_hook_that_raises_names_the_task_and_the_doc(tmp_path, catalog, hf_backend):
    from evalkit.run.cache import NullCache
    from evalkit.run.config import RunConfig
    from evalkit.run.runner import evaluate
    (tmp_path / "utils.py").write_text("def boom(doc, results):\n    if doc['q'] == 'two':\n"
                                       "        raise KeyError('no such field')\n    return {'acc': 1.0}\n")
    (tmp_path / "data.jsonl").write_text('{"q": "one"}\n{"q": "two"}\n')
    (tmp_path / "hooked.yaml").write_text(
        "task: hooked\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {tmp_path / 'data.jsonl'}\ntest_split: test\noutput_type: multiple_choice\n"
        "doc_to_text: '{{q}}?'\ndoc_to_choice: ['yes', 'no']\ndoc_to_target: 0\n"
        "process_results: !function utils.boom\nmetric_list:\n  - metric: acc\n")
    registry.include_path(str(tmp_path))
    with pytest.raises(ConfigError, match=r"lm-eval task hooked, doc 1: process_results raised KeyError"):
        evaluate(hf_backend, RunConfig(tasks=["lm-eval:hooked"]), NullCache(), output_dir=None, progress=False)


@pytest.mark.slow
def test_the_cli_runs_an_lm_eval_task_and_a_rerun_comes_from_the_cache(tmp_path, catalog, shared_data, capsys):
    from evalkit.records import load_run
    from evalkit.tasks.lm_eval_catalog.hub_layouts import mmlu_hub
    hub = mmlu_hub(shared_data, tmp_path / "hub", ["anatomy"])
    argv = ["run", "--model", "hf:smollm2-135m", "--tasks", "lm-eval:mmlu_anatomy", "--data",
            f"lm-eval:mmlu_anatomy={hub}", "--num-fewshot", "1", "--limit", "3", "--cache-dir", str(tmp_path / "c"),
            "--output", str(tmp_path / "results")]
    assert main(argv) == 0
    assert main(argv) == 0
    a, b = sorted((load_run(p).run for p in (tmp_path / "results").iterdir()), key=lambda r: r.engine["cached"])
    assert a.engine["computed"] == 12 and b.engine.get("computed", 0) == 0 and b.engine["cached"] == 12
    assert a.tasks["lm-eval:mmlu_anatomy"].metrics["acc"] == b.tasks["lm-eval:mmlu_anatomy"].metrics["acc"]
    assert a.tasks["lm-eval:mmlu_anatomy"].config["lm_eval"]["version"] == catalog.version()
