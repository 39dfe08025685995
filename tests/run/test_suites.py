"""Suites (``--suite``) and the Open LLM Leaderboard v2's normalised scores with their CIs.

The normalisation is checked against the leaderboard's published formula on hand-worked values
(huggingface.co/docs/leaderboards/open_llm_leaderboard/normalization: its GPQA and MuSR examples);
a suite of three leaderboard benchmarks (lm-eval's ``leaderboard_bbh``, all 24 subtasks,
``leaderboard_ifeval`` and ``leaderboard_math_hard``, on local copies in the hub layout) runs through the CLI's config and the
engine on a scripted model, and its figures equal the formula applied to lm-eval's own per-subtask
results and choice lists.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from evalkit.cli import build_parser
from evalkit.cli.run import build_config, format_suite
from evalkit.run import suites
from evalkit.run.cache import NullCache
from evalkit.run.suite_summary import summarize
from evalkit.scoring import leaderboard_v2 as lb
from _fakes import ScriptedBackend, hashed_logprob


def rows(correct: int, total: int, choices: int, metric: str = "acc_norm") -> list:
    return [{metric: float(i < correct), "n_choices": choices} for i in range(total)]


def test_normalisation_is_the_leaderboards_formula_on_hand_worked_values():
    assert lb.normalize(0.6, 0.25) == pytest.approx(46.6667, abs=1e-4)   # the leaderboard's GPQA example
    assert lb.normalize(0.2, 0.25) == 0.0                                # below the random baseline: 0
    musr = lb.Bench("musr", {"murder_mysteries": rows(7, 10, 2), "object_placements": rows(2, 5, 5),
                             "team_allocation": rows(3, 5, 3)})
    assert lb.score(musr) == pytest.approx((40.0 + 25.0 + 40.0) / 3)     # its MuSR example: 0.7, 0.4, 0.6
    gpqa = lb.Bench("gpqa", {"diamond": rows(3, 4, 4), "main": rows(3, 6, 4)})
    assert lb.score(gpqa) == pytest.approx(lb.normalize(0.6, 0.25))      # pooled over items (weight_by_size)
    ife = lb.Bench("ifeval", {"ifeval": [{"prompt_level_strict_acc": 1.0, "inst_level_strict_acc": [True, True]},
                                         {"prompt_level_strict_acc": 0.0, "inst_level_strict_acc": [True, False]}]})
    assert lb.score(ife) == pytest.approx((50.0 + 75.0) / 2)             # instructions pooled over prompts
    assert lb.score(lb.Bench("math_hard", {"algebra": rows(1, 5, 0, "exact_match")})) == pytest.approx(20.0)
    assert lb.score(lb.Bench("mmlu_pro", {"mmlu_pro": rows(11, 20, 10, "acc")})) == pytest.approx(50.0)
    with pytest.raises(ValueError, match="choices"):
        lb.score(lb.Bench("bbh", {"mixed": rows(1, 2, 2) + rows(1, 2, 3)}))


def six() -> dict:
    return {"ifeval": lb.Bench("ifeval", {"i": [{"prompt_level_strict_acc": float(i % 2),
                                                   "inst_level_strict_acc": [i % 3 == 0, True]} for i in range(12)]}),
            "bbh": lb.Bench("bbh", {"a": rows(6, 10, 2), "b": rows(4, 8, 4)}),
            "math_hard": lb.Bench("math_hard", {"m": rows(2, 10, 0, "exact_match")}),
            "gpqa": lb.Bench("gpqa", {"g": rows(5, 12, 4)}),
            "musr": lb.Bench("musr", {"x": rows(6, 9, 2), "y": rows(3, 9, 3)}),
            "mmlu_pro": lb.Bench("mmlu_pro", {"p": rows(7, 20, 10, "acc")})}


def test_the_average_and_every_figure_have_seeded_bootstrap_intervals():
    out = lb.summary(six(), n_replicates=400, seed=7)
    assert out["average"].value == pytest.approx(sum(lb.score(b) for b in six().values()) / 6)
    for name, v in out.items():
        assert v.ci_low <= v.value <= v.ci_high and v.kind == "bootstrap", name
    assert lb.summary(six(), n_replicates=400, seed=7) == out                 # same seed, same figures
    alone = lb.summary({"gpqa": six()["gpqa"]}, n_replicates=400, seed=7)
    assert alone["gpqa"] == out["gpqa"] and "average" not in alone           # independent of what else ran
    constant = lb.summary({"bbh": lb.Bench("bbh", {"a": rows(10, 10, 2)})}, n_replicates=50)["bbh"]
    assert constant.ci_low == constant.ci_high == 100.0                      # resampled within the subtask


def test_suite_files_fail_in_one_line_naming_file_and_field(tmp_path):
    assert "leaderboard-v2" in suites.shipped()
    cases = {'summary = "nope"\n[[task]]\nname = "gsm8k"\n': "field 'summary'",
             '[[task]]\nname = "gsm8k"\nleaderboard_v2 = "hellaswag"\n': "task[0]: field 'leaderboard_v2'",
             '[[task]]\nleaderboard_v2 = "bbh"\n': "task[0]: field 'name'",
             'tasks = ["gsm8k"]\n': "unknown field 'tasks'",
             '[[task]]\nname = "gsm8k"\n[[task]]\nname = "gsm8k"\n': "listed twice",
             'num_fewshot = "5"\n[[task]]\nname = "gsm8k"\n': "field 'num_fewshot' must be int",
             '[[task]\n': "not valid TOML"}
    for i, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"s{i}.toml"
        path.write_text(text)
        with pytest.raises(suites.SuiteError, match=re.escape(message)) as e:
            suites.load_suite(str(path))
        assert str(path) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(suites.SuiteError, match="no such suite .*leaderboard-v2"):
        suites.load_suite("leaderbord-v2")


@pytest.fixture(scope="module")
def hub(tmp_path_factory, shared_data):
    pytest.importorskip("lm_eval")
    root = tmp_path_factory.mktemp("hub")
    for name in ("bbh", "ifeval", "math"):
        subprocess.run([sys.executable, "-m", "evalkit.tasks.lm_eval_catalog.hub_layouts", name, str(shared_data),
                        str(root / name)], check=True, capture_output=True)
    return root


def test_a_suite_runs_and_its_figures_are_the_formula_on_lm_evals_results(hub, tmp_path):
    import lm_eval
    import yaml
    from pathlib import Path
    from evalkit.run.runner import evaluate
    suite = tmp_path / "two.toml"
    suite.write_text('summary = "leaderboard-v2"\ngen_kwargs = {max_tokens = 16}\n'
                     '[[task]]\nname = "lm-eval:leaderboard_bbh"\nleaderboard_v2 = "bbh"\n'
                     '[[task]]\nname = "lm-eval:leaderboard_ifeval"\nleaderboard_v2 = "ifeval"\n'
                     '[[task]]\nname = "lm-eval:leaderboard_math_hard"\nleaderboard_v2 = "math_hard"\n')
    args = build_parser().parse_args(["run", "--model", "hf:x", "--suite", str(suite), "--limit", "3",
                                      "--data", f"lm-eval:leaderboard_bbh={hub / 'bbh'}",
                                      "--data", f"lm-eval:leaderboard_ifeval={hub / 'ifeval'}",
                                      "--data", f"lm-eval:leaderboard_math_hard={hub / 'math'}"])
    config = build_config(args)
    assert config.tasks == ["lm-eval:leaderboard_bbh", "lm-eval:leaderboard_ifeval", "lm-eval:leaderboard_math_hard"]
    assert config.gen_overrides == {"max_tokens": 16} and config.suite["benchmarks"]["lm-eval:leaderboard_bbh"] == "bbh"
    run = evaluate(ScriptedBackend("Hello world. THIS IS MY ANSWER, in two sentences.", hashed_logprob,
                                   identity={"model": "scripted-suite"}), config, NullCache(), None, progress=False)
    out = run.suite
    assert out == summarize(config.suite, run.samples, config.seed)
    figures = out["leaderboard_v2"]
    assert out["missing"] == ["gpqa", "musr", "mmlu_pro"] and "average" not in figures
    math = run.tasks["lm-eval:leaderboard_math_hard"].metrics["exact_match"]
    assert figures["math_hard"].value == pytest.approx(math.value * 100) and figures["math_hard"].n == 21
    # bbh by hand: lm-eval's per-subtask acc_norm (the run's breakdowns), baseline 1 / its choice list's length
    configs = Path(lm_eval.__file__).parent / "tasks" / "leaderboard" / "bbh_mc"
    breakdowns = run.tasks["lm-eval:leaderboard_bbh"].breakdowns
    leaves = sorted(k for k in breakdowns if k.startswith("leaderboard_bbh_") or ":leaderboard_bbh_" in k)
    assert len(leaves) == 24
    scores = []
    for key in leaves:
        leaf = key.split(":")[-1]
        n = len(yaml.safe_load((configs / f"{leaf[len('leaderboard_bbh_'):]}.yaml").read_text())["doc_to_choice"])
        scores.append(max(breakdowns[key]["acc_norm"]["value"] - 1 / n, 0) / (1 - 1 / n) * 100)
    assert figures["bbh"].value == pytest.approx(sum(scores) / 24) and figures["bbh"].n == 72
    ife = run.tasks["lm-eval:leaderboard_ifeval"].metrics
    assert figures["ifeval"].value == pytest.approx(
        (ife["prompt_level_strict_acc"].value + ife["inst_level_strict_acc"].value) * 50)
    assert "bbh" in format_suite(out) and "not run: gpqa" in format_suite(out)


def test_a_gate_config_takes_a_suite(tmp_path):
    from evalkit.cli.gate import config_from_toml, load_config
    (tmp_path / "mine.toml").write_text('summary = "leaderboard-v2"\napply_chat_template = true\n'
                                        'gen_kwargs = {max_tokens = 32}\n'
                                        '[[task]]\nname = "lm-eval:leaderboard_bbh"\nleaderboard_v2 = "bbh"\n')
    gate = tmp_path / "gate.toml"
    gate.write_text('baseline_model = "hf:smollm2-135m"\nsuite = "mine.toml"\ntasks = ["gsm8k"]\nlimit = 2\n'
                    'gen_kwargs = "temperature=0"\n')
    config = config_from_toml(load_config(str(gate)))
    assert config.tasks == ["lm-eval:leaderboard_bbh", "gsm8k"] and config.apply_chat_template
    assert config.gen_overrides == {"max_tokens": 32, "temperature": 0} or config.gen_overrides == {
        "max_tokens": 32, "temperature": "0"}
    assert config.suite["benchmarks"] == {"lm-eval:leaderboard_bbh": "bbh"} and config.to_record()["suite"]
    gate.write_text('baseline_model = "hf:smollm2-135m"\nsuite = "nope"\n')
    with pytest.raises(ValueError, match="no such suite"):
        config_from_toml(load_config(str(gate)))


def test_every_shipped_suite_names_tasks_that_exist():
    from evalkit.taskapi import registry
    for name in suites.shipped():
        s = suites.load_suite(name)
        native = [t for t in s.task_names() if not t.startswith("lm-eval:")]
        assert registry.expand([",".join(native)]) == native, name          # no typo resolves elsewhere
    card = suites.load_suite("model-card-2026")
    assert {"aime24", "aime25", "bbh_cot", "gpqa_diamond_cot", "math500"} <= set(card.task_names())
    assert card.settings["apply_chat_template"] and card.summary is None
