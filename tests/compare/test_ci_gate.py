"""The regression gate as CI runs it: evalkit/ci/gate.sh (the commands of .github/actions/gate and
of `evalkit ci-gate`),
the JUnit report validated against tests/data/junit.xsd (the Jenkins/GitLab JUnit schema), GitHub
annotations, the job summary and the documented exit codes (0 / 1 / 2)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from evalkit.cli import main
from tests.compare.test_compare import binary_items, make_run, paired_outcomes

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "evalkit" / "ci" / "gate.sh"
ACTION = REPO / ".github" / "actions" / "gate" / "action.yml"
XSD = REPO / "tests" / "data" / "junit.xsd"


@pytest.fixture(scope="module")
def schema():
    xmlschema = pytest.importorskip("xmlschema")
    return xmlschema.XMLSchema(str(XSD))


@pytest.fixture
def runs(tmp_path):
    """A baseline, a clearly regressed candidate (30 right->wrong, 2 wrong->right on 100 items, two
    tasks), and an unchanged candidate; each in its own folder like a downloaded artifact."""
    b, c = paired_outcomes(50, 30, 2, 18)
    keep = binary_items([1] * 40 + [0] * 10, "acc")
    out = {}
    for name, gsm in (("base", b), ("bad", c), ("same", b)):
        out[name] = make_run(tmp_path / f"artifact-{name}" / "results", f"run-{name}",
                             {"gsm8k": binary_items(gsm, "exact_match"), "mmlu": keep})
    return out


def run_script(tmp_path, **env):
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    summary.write_text("")
    outputs.write_text("")
    full = {**os.environ, "PYTHONPATH": str(REPO), "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(outputs), "EVALKIT_BIN": f"{sys.executable} -m evalkit",
            "EVALKIT_REPORT_DIR": str(tmp_path / "evalkit-gate"), **{k: str(v) for k, v in env.items()}}
    p = subprocess.run(["bash", str(SCRIPT)], env=full, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    outs = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
    return p, summary.read_text(), outs


def test_script_regression_fails_with_summary_junit_and_annotations(tmp_path, runs, schema):
    # the baseline is given as the artifact folder (the run sits two levels down), as download-artifact leaves it
    p, summary, outs = run_script(tmp_path, EVALKIT_BASELINE=runs["base"].parents[1], EVALKIT_CANDIDATE_RUN=runs["bad"])
    assert p.returncode == 1, p.stderr
    assert outs["exit-code"] == "1" and outs["verdict"] == "regression"
    assert summary.startswith("### evalkit compare: ❌ **Regression**")
    assert "| gsm8k | exact_match* | 100 | 80.00 | 52.00 | -28.00 pts |" in summary
    ann = [line for line in p.stdout.splitlines() if line.startswith("::")]
    assert ann[0].startswith("::error title=evalkit regressed%3A gsm8k%3Aexact_match::")
    assert "90%25 CI [-36.37, -20.13]" in ann[0]          # '%' escaped as the workflow-command format says
    assert ann[-1].startswith("::error title=evalkit gate::REGRESSION in 1 of 2 primary tests")
    junit = Path(outs["junit"])
    schema.validate(str(junit))
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    cases = {(s.get("name"), c.get("name")): c for s in root for c in s.iter("testcase")}
    assert set(cases) == {("evalkit.gsm8k", "exact_match"), ("evalkit.mmlu", "acc")}
    fail = cases[("evalkit.gsm8k", "exact_match")].find("failure")
    assert fail is not None and fail.get("type") == "regression"
    assert "diff -28.00 pts" in fail.text and "90% CI [-36.37, -20.13]" in fail.text and "p <1e-4" in fail.text
    assert cases[("evalkit.mmlu", "acc")].find("failure") is None
    # the Markdown file is the one the summary got
    assert Path(outs["report"]).read_text() == summary


def test_script_no_regression_exits_0(tmp_path, runs, schema):
    p, summary, outs = run_script(tmp_path, EVALKIT_BASELINE=runs["base"], EVALKIT_CANDIDATE_RUN=runs["same"])
    assert p.returncode == 0, p.stderr
    assert outs["verdict"] == "pass" and "✅ **No regression**" in summary
    schema.validate(outs["junit"])
    assert ET.parse(outs["junit"]).getroot().get("failures") == "0"
    assert p.stdout.strip().splitlines()[-1].startswith("::notice title=evalkit gate::no regression in 2 primary tests")


def test_script_margin_and_report_only_mode(tmp_path, runs):
    # a 28-point drop is beyond a 1-point margin: still a regression, but fail-on-regression=0 reports only
    p, summary, outs = run_script(tmp_path, EVALKIT_BASELINE=runs["base"], EVALKIT_CANDIDATE_RUN=runs["bad"],
                                  EVALKIT_MARGIN="1", EVALKIT_FAIL_ON_REGRESSION="0")
    assert p.returncode == 0 and outs["exit-code"] == "1" and outs["verdict"] == "regression"
    # only mmlu as primary: the gsm8k drop no longer decides
    p, summary, outs = run_script(tmp_path, EVALKIT_BASELINE=runs["base"], EVALKIT_CANDIDATE_RUN=runs["bad"],
                                  EVALKIT_PRIMARY="mmlu:acc")
    assert p.returncode == 0 and outs["exit-code"] == "0"


@pytest.mark.parametrize("env,message", [
    ({}, "no baseline"),
    ({"EVALKIT_BASELINE": "nowhere"}, "nowhere: no such file or folder"),
    ({"EVALKIT_BASELINE": "{base}"}, "no candidate"),
    ({"EVALKIT_BASELINE": "{root}", "EVALKIT_CANDIDATE_RUN": "{bad}"}, "expected exactly one run record"),
    ({"EVALKIT_BASELINE": "{base}", "EVALKIT_CANDIDATE_RUN": "{bad}", "EVALKIT_CANDIDATE": "hf:x"}, "not both"),
    ({"EVALKIT_BASELINE": "{base}", "EVALKIT_CANDIDATE_RUN": "{bad}", "EVALKIT_ALPHA": "0.7"}, "--alpha"),
])
def test_script_usage_errors_exit_2_and_say_why(tmp_path, runs, env, message):
    paths = {"base": runs["base"], "bad": runs["bad"], "root": tmp_path}
    p, summary, outs = run_script(tmp_path, **{k: v.format(**paths) for k, v in env.items()})
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert outs["exit-code"] == "2" and outs["verdict"] == "error"
    assert summary.startswith("### evalkit gate: error")
    assert message in p.stdout + p.stderr + summary


def test_script_runs_different_data_is_exit_2(tmp_path, runs):
    other = make_run(tmp_path / "other", "run-other", {"gsm8k": binary_items([1, 0] * 10, "exact_match"),
                                                       "mmlu": binary_items([1] * 20, "acc")})
    p, summary, outs = run_script(tmp_path, EVALKIT_BASELINE=runs["base"], EVALKIT_CANDIDATE_RUN=other)
    assert p.returncode == 2 and "different data" in p.stderr


def test_action_runs_exactly_the_script_with_the_variables_it_reads():
    action = yaml.safe_load(ACTION.read_text())
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    gate = next(s for s in steps if s.get("id") == "gate")
    assert gate["run"].strip() == 'bash "${{ github.action_path }}/../../../evalkit/ci/gate.sh"'
    assert (ACTION.parent / "../../../evalkit/ci/gate.sh").resolve() == SCRIPT
    read = set(re.findall(r"\$\{?(EVALKIT_[A-Z_]+)", SCRIPT.read_text())) - {"EVALKIT_BIN"}
    assert set(gate["env"]) == read
    for v in gate["env"].values():                       # every input the step uses is declared
        for name in re.findall(r"inputs\.([a-z-]+)", v):
            assert name in action["inputs"], name
    assert set(action["outputs"]) == {"exit-code", "verdict", "report", "junit"}
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "evalkit-gate.yml").read_text())
    uses = [s.get("uses") for job in wf["jobs"].values() for s in job["steps"]]
    assert "./.github/actions/gate" in uses


def test_compare_cli_formats_and_version(tmp_path, runs, schema, capsys):
    assert main(["compare", str(runs["base"]), str(runs["bad"]), "--format", "junit"]) == 1
    xml = capsys.readouterr().out
    assert schema.is_valid(xml)
    # the schema is not a rubber stamp: a test case without a name fails it
    broken = re.sub(r'<testcase name="[^"]+"', "<testcase", xml, count=1)
    assert not schema.is_valid(broken)
    assert main(["compare", str(runs["base"]), str(runs["same"]), "--format", "github",
                 "--junit", str(tmp_path / "j.xml"), "--markdown", str(tmp_path / "r.md")]) == 0
    assert capsys.readouterr().out.startswith("::notice title=evalkit gate::no regression")
    schema.validate(str(tmp_path / "j.xml"))
    assert (tmp_path / "r.md").read_text().startswith("### evalkit compare: ✅")
    with pytest.raises(SystemExit) as e:
        main(["compare", str(runs["base"])])              # usage error: argparse's exit 2
    assert e.value.code == 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    from evalkit.util import toml as tomllib
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"evalkit {version}"


def test_gate_with_saved_candidate_run(tmp_path, runs, capsys):
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'baseline = "{runs["base"]}"\n[candidate]\nrun = "{runs["bad"]}"\n[compare]\nformat = "json"\n')
    assert main(["gate", "--config", str(cfg)]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["exit_code"] == 1 and rep["candidate"]["run_id"] == "run-bad"
    assert main(["gate", "--config", str(cfg), "--candidate-run", str(runs["same"])]) == 0
    assert not (tmp_path / "results").exists()            # nothing evaluated, no record written


def test_evalkit_ci_gate_runs_the_same_script(tmp_path, runs):
    """`evalkit ci-gate` (what GitLab and other CIs call) execs the packaged script."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "EVALKIT_BASELINE": str(runs["base"]),
           "EVALKIT_CANDIDATE_RUN": str(runs["bad"]), "EVALKIT_REPORT_DIR": str(tmp_path / "out")}
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.pop("EVALKIT_BIN", None)
    p = subprocess.run([sys.executable, "-m", "evalkit", "ci-gate"], env=env, capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert (tmp_path / "out" / "gate-junit.xml").exists() and (tmp_path / "out" / "gate-report.md").exists()
    p = subprocess.run([sys.executable, "-m", "evalkit", "ci-gate", "--print-path"], env=env, capture_output=True,
                       text=True, cwd=tmp_path)
    assert Path(p.stdout.strip()).resolve() == SCRIPT


# ---- a crash is an error (exit 2), never a regression (exit 1) ----------------------------------------------
class Boom:
    """A candidate backend that crashes as it starts (a bug, not a measured regression)."""

    def __init__(self, model, **kwargs):
        raise RuntimeError("simulated backend crash")


CRASHING_EVALKIT = '''import sys
from evalkit.backends import catalog


class Boom:
    def __init__(self, model, **kwargs):
        raise RuntimeError("simulated backend crash")


catalog.BACKENDS["boom"] = ("__main__", "Boom")   # --candidate boom:MODEL: a backend that crashes
from evalkit.cli import main
sys.exit(main())
'''


def test_script_crash_is_an_error_even_when_regressions_only_report(tmp_path, runs):
    wrapper = tmp_path / "crashing_evalkit.py"
    wrapper.write_text(CRASHING_EVALKIT)
    for fail_on_regression in ("1", "0"):
        p, summary, outs = run_script(tmp_path, EVALKIT_BIN=f"{sys.executable} {wrapper}",
                                      EVALKIT_BASELINE=runs["base"], EVALKIT_CANDIDATE="boom:model",
                                      EVALKIT_CACHE_DIR=tmp_path / "cache",
                                      EVALKIT_FAIL_ON_REGRESSION=fail_on_regression)
        assert p.returncode == 2, (p.stdout, p.stderr)             # the job fails: report-only or not
        assert outs["exit-code"] == "2" and outs["verdict"] == "error"
        assert summary.startswith("### evalkit gate: error (exit 2)")
        assert "evalkit gate: internal error (RuntimeError: simulated backend crash)" in p.stderr


def test_script_exit_1_without_a_report_is_an_error(tmp_path, runs):
    """Python dying before evalkit's handler (an import error) exits 1: not a regression."""
    crash = tmp_path / "dies.py"
    crash.write_text("raise ImportError('broken install')\n")
    p, summary, outs = run_script(tmp_path, EVALKIT_BIN=f"{sys.executable} {crash}", EVALKIT_BASELINE=runs["base"],
                                  EVALKIT_CANDIDATE_RUN=runs["bad"], EVALKIT_FAIL_ON_REGRESSION="0")
    assert p.returncode == 2 and outs["verdict"] == "error" and "a crash, not a regression" in p.stdout


def test_any_command_that_crashes_exits_2(tmp_path, runs, monkeypatch, capsys):
    from evalkit.backends import catalog
    monkeypatch.setitem(catalog.BACKENDS, "boom", (__name__, "Boom"))
    assert main(["gate", "--baseline", str(runs["base"]), "--candidate", "boom:m", "--no-cache",
                 "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("evalkit gate: internal error (RuntimeError")
    import evalkit.cli.compare as compare_cli

    def broken(args):
        raise TypeError("unexpected")
    monkeypatch.setattr(compare_cli, "run", broken)
    assert main(["compare", str(runs["base"]), str(runs["bad"])]) == 2   # a regression pair, but it crashed
    assert "evalkit compare: internal error (TypeError: unexpected)" in capsys.readouterr().err


# ---- the gate's inputs: a folder holding one run, no config, relative data paths ----------------------------
def test_gate_baseline_folder_holding_one_run_and_no_config(tmp_path, runs, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # `evalkit run --output baselines/main` writes baselines/main/<run-id>/: the docs' `baseline = "baselines/main"`
    cfg = tmp_path / "evalkit-gate.toml"
    cfg.write_text('baseline = "artifact-base/results"\n[candidate]\nrun = "artifact-bad"\n')
    assert main(["gate", "--config", str(cfg)]) == 1
    capsys.readouterr()
    # no --config: --baseline and the candidate on the command line are enough
    assert main(["gate", "--baseline", "artifact-base", "--candidate-run", str(runs["same"])]) == 0
    capsys.readouterr()
    assert main(["gate", "--candidate-run", str(runs["same"])]) == 2
    assert "no baseline: pass --baseline RUN_DIR" in capsys.readouterr().err
    # two runs in the folder: one line naming both
    make_run(tmp_path / "two", "run-x", {"mmlu": binary_items([1, 0], "acc")})
    make_run(tmp_path / "two", "run-y", {"mmlu": binary_items([1, 0], "acc")})
    assert main(["gate", "--baseline", "two", "--candidate-run", str(runs["same"])]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--baseline two: holds 2 run records (run-x, run-y); name one" in err
    assert main(["gate", "--baseline", str(tmp_path / "empty-nothing"), "--candidate-run", str(runs["same"])]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_gate_relative_data_path_of_an_import_says_how_to_fix_it(tmp_path, runs, capsys, monkeypatch):
    import evalkit.cli.gate as gate
    run_json = runs["base"] / "run.json"
    rec = json.loads(run_json.read_text())
    rec["tasks"]["gsm8k"]["data_source"] = "../shared/data/gsm8k"     # as an import run elsewhere recorded it
    run_json.write_text(json.dumps(rec))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["gate", "--baseline", str(runs["base"]), "--candidate", "hf:never-loaded", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "'../shared/data/gsm8k' (relative to the folder it was run or imported from)" in err
    assert "--data gsm8k=PATH or [data] gsm8k = \"PATH\" in the gate config" in err
    # the fix: --data (or [data]) points at the data, and the candidate is evaluated with it
    seen = {}

    def fake_run_model(spec, model_args, config, cache, output):
        seen.update(config.data_paths)
        return str(runs["same"])
    monkeypatch.setattr(gate, "run_model", fake_run_model)
    data = tmp_path / "gsm8k-copy"
    assert main(["gate", "--baseline", str(runs["base"]), "--candidate", "hf:m", "--no-cache",
                 "--data", f"gsm8k={data}"]) == 0
    assert seen == {"gsm8k": str(data)}
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'baseline = "{runs["base"]}"\n[data]\ngsm8k = "gsm8k-copy"\n')
    seen.clear()
    assert main(["gate", "--config", str(cfg), "--candidate", "hf:m", "--no-cache"]) == 0
    assert seen == {"gsm8k": str(data)}                                # relative to the config file
    # a saved candidate reads no data: the relative path does not matter
    assert main(["gate", "--baseline", str(runs["base"]), "--candidate-run", str(runs["same"])]) == 0
