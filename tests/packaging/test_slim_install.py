"""The slim install: the built wheel installed alone (`pip install evalkit-harness`, no extras) into a
fresh venv gives compare, gate on a saved run, power, score (model-free metrics), arena rate, cache and
log tools, with the documented exit codes, and brings no torch, transformers, vLLM or datasets.
Missing extras fail with one line naming the extra. Built once per session (PyPI is reachable)."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compare.test_compare import binary_items, make_run, paired_outcomes

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "vllm", "datasets", "sacrebleu", "evaluate", "math_verify", "antlr4",
         "rouge_score", "huggingface_hub", "mlflow", "wandb", "streamlit", "pyseccomp")

pytestmark = pytest.mark.slow


def _sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 900), **kw)
    if p.returncode:
        raise AssertionError(f"{cmd} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@pytest.fixture(scope="session")
def slim(tmp_path_factory):
    root = tmp_path_factory.mktemp("slim")
    src = root / "src"
    shutil.copytree(REPO, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", "results", ".pytest_cache", ".venv", "bench"))
    wheels = root / "wheels"
    try:   # the machine's setuptools (fast); else pip's isolated build env from PyPI
        _sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(src),
             "-w", str(wheels)])
    except AssertionError:
        _sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(wheels)])
    (wheel,) = wheels.glob("evalkit_harness-*.whl")
    venv = root / "venv"
    _sh([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    _sh([str(py), "-m", "pip", "install", "-q", str(wheel)])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return {"root": root, "py": py, "evalkit": venv / "bin" / "evalkit", "env": env, "wheel": wheel}


def ek(slim, *args, cwd=None):
    return subprocess.run([str(slim["evalkit"]), *map(str, args)], capture_output=True, text=True,
                          env=slim["env"], cwd=cwd or slim["root"], timeout=300)


def test_slim_env_has_no_heavy_packages(slim):
    code = ("import importlib.util, json; print(json.dumps({m: importlib.util.find_spec(m) is not None "
            "for m in %r}))" % (list(HEAVY),))
    found = json.loads(_sh([str(slim["py"]), "-c", code], env=slim["env"], cwd=slim["root"]).stdout)
    assert not any(found.values()), {m for m, v in found.items() if v}
    pkgs = _sh([str(slim["py"]), "-m", "pip", "list", "--format", "json"], env=slim["env"], cwd=slim["root"]).stdout
    names = {p["name"].lower() for p in json.loads(pkgs)}
    assert "evalkit-harness" in names and "torch" not in names
    # the installed package, not this checkout
    where = _sh([str(slim["py"]), "-c", "import evalkit; print(evalkit.__file__)"], env=slim["env"],
                cwd=slim["root"]).stdout
    assert str(slim["root"] / "venv") in where
    p = ek(slim, "--version")
    assert p.returncode == 0 and p.stdout.strip().startswith("evalkit 0.")


def test_slim_compare_and_gate_exit_codes(slim, tmp_path):
    b, c = paired_outcomes(50, 30, 2, 18)
    base = make_run(tmp_path, "base", {"gsm8k": binary_items(b, "exact_match")})
    bad = make_run(tmp_path, "bad", {"gsm8k": binary_items(c, "exact_match")})
    same = make_run(tmp_path, "same", {"gsm8k": binary_items(b, "exact_match")})
    other = make_run(tmp_path, "other", {"gsm8k": binary_items(b[:40], "exact_match")})
    p = ek(slim, "compare", base, same)
    assert p.returncode == 0, p.stderr
    assert "result: no regression" in p.stdout
    p = ek(slim, "compare", base, bad, "--format", "junit")
    assert p.returncode == 1 and '<failure type="regression"' in p.stdout
    p = ek(slim, "compare", base, other)                          # different data: not comparable
    assert p.returncode == 2 and "different data" in p.stderr and "Traceback" not in p.stderr
    p = ek(slim, "compare", base, tmp_path / "missing")
    assert p.returncode == 2 and "not a run record" in p.stderr
    p = ek(slim, "compare", base, bad, "--alpha", "x")            # argparse usage error
    assert p.returncode == 2
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'baseline = "{base}"\n')
    p = ek(slim, "gate", "--config", cfg, "--candidate-run", bad, "--format", "github")
    assert p.returncode == 1 and p.stdout.startswith("::error title=evalkit regressed")
    p = ek(slim, "gate", "--config", cfg, "--candidate-run", same)
    assert p.returncode == 0
    # the packaged CI script, as GitLab and other CIs call it
    env = {**slim["env"], "EVALKIT_BASELINE": str(base), "EVALKIT_CANDIDATE_RUN": str(bad),
           "EVALKIT_REPORT_DIR": str(tmp_path / "ci")}
    p = subprocess.run([str(slim["evalkit"]), "ci-gate"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    assert p.returncode == 1, p.stderr
    assert '<failure type="regression"' in (tmp_path / "ci" / "gate-junit.xml").read_text()
    p = ek(slim, "power", "--task", "gsm8k", "--n", "1319", "--discordance", "0.12")
    assert p.returncode == 0 and "minimum detectable drop 2.44 points" in p.stdout


def test_slim_score_arena_cache_and_missing_extras(slim, tmp_path):
    rng = random.Random(0)
    docs = [(rng.randint(1, 50), rng.randint(1, 50)) for _ in range(30)]
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {a}+{b}?", "answer": f"{a}+{b}={a + b}\n#### {a + b}"})
                            + "\n" for a, b in docs))
    for name, wrong_every in (("good", 10), ("worse", 2)):
        (tmp_path / f"{name}.jsonl").write_text("".join(
            json.dumps({"doc_id": str(i), "prediction": f"The answer is {a + b + (i % wrong_every == 0)}."}) + "\n"
            for i, (a, b) in enumerate(docs)))
        p = ek(slim, "score", "--task", "gsm8k", "--predictions", tmp_path / f"{name}.jsonl", "--data", data,
               "--output", tmp_path / "res", "--name", name)
        assert p.returncode == 0, p.stderr
    runs = sorted((tmp_path / "res").iterdir(), key=lambda d: json.loads((d / "run.json").read_text())["model"]["name"])
    good, worse = runs
    acc = json.loads((good / "run.json").read_text())["tasks"]["gsm8k"]["metrics"]["exact_match_flexible"]["value"]
    assert acc == pytest.approx(27 / 30)
    p = ek(slim, "compare", good, worse, "--primary", "exact_match_flexible")
    assert p.returncode == 1, p.stdout + p.stderr                 # 3 wrong -> 15 wrong of 30
    battles = tmp_path / "battles.jsonl"
    pairs = [rng.sample("abc", 2) for _ in range(60)]
    battles.write_text("".join(json.dumps({"model_a": x, "model_b": y, "winner": rng.choice(["model_a", "model_b", "tie"])})
                               + "\n" for x, y in pairs))
    p = ek(slim, "arena", "rate", battles, "--rounds", "20", "--no-output")
    assert p.returncode == 0 and "60 battles" in p.stdout
    p = ek(slim, "cache", "info", "--cache-dir", tmp_path / "cache")
    assert p.returncode == 0 and "no cache yet" in p.stdout
    for args, extra in ((("run", "--model", "hf:x", "--tasks", "gsm8k", "--data", f"gsm8k={data}", "--num-fewshot", "0"), "hf"),
                        (("score", "--task", "translation", "--predictions", tmp_path / "good.jsonl",
                          "--references", data, "--no-output"), "metrics"),
                        (("log", good, "--to", "mlflow"), "mlflow")):
        p = ek(slim, *args)
        assert p.returncode == 2, (args, p.stderr)
        line = p.stderr.strip()
        assert len(line.splitlines()) == 1 and "Traceback" not in line, line
        # installed from a wheel file (the name is not on PyPI yet): the hint installs the extra from it
        assert line.endswith(f"pip install '{slim['wheel']}[{extra}]'") or "'eval' extra" in line, line


def test_slim_lm_eval_export_and_import(slim, tmp_path):
    """lm-eval's file layout in and out needs no extra: export a run, import it back, compare them."""
    b, _ = paired_outcomes(40, 25, 2, 10)
    base = make_run(tmp_path, "base", {"gsm8k": binary_items(b, "exact_match")})
    p = ek(slim, "export", "--format", "lm-eval", base, "--output", tmp_path / "lm")
    assert p.returncode == 0, p.stderr
    p = ek(slim, "import", "lm-eval", tmp_path / "lm", "--output", tmp_path / "back")
    assert p.returncode == 0, p.stderr
    (back,) = [d for d in (tmp_path / "back").iterdir() if (d / "run.json").exists()]
    p = ek(slim, "compare", base, back)
    assert p.returncode == 0 and "no regression" in p.stdout, p.stderr


