"""Rewards/s and verdicts: evalkit.rl's verifiers vs the frameworks' stock rewards.

- GSM8K (test, 1,319 items x 5 completions: the gold solution, its final number written ``N.00``,
  with a thousands comma, wrong by one, and "The answer is N." without ``####``): evalkit's
  ``Verifier("gsm8k")`` (``exact_match_numeric``, the evaluation metric) vs verl's stock GSM8K
  scorer, ``verl/utils/reward_score/gsm8k.py`` of verl 0.9.1 (``compute_score(solution_str,
  ground_truth)``, strict ``#### N`` on the last 300 characters, string equality; the ground truth as
  verl's ``examples/data_preprocess/gsm8k.py`` writes it: the number after ``####``, commas removed). verl does not
  install beside this environment's transformers, so its file is loaded from an unpacked wheel when
  ``verl`` is importable or on ``--verl-src``, else the transcription below (same lines) is used.
- MATH-500 (x 3 completions: the reference solution, its integer answer boxed wrong by one, the
  answer only in a "Final Answer:" line): ``Verifier("math500")`` (math-verify in worker processes)
  vs TRL's ``trl.rewards.accuracy_reward`` (math-verify in-process, TRL 1.16).
- MBPP (test, 500 canonical + 500 broken + 50 ``os._exit(0)`` programs): ``Verifier("mbpp")``
  (the sandbox) vs a subprocess-per-program exit-code check, the weaker checker trainers copy
  (neither TRL nor verl ships an MBPP reward; verl's prime_code takes stdin/stdout test cases).

    python bench/bench_rl_rewards.py [--math-limit 500] [--verl-src DIR]
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"

from evalkit.rl import Verifier  # noqa: E402
from evalkit.rl.export import iter_items  # noqa: E402


# ---- verl 0.9.1 verl/utils/reward_score/gsm8k.py (Apache-2.0), transcribed -------------------------
_SOLUTION_CLIP_CHARS = 300


def _verl_extract_solution(solution_str, method="strict"):
    if len(solution_str) > _SOLUTION_CLIP_CHARS:
        solution_str = solution_str[-_SOLUTION_CLIP_CHARS:]
    if method == "strict":
        solutions = re.findall("#### (\\-?[0-9\\.\\,]+)", solution_str)
        final_answer = None if len(solutions) == 0 else solutions[-1].replace(",", "").replace("$", "")
    else:
        answer = re.findall("(\\-?[0-9\\.\\,]+)", solution_str)
        final_answer = None
        if len(answer) != 0:
            for final_answer in reversed(answer):
                if final_answer not in ["", "."]:
                    break
    return final_answer


def _verl_compute_score(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0):
    answer = _verl_extract_solution(solution_str=solution_str, method=method)
    if answer is None:
        return 0
    return score if answer == ground_truth else format_score


def verl_gsm8k(verl_src):
    """verl's own file when we can find it, else the transcription above."""
    roots = [verl_src] if verl_src else []
    spec = importlib.util.find_spec("verl")
    if spec is not None and spec.submodule_search_locations:
        roots.append(str(Path(spec.submodule_search_locations[0]).parent))
    for root in roots:
        path = Path(root) / "verl" / "utils" / "reward_score" / "gsm8k.py"
        if path.is_file():
            s = importlib.util.spec_from_file_location("verl_gsm8k", path)
            mod = importlib.util.module_from_spec(s)
            s.loader.exec_module(mod)
            return mod.compute_score, str(path)
    return _verl_compute_score, "transcription of verl 0.9.1 verl/utils/reward_score/gsm8k.py"


# ---- completions -----------------------------------------------------------------------------------
def _bump(text):
    m = list(re.finditer(r"-?\d+", text))[-1]
    return text[:m.start()] + str(int(m.group()) + 1) + text[m.end():]


def gsm8k_cases():
    out = []
    for _, _, rec in iter_items("gsm8k", str(DATA / "gsm8k")):
        sol, final = rec["answer"], rec["answer"].split("####")[-1].strip().replace(",", "")  # verl's preprocessing
        body = sol.rsplit("####", 1)[0]
        n = int(final.replace(",", ""))
        out += [(rec, final, "gold solution", sol), (rec, final, "'#### N.00'", f"{body}#### {final}.00"),
                (rec, final, "'#### 1,234' comma", f"{body}#### {n:,}"), (rec, final, "wrong by one", _bump(sol)),
                (rec, final, "'The answer is N.' (no ####)", f"{body}The answer is {final}.")]
    return out


def math_cases(limit):
    out = []
    for _, _, rec in iter_items("math500", str(DATA / "math" / "MATH-500" / "test.jsonl"), limit=limit):
        sol, ans = rec["solution"], rec["answer"].strip()
        out.append((rec, "reference solution", sol))
        if re.fullmatch(r"-?\d+", ans) and "\\boxed{" + ans + "}" in sol:
            out.append((rec, "integer answer boxed wrong by one", sol.replace("\\boxed{" + ans + "}",
                                                                          "\\boxed{" + str(int(ans) + 1) + "}")))
        out.append((rec, "answer only in a 'Final Answer' line",
                    f"Final Answer: The final answer is ${ans}$. I hope it is correct."))
    return out


