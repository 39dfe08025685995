"""``evalkit power``: the smallest drop a paired comparison of n items can detect.

    evalkit power --task gsm8k --n 1319 --discordance 0.12

Discordance is the share of items on which the two models disagree (one right, one wrong); read it
off a previous ``evalkit compare`` (its "power:" line) or assume 0.1–0.2 for similar checkpoints.
For continuous metrics pass ``--sd`` (standard deviation of the per-item differences) instead.
"""
from __future__ import annotations

import argparse
import math

from evalkit.compare import power as pw


def register(sub):
    p = sub.add_parser("power", help="minimum detectable difference of a paired comparison (choose --limit honestly)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default=None, help="label for the output (e.g. gsm8k)")
    p.add_argument("--n", type=int, required=True, help="number of items compared")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--discordance", type=float, help="share of items where the models disagree (0/1 metrics)")
    g.add_argument("--sd", type=float, help="sd of per-item differences (continuous metrics, metric units)")
    p.add_argument("--alpha", type=float, default=0.05, help="one-sided level (default 0.05)")
    p.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    p.add_argument("--margin", type=float, default=0.0, help="tolerated drop in points (x100 for 0/1 metrics)")
    p.add_argument("--tests", type=int, default=1, help="number of primary tests (Holm: worst case alpha/tests)")
    p.add_argument("--drop", type=float, default=None, help="also print the power against this drop (points)")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.n < 1:
        raise ValueError("--n must be >= 1")
    if not 0 < args.alpha < 0.5 or not 0 < args.power < 1:
        raise ValueError("--alpha must be in (0, 0.5) and --power in (0, 1)")
    label = f"{args.task}: " if args.task else ""
    lvl = f"alpha {args.alpha:g}" + (f"/{args.tests}" if args.tests > 1 else "") + ", one-sided"
    if args.discordance is not None:
        psi = args.discordance
        if not 0 < psi <= 1:
            raise ValueError("--discordance must be in (0, 1]")
        m = args.margin / 100
        mdd = pw.mdd_binary(args.n, psi, args.alpha, args.power, m, args.tests)
        if not math.isfinite(mdd):
            print(f"{label}n={args.n}, discordance {psi:g}: no drop can be detected with {args.power:.0%} power "
                  f"({lvl}); use more items")
            return 0
        print(f"{label}n={args.n}, discordance {psi:g}: minimum detectable drop {100 * mdd:.2f} points "
              f"({args.power:.0%} power, {lvl}, margin {args.margin:g})")
        if args.drop is not None:
            d = args.drop / 100
            print(f"  power against a {args.drop:g}-point drop: {pw.power_binary(args.n, psi, d, args.alpha, m, args.tests):.3f}"
                  + (f" (exact McNemar {pw.exact_power_binary(args.n, psi, d, args.alpha, args.tests):.3f})"
                     if m == 0 and d <= psi else ""))
    else:
        mdd = pw.mdd_mean(args.n, args.sd, args.alpha, args.power, args.margin, args.tests)
        print(f"{label}n={args.n}, sd of differences {args.sd:g}: minimum detectable drop {mdd:.4g} "
              f"({args.power:.0%} power, {lvl}, margin {args.margin:g})")
    return 0
