"""Real run records for the dashboard tests, written once per test session by evalkit itself.

Fast set (no model, ~20-30 s): ``evalkit score`` on real outputs and real data:
- gsm8k (first 50 test questions) scored on the GSM8K paper's published GPT-3 solutions
  (``example_model_solutions.jsonl``: 6B and 175B finetuned, 175B with verifier); the 6B solutions
  also on the first 20 questions only (same task, other prompts -> its own column);
- WMT17 en-de (first 200 segments) for two submitted systems, tagged ``wmt``;
- MATH-500 (first 30) with a reference-answer system that answers 2 of 3 (subject/level breakdowns);
- ``evalkit arena rate`` on the arena-hard judge battles (20 bootstrap rounds).

Model set (slow): ``evalkit run`` of the bundled SmolLM2-135M on 4 GSM8K questions (0-shot) with greedy
``max_tokens=16`` and ``max_tokens=4`` (two rows of one model, one column), in a subprocess.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
GPT3 = {"6b_finetuning": "gpt3-6b-finetuned", "175b_finetuning": "gpt3-175b-finetuned",
        "175b_verification": "gpt3-175b-verifier"}
WMT = ("newstest2017.uedin-nmt.4722.en-de", "newstest2017.online-A.0.en-de")
_STATE: dict = {}


def need(*parts) -> Path:
    import pytest
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared data {p} is not available on this machine")
    return p


def _cli(*argv) -> None:
    from evalkit.cli import main
    rc = main([str(a) for a in argv])
    assert rc == 0, f"evalkit {' '.join(map(str, argv))} exited {rc}"


def fast_records(work: Path) -> Path:
    """The no-model records (built on first call, then reused by every dashboard test module)."""
    if "fast" in _STATE:
        return _STATE["fast"]
    gsm = need("gsm8k")
    wmt = need("wmt", "wmt17_en_de", "extracted")
    math500 = need("math", "MATH-500")
    battles = need("chatbot_arena", "arena_hard_battles.jsonl")
    out, inputs = work / "results", work / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line, _ in zip(open(gsm / "example_model_solutions.jsonl", encoding="utf-8"),
                                                range(50))]
    for key, name in GPT3.items():
        pred = inputs / f"{name}.jsonl"
        pred.write_text("".join(json.dumps({"doc_id": str(i), "prediction": r[key]["solution"]}) + "\n"
                                for i, r in enumerate(rows)), encoding="utf-8")
        _cli("score", "--task", "gsm8k", "--data", gsm, "--predictions", pred, "--name", name, "--output", out,
             "--tag", "gpt3")
    _cli("score", "--task", "gsm8k", "--data", gsm, "--predictions", inputs / "gpt3-6b-finetuned.jsonl",
         "--limit", 20, "--name", "gpt3-6b-finetuned", "--output", out, "--tag", "gpt3")
    for system in WMT:
        _cli("score", "--task", "translation", "--predictions", wmt / system,
             "--references", wmt / "newstest2017-ende-ref.de", "--limit", 200, "--output", out, "--tag", "wmt")
    probs = [json.loads(line) for line, _ in zip(open(math500 / "test.jsonl", encoding="utf-8"), range(30))]
    pred = inputs / "math.jsonl"
    pred.write_text("".join(json.dumps({"doc_id": p["unique_id"], "prediction": "Final Answer: The final answer is "
                                        f"${p['answer'] if i % 3 else '-1'}$. I hope it is correct."}) + "\n"
                            for i, p in enumerate(probs)), encoding="utf-8")
    _cli("score", "--task", "math500", "--data", math500, "--predictions", pred, "--limit", 30,
         "--name", "math-reference-2of3", "--output", out)
    _cli("arena", "rate", battles, "--rounds", 20, "--output", out, "--tag", "arena-hard")
    _STATE["fast"] = out
    return out


def model_records(work: Path, model_dir: str) -> Path:
    """The fast records plus two real tiny-model runs (copied into a second folder)."""
    if "full" in _STATE:
        return _STATE["full"]
    gsm = need("gsm8k")
    full = work / "results_full"
    shutil.copytree(fast_records(work / "fast"), full)
    env = {**os.environ, "EVALKIT_TORCH_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    for max_tokens in (16, 4):
        cmd = [sys.executable, "-m", "evalkit", "run", "--model", f"hf:{model_dir}", "--tasks", "gsm8k",
               "--limit", "4", "--num-fewshot", "0", "--data", f"gsm8k={gsm}",
               "--gen-kwargs", f"max_tokens={max_tokens}",
               "--output", str(full), "--cache-dir", str(work / "cache"), "--tag", "tiny"]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
    _STATE["full"] = full
    return full


def mt_bench_like(out: Path) -> Path:
    """A run record with the fields judges/mt_bench.py writes (category breakdowns, turn metrics,
    judge figures), without running a judge model."""
    mv = lambda v, n: {"value": v, "stderr": 0.1, "ci_low": v - 0.5, "ci_high": v + 0.5, "n": n,  # noqa: E731
                       "kind": "mean", "higher_is_better": True}
    run = {"schema_version": 1, "run_id": "mtb-1", "created_at": "2026-01-02T03:04:05+00:00",
           "model": {"name": "m", "backend": "hf", "spec": "hf:m", "identity_hash": "abc"},
           "judge": {"name": "judge-x"}, "config": {"tags": []},
           "tasks": {"mt_bench": {"version": "1", "prompt_hash": "p", "n_docs": 2,
                                  "metrics": {"score": mv(6.0, 4), "score_turn1": mv(7.0, 2),
                                              "score_turn2": mv(5.0, 2)},
                                  "breakdowns": {"writing": {"score": mv(8.0, 2)}, "math": {"score": mv(4.0, 2)}},
                                  "extra": {"judge": {"single": {"n_judgments": 4, "parse_failures": 1,
                                                                 "parse_failure_rate": 0.25}}}}}}
    from evalkit.records import write_run

    write_run(out, run, {"mt_bench": []})
    return out


def coverage_fixture(out: Path) -> Path:
    """Five models on up to three tasks, where the naive mean win rate ranks a one-task model first:
    ``solo-a`` and ``solo-b`` ran only ``task_a`` (and beat everyone there); ``wide-1..3`` ran all three.
    Metric values with CIs as ``evalkit run`` writes them; per-sample rows so the sample view works."""
    from evalkit.records import write_run

    def mv(v, n=100):
        return {"value": v, "stderr": 0.01, "ci_low": v - 0.02, "ci_high": v + 0.02, "n": n, "kind": "mean",
                "higher_is_better": True}

    scores = {"solo-a": {"task_a": 0.95}, "solo-b": {"task_a": 0.90},
              "wide-1": {"task_a": 0.70, "task_b": 0.80, "task_c": 0.75},
              "wide-2": {"task_a": 0.60, "task_b": 0.50, "task_c": 0.55},
              "wide-3": {"task_a": 0.40, "task_b": 0.30, "task_c": 0.35}}
    for i, (model, tasks) in enumerate(scores.items()):
        run = {"schema_version": 1, "run_id": f"cov-{model}", "created_at": f"2026-01-0{i + 1}T00:00:00+00:00",
               "model": {"name": model, "backend": "hf", "spec": f"hf:{model}", "identity_hash": model},
               "config": {"tags": ["coverage"]},
               "tasks": {t: {"version": "1", "prompt_hash": f"p-{t}", "n_docs": 100, "metrics": {"acc": mv(v)}}
                         for t, v in tasks.items()}}
        rows = {t: [{"doc_id": str(d), "prompt": f"Q: item {d} of {t}?\nA:", "responses": [f"{model} says {d}"],
                     "target": str(d), "extracted": str(d), "metrics": {"acc": float(d < 100 * v)}}
                    for d in range(4)] for t, v in tasks.items()}
        write_run(out, run, rows)
    return out


SUBJECTS = [f"subject_{i:02d}_{w}" for i, w in enumerate(
    ("abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology college_chemistry "
     "college_computer_science college_mathematics college_medicine college_physics computer_security "
     "conceptual_physics econometrics electrical_engineering elementary_mathematics formal_logic global_facts "
     "high_school_biology high_school_chemistry high_school_computer_science high_school_european_history "
     "high_school_geography high_school_government_and_politics high_school_macroeconomics high_school_mathematics "
     "high_school_microeconomics high_school_physics high_school_psychology high_school_statistics "
     "high_school_us_history high_school_world_history human_aging human_sexuality international_law "
     "jurisprudence logical_fallacies machine_learning management marketing medical_genetics miscellaneous "
     "moral_disputes moral_scenarios nutrition philosophy prehistory professional_accounting professional_law "
     "professional_medicine professional_psychology public_relations security_studies sociology "
     "us_foreign_policy virology world_religions").split())]


def many_models(out: Path, n: int = 16) -> Path:
    """``n`` models with long, similar names (as on a real leaderboard) on an MMLU-like task with 57 subject
    breakdowns and two more tasks; deterministic values, CIs from the binomial standard error."""
    import math

    from evalkit.records import write_run

    def mv(v, items):
        se = math.sqrt(max(v * (1 - v), 1e-4) / items)
        return {"value": v, "stderr": se, "ci_low": max(0.0, v - 1.96 * se), "ci_high": min(1.0, v + 1.96 * se),
                "n": items, "kind": "mean", "higher_is_better": True}

    for i in range(n):
        name = f"example-org/long-model-family-{7 + i}b-instruct-v{i % 3}.{i}"
        base = 0.35 + 0.5 * ((i * 7) % n) / n
        subjects = {f"subject:{s}": {"acc": mv(min(0.99, base * (0.6 + 0.8 * ((j * 13 + i) % 57) / 57)), 100)}
                    for j, s in enumerate(SUBJECTS)}
        tasks = {"mmlu_like": {"version": "1", "prompt_hash": "mm", "n_docs": 14042,
                               "metrics": {"acc": mv(base, 14042)}, "breakdowns": subjects},
                 "gsm8k_like": {"version": "1", "prompt_hash": "gs", "n_docs": 1319,
                                "metrics": {"exact_match": mv(max(0.02, base - 0.2 + 0.01 * (i % 5)), 1319)}},
                 "tiny_task": {"version": "1", "prompt_hash": "tt", "n_docs": 3,
                               "metrics": {"acc": mv([1.0, 0.6667, 0.3333][i % 3], 3)}}}
        run = {"schema_version": 1, "run_id": f"many-{i:02d}", "created_at": f"2026-02-01T00:{i:02d}:00+00:00",
               "model": {"name": name, "backend": "hf", "spec": f"hf:{name}", "identity_hash": f"h{i}"},
               "config": {"tags": ["many"]}, "tasks": tasks}
        rows = {t: [{"doc_id": str(d), "prompt": f"Q: question {d}?\nA:", "responses": [f"answer {d} by {name}"],
                     "target": str(d), "extracted": str(d), "metrics": {next(iter(tasks[t]["metrics"])):
                                                                         float((d + i) % 2)}}
                    for d in range(3)] for t in tasks}
        write_run(out, run, rows)
    return out


def grpo_records(out: Path, items: int = 12) -> Path:
    """Two 'models' with G = 4 real GSM8K solutions per item (the paper's GPT-3 solutions, in two
    different orders and mixes), scored as G-sample runs: their records carry GRPO group figures."""
    gsm = need("gsm8k")
    rows = [json.loads(line) for line, _ in zip(open(gsm / "example_model_solutions.jsonl", encoding="utf-8"),
                                                range(items))]
    mixes = {"grpo-policy-a": ["6b_finetuning", "175b_finetuning", "175b_verification", "6b_finetuning"],
             "grpo-policy-b": ["175b_verification", "175b_verification", "175b_finetuning", "175b_verification"]}
    for name, keys in mixes.items():
        pred = out.parent / f"{name}.jsonl"
        pred.write_text("".join(json.dumps({"doc_id": str(i), "predictions": [r[k]["solution"] for k in keys]}) + "\n"
                                for i, r in enumerate(rows)), encoding="utf-8")
        _cli("score", "--task", "gsm8k", "--data", gsm, "--predictions", pred, "--limit", items, "--name", name,
             "--output", out, "--tag", "grpo")
    return out


def best_of_n_problems(policy: str, items: int = 21) -> list[dict]:
    """Hand-built best-of-N problems (N = 4) with figures known by hand. Item i's sample j is correct
    when (i + j) % 3 == 0, so every item has a correct sample (oracle@4 = 1), pass@1 = 1/3 and
    maj@4 = 1/3 (wrong answers all differ; a tie goes to the answer given first). ``good`` rewards
    rank every correct sample above every wrong one (rm_auroc = 1, rm_best_of@4 = 1); ``bad`` rewards
    the reverse (rm_auroc = 0, rm_best_of@4 = 0)."""
    out = []
    for i in range(items):
        correct = [1.0 if (i + j) % 3 == 0 else 0.0 for j in range(4)]
        sign = 1.0 if policy == "good" else -1.0
        out.append({"correct": correct, "votes": ["42" if c else f"w{i}-{j}" for j, c in enumerate(correct)],
                    "rewards": [sign * c + 0.01 * j for j, c in enumerate(correct)]})
    return out


def best_of_n_records(out: Path) -> Path:
    """Three runs with ``--reward-model``-style best-of-N figures on a 21-item GSM8K column (tag ``bon``),
    computed by ``evalkit.scoring.best_of_n`` from ``best_of_n_problems``: ``bon-policy-good-rm`` scored by
    ``fixture-rm`` (good rewards) and, in a second run of the same model, by ``fixture-rm-2`` (bad
    rewards); ``bon-policy-bad-rm`` by ``fixture-rm`` (bad rewards)."""
    from evalkit.scoring import best_of_n
    from evalkit.records import ModelInfo, TaskEntry, new_run, write_run

    for name, policy, rm in (("bon-policy-good-rm", "good", "fixture-rm"), ("bon-policy-bad-rm", "bad", "fixture-rm"),
                             ("bon-policy-good-rm", "bad", "fixture-rm-2")):
        problems = best_of_n_problems(policy)
        entry = TaskEntry(version="1", n_docs=len(problems), prompt_hash="bon-hand-built", output_type="generate_until",
                          metrics={"exact_match": {"value": 1 / 3, "stderr": 0.1, "ci_low": 0.15, "ci_high": 0.55,
                                                   "n": len(problems), "kind": "mean", "higher_is_better": True}})
        rows = [{"doc_id": str(i), "prompt": f"Question {i}?", "responses": [f"answer {v}" for v in p["votes"]],
                 "target": "42", "metrics": {"exact_match": p["correct"][0]}} for i, p in enumerate(problems)]
        best_of_n.attach(entry, rows, problems, seed=1234, task="gsm8k")
        run = new_run("evaluation", ModelInfo(spec=f"hf:{name}", name=name, backend="hf", identity_hash=name),
                      {"tags": ["bon"]}, {"gsm8k": entry}, label=name,
                      reward_model={"spec": f"hf:{rm}", "name": rm, "backend": "hf"})
        write_run(out, run, {"gsm8k": rows})
    return out


def app_page(results, monkeypatch, view: str = "Task", timeout: int = 120):
    """The dashboard's page ``view`` on the records under ``results`` (Streamlit's app test harness),
    run once without an exception."""
    from streamlit.testing.v1 import AppTest  # (the install provides it: missing is a failure)
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboards" / "app.py"),
                           default_timeout=timeout).run()
    at.sidebar.radio(key="view").set_value(view)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
