"""``evalkit mt-bench``: MT-Bench answers (generated or imported), graded by a judge model.

    evalkit mt-bench --model hf:smollm2-135m --judge vllm:Qwen/Qwen2.5-7B-Instruct --data DIR
    evalkit mt-bench --answers vicuna-13b-v1.3.jsonl --judge openai:gpt-4o --data DIR
    evalkit mt-bench --model hf:X --answers gpt-3.5-turbo.jsonl --baseline gpt-3.5-turbo --mode single,pairwise ...

Writes one run record per contestant (``tasks["mt_bench"]``: score per turn, overall and per
category with CIs; win rate against the baseline; the judge's reliability figures) and, for
pairwise grading, its battles (``battles_mt_bench.jsonl``, the arena's input).
"""
from __future__ import annotations

import math

from evalkit.backends import parse_model_args
from evalkit.cli.run import open_cache
from evalkit.records import MetricValue, Run


def register(sub):
    from evalkit.judges.cli_args import add_common_args, add_contestant_args, add_judge_args

    p = sub.add_parser("mt-bench", help="MT-Bench graded by an LLM judge (single 1-10 and/or pairwise)")
    add_contestant_args(p)
    add_judge_args(p)
    add_common_args(p)
    p.add_argument("--mode", default="single", metavar="single,pairwise",
                   help="single (1-10 per turn), pairwise (both orders), or both comma-separated")
    p.add_argument("--baseline", default=None, metavar="NAME",
                   help="pairwise against this contestant (FastChat's pairwise-baseline); default: all pairs")
    p.set_defaults(func=run)


def run(args):
    from evalkit.judges.cli_args import contestants_from, judge_setup, question_ids
    from evalkit.judges.mt_bench import MTBenchConfig, run_mt_bench

    modes = tuple(m.strip() for m in args.mode.split(",") if m.strip())
    bad = [m for m in modes if m not in ("single", "pairwise")]
    if bad or not modes:
        raise ValueError(f"--mode {args.mode!r}: expected single, pairwise or single,pairwise")
    contestants = contestants_from(args, args.model)
    judge_args, options, templates = judge_setup(args)
    cfg = MTBenchConfig(data_path=args.data, limit=args.limit, question_ids=question_ids(args),
                        references=args.references, max_tokens=args.max_tokens, seed=args.seed,
                        system_prompt=args.system_prompt, modes=modes, baseline=args.baseline, tags=args.tag)
    cache = open_cache(args)
    try:
        outs = run_mt_bench(contestants, args.judge, cfg, cache, None if args.no_output else args.output,
                            templates, parse_model_args(args.model_args), judge_args, options,
                            progress=True)  # a bar on a terminal, a line every 30 s in a CI log
    finally:
        cache.close()
    print(format_summary(outs))
    return 0


def _f(x, d=2):
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{d}f}"


def _ci(m: MetricValue) -> str:
    return f"[{_f(m.ci_low)}, {_f(m.ci_high)}]" if m.ci_low is not None else "-"


def format_summary(outs: list) -> str:
    runs = [o["run"] if isinstance(o["run"], Run) else Run.from_dict(o["run"]) for o in outs]
    rows = [("model", "metric", "value", "95% CI", "n")]
    for run in runs:
        for name, m in run.tasks["mt_bench"].metrics.items():
            rows.append((run.model.name, name, _f(m.value), _ci(m), str(m.n)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if outs:
        judge = runs[0].tasks["mt_bench"].extra["judge"]
        lines.append(f"\njudge {judge['name']}:")
        for kind in ("single", "pairwise"):
            figs = [run.tasks["mt_bench"].extra["judge"].get(kind) for run in runs]
            figs = [f for f in figs if f]
            if not figs:
                continue
            n = sum(f["n_judgments"] for f in figs)
            fails = sum(f["parse_failures"] for f in figs)
            line = (f"  {kind}: {n} judgments, parse failures {fails} ({_f(fails / n if n else None, 3)}), "
                    f"constrained {sum(f['constrained'] for f in figs)}, "
                    f"unresolved {sum(f['unresolved'] for f in figs)}")
            if kind == "pairwise":
                line += f", swap disagreement {_f(figs[0]['swap_disagreement_rate'], 3)}"
            else:
                line += f", score~length spearman {', '.join(_f(f['length_spearman'], 3) for f in figs)}"
            lines.append(line)
    for run in runs:
        if run.path:
            lines.append(f"run record: {run.path}")
    return "\n".join(lines)
