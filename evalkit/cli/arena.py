"""``evalkit arena``: ratings from pairwise battles, imported or judged.

    evalkit arena rate battles.jsonl [--method bt|elo] [--anchor MODEL]
    evalkit arena run --models hf:A,hf:B,hf:C --prompts mt_bench --judge vllm:J [--budget N]
    evalkit arena run --answers a.jsonl --answers b.jsonl --prompts mt_bench --judge hf:J --data DIR

``rate`` reads FastChat/LMArena battle files (``model_a``, ``model_b``, ``winner``; JSONL, a JSON
array or parquet) in chunks into columns; Bradley-Terry intervals come from a multinomial bootstrap of
the (pair, outcome) counts, so a million battles rate in seconds. ``run`` answers (or reuses cached
answers), judges each pair in both orders and stores the
battles. Both print the ratings table and write a run record with ``tasks["arena"]``.
"""
from __future__ import annotations

import math

from evalkit.backends import parse_model_args
from evalkit.cli.run import open_cache


def register(sub):
    from evalkit.judges.cli_args import add_common_args, add_contestant_args, add_judge_args

    p = sub.add_parser("arena", help="Elo/Bradley-Terry ratings from pairwise battles (imported or judged)")
    asub = p.add_subparsers(dest="arena_command", metavar="SUBCOMMAND")
    asub.required = True

    r = asub.add_parser("rate", help="rate imported battles (FastChat/LMArena fields model_a, model_b, winner)")
    r.add_argument("battles", nargs="+", metavar="BATTLES", help="JSONL, JSON or parquet battle file(s)")
    add_rating_args(r)
    r.add_argument("--style-control", action="store_true",
                   help="also fit LMArena's style control: BT with each battle's conv_metadata style covariates "
                        "(answer tokens, headers, lists, bold; side A and B) held equal, with bootstrap CIs for "
                        "the ratings and the style coefficients (--method bt)")
    r.add_argument("--style-l2", type=float, default=0.0, metavar="L2",
                   help="L2 penalty of the style-controlled fit (0: plain MLE; 0.5: FastChat's sklearn default)")
    r.add_argument("--output", default="results", help="results folder")
    r.add_argument("--no-output", action="store_true", help="write no run record")
    r.add_argument("--tag", action="append", default=[], help="tag the run record")
    r.set_defaults(func=run_rate)

    j = asub.add_parser("run", help="answer prompts with several models, judge every pair, rate")
    add_contestant_args(j, flag="--models")
    j.add_argument("--prompts", default="mt_bench", metavar="mt_bench|FILE",
                   help="MT-Bench (both turns; --data DIR for local files) or a JSONL/JSON/CSV file of prompts "
                        "({id, prompt} or {question_id, turns, category, reference})")
    j.add_argument("--budget", type=int, default=None,
                   help="judge only N (pair, prompt) matches, spent where the outcome is least known")
    j.add_argument("--round-size", type=int, default=None, help="matches per scheduling round (default: pairs)")
    add_judge_args(j)
    add_common_args(j)
    add_rating_args(j)
    j.set_defaults(func=run_judged)


def add_rating_args(p):
    p.add_argument("--method", choices=("bt", "elo"), default="bt",
                   help="Bradley-Terry maximum likelihood (LMArena, default) or online Elo (FastChat's first)")
    p.add_argument("--rounds", type=int, default=100, help="bootstrap resamples for the CIs")
    p.add_argument("--rating-seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--anchor", default=None, metavar="MODEL", help="pin this model's rating (bt)")
    p.add_argument("--anchor-rating", type=float, default=1000.0)


