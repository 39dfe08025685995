"""RULER at 1k-8k through two backends: one table from two run records (issue 36).

Reads two ``evalkit run`` records of the same RULER tasks, lengths, seed and ``--limit`` (e.g. one
through ``hf:smollm2-135m``, one through ``vllm:smollm2-135m``) and prints, per task and length,
each backend's score and whether the two agree: the same prompt (``prompt_hash``, which covers the
generated text), the same score, the same answer text; then each task's effective length, the
per-length means over all tasks, and the runs' wall time. The records' paths stay out of git
(``results/`` is ignored).

    python bench/ruler_sweep.py results/DIR/RUN_A results/DIR/RUN_B

The sweeps in bench/RESULTS.md ran (BACKEND vllm and hf; five essay tasks read a WikiText stand-in):

    evalkit run --model BACKEND:smollm2-135m --tasks niah_single_1,...,ruler_fwe \\
      --task-args TASK:lengths=1024+2048+4096+8192,samples=2 (each task) --data TASK=essay.txt \\
      --limit 2 --output results/ruler-issue36-budgets

(RULER's answer budgets; the first sweep added ``--gen-kwargs max_tokens=32``.)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def load(path: str):
    run = json.loads((Path(path) / "run.json").read_text())
    rows = {}
    for task in run["tasks"]:
        f = Path(path) / f"samples_{task}.jsonl"
        rows[task] = {r["doc_id"]: r for r in map(json.loads, f.read_text().splitlines())}
    return run, rows


def text(row) -> str:
    r = row["responses"][0]
    r = r[0] if isinstance(r, list) else r
    return r.get("text", "") if isinstance(r, dict) else str(r)


def main(argv) -> int:
    (a_run, a_rows), (b_run, b_rows) = load(argv[0]), load(argv[1])
    names = [a_run["model"].get("backend", "a"), b_run["model"].get("backend", "b")]
    tasks = [t for t in a_run["tasks"] if t in b_run["tasks"]]
    lengths = sorted({int(k.split(":")[1]) for t in tasks for k in a_run["tasks"][t]["breakdowns"]
                      if k.startswith("length:")})
    print(f"score per task x length ({names[0]} / {names[1]}); = : same prompt hash, score and answer text")
    print(f"{'task':18s}" + "".join(f"{n:>16d}" for n in lengths) + f"{'effective':>18s}")
    same = {"prompt": 0, "score": 0, "text": 0, "n": 0}
    per_length = {n: [[], []] for n in lengths}
    for t in tasks:
        cells = []
        for n in lengths:
            va, vb = (r["tasks"][t]["breakdowns"].get(f"length:{n}", {}).get("score", {}).get("value")
                      for r in (a_run, b_run))
            ids = [i for i, r in a_rows[t].items() if r["extra"]["length"] == n and i in b_rows[t]]
            agree = all(a_rows[t][i]["prompt_hash"] == b_rows[t][i]["prompt_hash"]
                        and a_rows[t][i]["metrics"]["score"] == b_rows[t][i]["metrics"]["score"]
                        and text(a_rows[t][i]) == text(b_rows[t][i]) for i in ids)
            for i in ids:
                same["n"] += 1
                same["prompt"] += a_rows[t][i]["prompt_hash"] == b_rows[t][i]["prompt_hash"]
                same["score"] += a_rows[t][i]["metrics"]["score"] == b_rows[t][i]["metrics"]["score"]
                same["text"] += text(a_rows[t][i]) == text(b_rows[t][i])
            per_length[n][0] += [a_rows[t][i]["metrics"]["score"] for i in ids]
            per_length[n][1] += [b_rows[t][i]["metrics"]["score"] for i in ids]
            cells.append(f"{va:.2f} / {vb:.2f} {'=' if agree else '≠'}".rjust(16) if va is not None else " " * 16)
        eff = [r["tasks"][t]["extra"]["ruler"]["effective_length"] for r in (a_run, b_run)]
        print(f"{t:18s}" + "".join(cells) + f"{str(eff[0]) + ' / ' + str(eff[1]):>18s}")
    def mean(v):
        return sum(v) / len(v) if v else float("nan")
    print(f"{'mean of all tasks':18s}" + "".join(f"{mean(per_length[n][0]):.2f} / {mean(per_length[n][1]):.2f}".rjust(16)
                                               for n in lengths))
    print(f"samples compared: {same['n']}; same prompt hash {same['prompt']}, same score {same['score']}, "
          f"same answer text {same['text']}")
    for name, run in zip(names, (a_run, b_run)):
        tm = run.get("timings", {})
        print(f"{name}: model {tm.get('model_s', 0):.0f} s, total {tm.get('total_s', 0):.0f} s wall; "
              f"run {run['run_id']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
