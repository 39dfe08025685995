"""Reward == evaluation metric on every gold solution of the shared data, and 0 on perturbed copies.

For each data set the gold solutions (GSM8K test answers, MATH test solutions, HumanEval and MBPP
canonical programs) are scored twice: as the evaluation scores a completion (docs loaded by the
task from the data files, ``Task.score_all``, one generate request answered by the completion) and
as a reward (``evalkit.rl.Verifier`` over the exported gold record). Perturbed copies: GSM8K's
final number + 1; MATH solutions whose integer answer is boxed + 1. Prints, per set, how many items
agree and the mean value. On MATH the evaluation side computes ``judge_one``'s math_verify verdict
(``math_verify_equiv``, without minerva's 5x slower sympy check); the reward side is the verifier's
``judge_math_verify`` (the same verify, the gold's parse memoised per worker).

    python bench/check_rl_parity.py --sets gsm8k,humaneval,mbpp
    python bench/check_rl_parity.py --sets math --math-part 1/2     # then 2/2: each part ~5 min on 2 cores
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"

from evalkit.scoring.math_equivalence import math_verify_equiv  # noqa: E402
from evalkit.taskapi.requests import Completion  # noqa: E402
from evalkit.rl import Verifier  # noqa: E402
from evalkit.rl.export import iter_items  # noqa: E402
from evalkit.taskapi.task import RunContext  # noqa: E402

def judge_eval_math_verify(item):
    """``judge_one``'s math_verify verdict, computed as it computes it (no memo), without minerva."""
    try:
        return {"math_verify": float(math_verify_equiv(item.gold_solution, item.completion)), "exact_match": None,
                "status": "ok"}
    except Exception as e:  # noqa: BLE001 -- judge_one's handling
        return {"math_verify": 0.0, "exact_match": None, "status": f"math_verify error: {type(e).__name__}"}


SETS = {"gsm8k": ("gsm8k", DATA / "gsm8k", "exact_match_numeric"),
        "math": ("math", DATA / "math" / "MATH", "math_verify"),
        "humaneval": ("humaneval", DATA / "humaneval", "pass@1"),
        "mbpp": ("mbpp", DATA / "mbpp", "pass@1")}


def bump(text):
    m = list(re.finditer(r"-?\d+", text))[-1]
    return text[:m.start()] + str(int(m.group()) + 1) + text[m.end():]


def check(label, task, docs, records, texts, metric, ver):
    t0 = time.time()
    evals = [s.metrics[metric] for s in task.score_all(docs, [[[Completion(t, "stop")]] for t in texts],
                                                       RunContext(num_fewshot=0))]
    rewards = ver.rewards(records, texts)
    same = sum(a == b for a, b in zip(evals, rewards))
    print(f"{label:38s} {len(texts):5d} items: reward == metric for {same:5d}; "
          f"mean metric {sum(evals) / len(evals):.4f}"
          f", mean reward {sum(rewards) / len(rewards):.4f} ({time.time() - t0:.0f} s)")
    return same == len(texts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="gsm8k,math,humaneval,mbpp")
    ap.add_argument("--math-limit", type=int, default=None)
    ap.add_argument("--math-part", default=None, metavar="K/N",
                    help="only the K-th of N equal slices of MATH (keeps one command short)")
    args = ap.parse_args()
    ok = True
    for name in args.sets.split(","):
        task_name, path, metric = SETS[name]
        items = list(iter_items(task_name, str(path), limit=args.math_limit if name == "math" else None))
        if name == "math" and args.math_part:
            k, n = (int(x) for x in args.math_part.split("/"))
            items = items[(k - 1) * len(items) // n: k * len(items) // n]
        task = items[0][0]
        docs, records = [d for _, d, _ in items], [r for _, _, r in items]
        with Verifier(task_name) as ver:
            if name == "gsm8k":
                gold = [r["answer"] for r in records]
                ok &= check("GSM8K test gold answers", task, docs, records, gold, metric, ver)
                ok &= check("GSM8K final number + 1", task, docs, records, [bump(t) for t in gold], metric, ver)
            elif name == "math":
                task.judge_fn = judge_eval_math_verify
                gold = [r["solution"] for r in records]
                ok &= check("MATH test reference solutions", task, docs, records, gold, metric, ver)
                idx = [i for i, r in enumerate(records) if re.fullmatch(r"-?\d+", docs[i].target.strip())
                       and "\\boxed{" + docs[i].target.strip() + "}" in gold[i]]
                wrong = [gold[i].replace("\\boxed{" + docs[i].target.strip() + "}",
                                         "\\boxed{" + str(int(docs[i].target) + 1) + "}") for i in idx]
                ok &= check("MATH integer answer boxed + 1", task, [docs[i] for i in idx], [records[i] for i in idx],
                            wrong, metric, ver)
            else:
                canon = [task.canonical_prediction(d) for d in docs]
                ok &= check(f"{name} canonical solutions", task, docs, records, canon, metric, ver)
    print("ALL AGREE" if ok else "DISAGREEMENTS FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    from results_md import record_run
    part = next((a.replace("/", "of") for a in sys.argv if re.fullmatch(r"\d+/\d+", a)), "")
    sets = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--sets"), "all")
    sys.exit(record_run(f"rl_parity-{sets.replace(',', '-')}" + (f"-{part}" if part else ""), main))