def run_rate(args):
    from evalkit.arena import STYLE_CONTROL_ELEMENTS_V1, read_battle_table
    from evalkit.judges.arena import arena_record, rate, write_arena

    style = STYLE_CONTROL_ELEMENTS_V1 if args.style_control else ()
    battles = read_battle_table(args.battles, style=style)   # columns, chunked: no Python object per battle
    if not len(battles):
        raise ValueError(f"{', '.join(args.battles)}: no battles")
    summary = rate(battles, args.method, args.rounds, args.rating_seed, args.anchor, args.anchor_rating,
                   progress=True, style_control=args.style_control, style_l2=args.style_l2)
    source = {"battles": ",".join(args.battles), "battles_sha256": dict(battles.digests)}
    config = {"seed": args.rating_seed, "tags": args.tag, "method": args.method, "rounds": args.rounds}
    if args.style_control:
        config.update(style_control=True, style_l2=args.style_l2, style_elements=list(style))
    run = arena_record(summary, battles, source, config, [{"name": m} for m in summary["order"]])
    if not args.no_output:
        write_arena(args.output, run, battles)
    print(format_ratings(run))
    return 0


def run_judged(args):
    from evalkit.judges.arena import ArenaConfig, run_arena
    from evalkit.judges.cli_args import contestants_from, judge_setup, question_ids

    contestants = contestants_from(args, args.models)
    judge_args, options, templates = judge_setup(args)
    cfg = ArenaConfig(prompts=args.prompts, data_path=args.data, references=args.references, limit=args.limit,
                      question_ids=question_ids(args), max_tokens=args.max_tokens, system_prompt=args.system_prompt,
                      seed=args.seed, budget=args.budget, round_size=args.round_size, method=args.method,
                      rounds=args.rounds, anchor=args.anchor, anchor_rating=args.anchor_rating, tags=args.tag)
    cache = open_cache(args)
    try:
        out = run_arena(contestants, args.judge, cfg, cache, None if args.no_output else args.output, templates,
                        parse_model_args(args.model_args), judge_args, options)
    finally:
        cache.close()
    print(format_ratings(out["run"]))
    return 0


def _f(x, d=1):
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{d}f}"


def format_ratings(run: dict) -> str:
    t = run["tasks"]["arena"]
    rows = [("rank", "model", "rating", "95% CI", "battles", "W/L/T")]
    undetermined = 0
    for m, r in t["ratings"].items():
        if r.get("determined", True):
            rank, rating, ci = str(r["rank"]), _f(r["rating"]), f"[{_f(r['ci_low'])}, {_f(r['ci_high'])}]"
        else:
            undetermined += 1
            rank, rating, ci = "-", "undetermined", "-"
        rows.append((rank, m, rating, ci, str(r["n_battles"]), f"{r['wins']}/{r['losses']}/{r['ties']}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    ex = t["extra"]
    lines.append(f"\n{t['n_docs']} battles, method {t['config']['method']} ({t['config']['rounds']} bootstrap rounds)")
    rel = ex.get("judge_reliability")
    if rel:
        lines.append(f"judge {run.get('judge', {}).get('name')}: {rel['n_judgments']} judgments, parse failures "
                     f"{rel['parse_failures']} ({_f(rel['parse_failure_rate'], 3)}), constrained {rel['constrained']}, "
                     f"unresolved pairs {rel['unresolved_pairs']}, "
                     f"swap disagreement {_f(rel['swap_disagreement_rate'], 3)}")
    if undetermined:
        lines.append(f"{undetermined} model(s) undetermined: they never lost or never won against the rest, "
                     "so the battles give no finite rating")
    sc = t.get("style_control") or t.get("other", {}).get("style_control")
    if sc:
        lines.append("\nstyle-controlled (LMArena style control: ratings with answer length and markdown held equal)")
        lines += [f"  {str(r['rank'] or '-'):>4}  {m:<{width}}  {_f(r['rating'])}  [{_f(r['ci_low'])}, {_f(r['ci_high'])}]"
                  for width in [max(len(m) for m in sc["ratings"])] for m, r in sc["ratings"].items()]
        lines.append("  style coefficients (log-odds per standard deviation of the A-B style difference, 95% CI):")
        lines += [f"    {f:<24} {_f(c['coef'], 4)}  [{_f(c['ci_low'], 4)}, {_f(c['ci_high'], 4)}]"
                  for f, c in sc["coefs"].items()]
    for w in ex.get("warnings", []):
        lines.append(f"warning: {w}")
    if "path" in run:
        lines.append(f"run record: {run['path']}")
    return "\n".join(lines)