# ---- report ----------------------------------------------------------------------------------------
def report(name, ours, theirs, t_ours, t_theirs, labels, peer, examples):
    n = len(ours)
    print(f"\n## {name}: {n} completions")
    print(f"evalkit: {n / t_ours:8.1f} rewards/s ({t_ours:.1f} s), mean reward {sum(ours) / n:.3f}")
    print(f"{peer}: {n / t_theirs:8.1f} rewards/s ({t_theirs:.1f} s), mean reward {sum(theirs) / n:.3f}")
    print(f"speed ratio evalkit/{peer.split()[0]}: {t_theirs / t_ours:.2f}x")
    dis = defaultdict(list)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if float(a) != float(b):
            dis[(labels[i], a, b)].append(i)
    total = Counter(labels)
    print(f"disagreements: {sum(len(v) for v in dis.values())} of {n}")
    for (label, a, b), idx in sorted(dis.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(idx):5d} / {total[label]:5d}  [{label}] evalkit {a:g} vs {peer.split()[0]} {b:g}"
              f"  e.g. {examples(idx[0])}")


def bench_gsm8k(verl_src):
    cases = gsm8k_cases()
    scorer, where = verl_gsm8k(verl_src)
    ver = Verifier("gsm8k")
    golds, texts = [c[0] for c in cases], [c[3] for c in cases]
    t0 = time.perf_counter()
    ours = ver.rewards(golds, texts)
    t1 = time.perf_counter()
    theirs = [float(scorer(c[3], c[1])) for c in cases]
    t2 = time.perf_counter()
    print(f"(verl scorer: {where})")
    report("GSM8K test", ours, theirs, t1 - t0, t2 - t1, [c[2] for c in cases], "verl gsm8k.compute_score",
           lambda i: repr(cases[i][3][-40:]) + f" gold {cases[i][1]!r}")


def bench_math(limit):
    from trl.rewards import accuracy_reward
    cases = math_cases(limit)
    ver = Verifier("math500")
    ver.rewards([c[0] for c in cases[:8]], [c[2] for c in cases[:8]])  # start the workers outside the timing
    t0 = time.perf_counter()
    ours = ver.rewards([c[0] for c in cases], [c[2] for c in cases])
    t1 = time.perf_counter()
    theirs = accuracy_reward([[{"role": "assistant", "content": c[2]}] for c in cases],
                             [c[0]["solution"] for c in cases])
    t2 = time.perf_counter()
    theirs = [0.0 if x is None else x for x in theirs]
    report("MATH-500", ours, theirs, t1 - t0, t2 - t1, [c[1] for c in cases], "TRL accuracy_reward",
           lambda i: repr(cases[i][2][-50:]) + f" answer {cases[i][0]['answer']!r}")


def bench_mbpp():
    items = list(iter_items("mbpp", str(DATA / "mbpp")))
    cases = []
    for task, doc, rec in items:
        cases.append((task, doc, rec, "canonical", task.canonical_prediction(doc)))
        broken = f"def {doc.meta['entry_point']}(*a, **k):\n    return None\n"
        cases.append((task, doc, rec, "broken (returns None)", broken))
    for task, doc, rec in items[:50]:
        cases.append((task, doc, rec, "os._exit(0) before the asserts", "import os\nos._exit(0)\n"))
    with Verifier("mbpp") as ver:
        ver.rewards([cases[0][2]], [cases[0][4]])  # start the sandbox outside the timing
        t0 = time.perf_counter()
        ours = ver.rewards([c[2] for c in cases], [c[4] for c in cases])
        t1 = time.perf_counter()
    theirs = []
    with tempfile.TemporaryDirectory() as tmp:
        for task, doc, rec, _, code in cases:
            prog = Path(tmp) / "p.py"
            prog.write_text(code + "\n" + doc.meta["test"], encoding="utf-8")
            try:
                r = subprocess.run([sys.executable, str(prog)], capture_output=True, timeout=20, cwd=tmp)
                theirs.append(float(r.returncode == 0))
            except subprocess.TimeoutExpired:
                theirs.append(0.0)
    t2 = time.perf_counter()
    report("MBPP test", ours, theirs, t1 - t0, t2 - t1, [c[3] for c in cases], "subprocess exit-code check",
           lambda i: f"task {cases[i][1].id}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--math-limit", type=int, default=500)
    ap.add_argument("--verl-src", default=None, help="a folder holding verl/ (an unpacked verl wheel)")
    ap.add_argument("--only", choices=("gsm8k", "math", "mbpp"), default=None)
    args = ap.parse_args()
    print(f"evalkit verifier hashes: gsm8k {Verifier('gsm8k').version_hash}, math500 "
          f"{Verifier('math500').version_hash}, mbpp {Verifier('mbpp').version_hash}")
    if args.only in (None, "gsm8k"):
        bench_gsm8k(args.verl_src)
    if args.only in (None, "math"):
        bench_math(args.math_limit)
    if args.only in (None, "mbpp"):
        bench_mbpp()
    return 0


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("rl_rewards", main, skip_flags=("--only",)))
