"""``evalkit grpo-diagnostics RUN_DIR``: GRPO group figures of a run with ``--gen-kwargs n=G``."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def register(sub):
    p = sub.add_parser("grpo-diagnostics", help="GRPO group figures of an n=G run: pass@k, zero-advantage groups, "
                                                "within-group std, learnable items",
                       description="Reads RUN_DIR/run.json and its samples; rescores all G completions of "
                                   "answer-matching tasks with the verifier; puts the figures (with 95%% CIs) "
                                   "into run.json as tasks.<task>.grpo (shown by the leaderboard) and the "
                                   "per-item figures into RUN_DIR/grpo_diagnostics.json. `evalkit run` with "
                                   "--gen-kwargs n=G already records them; this command recomputes them, "
                                   "e.g. for an older record.")
    p.add_argument("run_dir", help="a run record folder (results/<run-id>)")
    p.add_argument("--task", action="append", default=None, help="only these tasks (repeatable)")
    p.add_argument("--export-learnable", metavar="FILE", default=None,
                   help="write the items with 0 < pass rate < 1 (one JSON line each, with the gold) to FILE")
    p.add_argument("--no-write", action="store_true", help="change nothing in RUN_DIR (print only)")
    p.set_defaults(func=run)


def run(args):
    from evalkit.records import load_run, update_run_json
    from evalkit.rl.diagnostics import learnable_items, record_figures, run_diagnostics

    out = run_diagnostics(args.run_dir, args.task)
    lines = []
    for name, d in out["tasks"].items():
        if not d.get("n_items"):
            print(f"{name}: no samples", file=sys.stderr)
            continue
        ks = " ".join(f"pass@{k}={v:.3f}" for k, v in d["pass_at_k"].items())
        print(f"{name}: {d['n_items']} items, G={d['G'][0]}..{d['G'][1]}; {ks}; all-equal groups "
              f"{d['share_all_equal']:.1%} (all correct {d['share_all_correct']:.1%}, all wrong "
              f"{d['share_all_wrong']:.1%}); mean within-group std {d['mean_group_std']:.3f}; learnable "
              f"{d['share_learnable']:.1%} (golds from {d['gold_source']})")
        golds = d.pop("_golds")
        for i in learnable_items(d):
            gold = golds.get(i)
            lines.append({"task": name, "doc_id": i, "pass_rate": d["items"][i]["pass_rate"],
                          "n": d["items"][i]["n"], "gold": gold if isinstance(gold, (str, type(None)))
                          else json.dumps(gold, ensure_ascii=False, sort_keys=True, default=str)})
    for name, why in out["skipped"].items():
        print(f"{name}: skipped ({why})", file=sys.stderr)
    if not args.no_write:
        rec = load_run(args.run_dir)
        for name, d in out["tasks"].items():
            if d.get("n_items"):
                rec.run.tasks[name].grpo = record_figures(d)
        print(f"wrote the figures into {update_run_json(args.run_dir, rec.run)}", file=sys.stderr)
        path = Path(args.run_dir) / "grpo_diagnostics.json"
        path.write_text(json.dumps(out, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    if args.export_learnable:
        with open(args.export_learnable, "w", encoding="utf-8") as f:
            for row in lines:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"wrote {len(lines)} learnable items to {args.export_learnable}", file=sys.stderr)
    return 0