def test_the_wheel_holds_every_package_and_data_file_the_release_checks(slim):
    """What the release workflow runs after installing the wheel alone (python -m evalkit.ci.release_check)."""
    p = subprocess.run([str(slim["py"]), "-m", "evalkit.ci.release_check"], capture_output=True, text=True,
                       env=slim["env"], cwd=slim["root"], timeout=120)
    assert p.returncode == 0, p.stderr
    assert "10 packages" in p.stdout


def test_the_gate_actions_install_step_installs_from_its_own_repository(tmp_path):
    """The action's install step (install.sh) as GitHub runs it: GITHUB_ACTION_PATH inside the repository,
    INSTALL=action; the venv then runs evalkit from the repository, not from PyPI (the name is not
    published yet). Dependencies come from the environment running the tests (PIP_NO_DEPS, and a .pth naming
    its site-packages: --system-site-packages would give the base interpreter's, not this venv's)."""
    import site
    venv = tmp_path / "venv"
    _sh([sys.executable, "-m", "venv", str(venv)])
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "_tests_parent_env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(GITHUB_ACTION_PATH=str(REPO / ".github" / "actions" / "gate"), INSTALL="action", EXTRAS="",
               PYTHON=str(venv / "bin" / "python"), PIP_NO_DEPS="1", PIP_NO_BUILD_ISOLATION="1", CI="true",
               GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), GITHUB_OUTPUT=str(tmp_path / "out.txt"))
    p = subprocess.run(["bash", str(REPO / ".github" / "actions" / "gate" / "install.sh")], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert f"pip install {REPO}" in p.stdout
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import evalkit, sys; print(evalkit.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    assert str(venv) in where  # installed into the venv, from the repository
    env["GITHUB_ACTION_PATH"] = str(tmp_path)
    p = subprocess.run(["bash", str(REPO / ".github" / "actions" / "gate" / "install.sh")], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 2 and "no pyproject.toml" in p.stderr


def test_the_release_workflow_builds_tests_the_wheel_alone_and_publishes():
    import yaml
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
    on = wf.get("on") or wf.get(True)
    assert on["push"]["tags"] == ["v*"]
    build = "\n".join(str(s.get("run", "")) for s in wf["jobs"]["build"]["steps"])
    assert "python -m build" in build and "venv" in build and "evalkit.ci.release_check" in build
    publish = wf["jobs"]["publish"]
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert any(str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish") for s in publish["steps"])
