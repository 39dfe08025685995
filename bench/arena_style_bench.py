"""``bench_arena_scale.py --style``: ``evalkit arena rate --style-control`` vs FastChat's style-control recipe.

Both run in their own process on the same generated file; wall time and peak RSS (``VmHWM``) come
from those processes. The peer (``arena_style_peer.py``) is timed on a few bootstrap rounds and its
total extrapolated as load + matrices + fit + rounds x (mean round).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def peer_child(path: Path, rounds: int) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / "arena_style_peer.py"), str(path), str(rounds)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("@@")]
    return json.loads(line[2:])


def _prefix(src: Path, dst: Path, n: int) -> None:
    with open(src, "rb") as fh, open(dst, "wb") as out:
        for _, line in zip(range(n), fh):
            out.write(line)


def style_run(work: Path, n: int, rounds: int, peer_rounds: int, generate, child_rate, n_peer: int) -> int:
    path = work / "styled.jsonl"
    t = time.perf_counter()
    strength = generate(path, n, style=True)
    print(f"generated {n:,} battles, 120 models, 10% ties, LMArena conv_metadata; the judge also favours "
          f"longer and bolder answers; in {time.perf_counter() - t:.1f} s ({path.stat().st_size / 2**20:.0f} MiB JSONL)")

    ours = child_rate(path, work / "out", rounds, ("--style-control",))
    (rec,) = [p for p in (work / "out").iterdir() if (p / "run.json").exists()]
    task = json.loads((rec / "run.json").read_text())["tasks"]["arena"]
    sc = task["style_control"]
    print(f"\nevalkit arena rate --style-control --rounds {rounds} on {n:,} battles: {ours['wall_s']:.1f} s end to end "
          f"(read with the style columns, plain BT + count bootstrap, style fit + {rounds}-round weighted "
          f"bootstrap, matrices, record), peak RSS {ours['peak_rss_mib']:.0f} MiB")
    ev = pd.Series({m: r["rating"] for m, r in sc["ratings"].items()})
    truth = pd.Series({f"model-{i:03d}": s for i, s in enumerate(strength)}).reindex(ev.index)
    plain = pd.Series({m: r["rating"] for m, r in task["ratings"].items()}).reindex(ev.index)
    print(f"  Spearman with the true strengths: style-controlled {ev.rank().corr(truth.rank()):.4f}, "
          f"plain BT {plain.rank().corr(truth.rank()):.4f}; max |style - plain| {float((ev - plain).abs().max()):.1f} Elo")
    widths = [r["ci_high"] - r["ci_low"] for r in sc["ratings"].values() if r["determined"]]
    print(f"  style-controlled 95% CI widths {min(widths):.1f} .. {max(widths):.1f} Elo")

    same = path
    if n_peer < n:
        same = work / "peer.jsonl"
        _prefix(path, same, n_peer)
        print(f"\nFastChat's recipe holds a dense 2n x (models + 4) design and refits it with scikit-learn per round, "
              f"time and memory growing with n (extrapolated from the figures below: ~100 s per round and ~12 GB at 1M "
              f"battles), so the side-by-side "
              f"runs on the first {n_peer:,} battles of the same file (both sides):")
        ours = child_rate(same, work / "out-peer", rounds, ("--style-control",))
        (rec,) = [p for p in (work / "out-peer").iterdir() if (p / "run.json").exists()]
        sc = json.loads((rec / "run.json").read_text())["tasks"]["arena"]["style_control"]
        print(f"evalkit arena rate --style-control --rounds {rounds} on {n_peer:,} battles: {ours['wall_s']:.1f} s, "
              f"peak RSS {ours['peak_rss_mib']:.0f} MiB")
    peer = peer_child(same, peer_rounds)
    per_round = float(np.mean(peer["round_s"]))
    peer_total = peer["load_s"] + peer["matrix_s"] + peer["fit_s"] + rounds * per_round
    print(f"FastChat style-control recipe (own process): load {peer['load_s']:.1f} s, construct_style_matrices "
          f"{peer['matrix_s']:.1f} s (dense design {peer['design_mib']:.0f} MiB), fit_mle_elo {peer['fit_s']:.1f} s, "
          f"{peer_rounds} bootstrap rounds at {per_round:.1f} s each ({', '.join(f'{x:.1f}' for x in peer['round_s'])}); "
          f"peak RSS {peer['peak_rss_mib']:.0f} MiB")
    print(f"  extrapolated to {rounds} rounds: {peer_total:.0f} s = load + matrices + fit + {rounds} x round")
    print(f"ratio (peer / evalkit): {peer_total / ours['wall_s']:.1f}x time, "
          f"{(peer_total - peer['load_s']) / ours['wall_s']:.1f}x leaving out the peer's file load; "
          f"peak RSS {peer['peak_rss_mib'] / ours['peak_rss_mib']:.1f}x")

    ev = pd.Series({m: r["rating"] for m, r in sc["ratings"].items()})
    pf = pd.Series(peer["ratings"]).reindex(ev.index)
    print(f"point ratings: max |evalkit - FastChat fit| {float((ev - pf).abs().max()):.3f} Elo (sklearn's lbfgs "
          f"stops at tol 1e-4 / 100 iterations and its C=1 penalty pulls models with few battles in; the tests pin "
          f"the same likelihood to 1e-11 against a converged sklearn solver)")
    print("style coefficients, log-odds per standard deviation (evalkit [95% CI] | FastChat):")
    for (f, c), p in zip(sc["coefs"].items(), peer["coefs"]):
        print(f"  {f:<24} {c['coef']:8.4f} [{c['ci_low']:.4f}, {c['ci_high']:.4f}]  | {p:8.4f}")
    print("  (generator: +1.0 log-odds per unit of the raw token ratio, whose standard deviation is ~0.37, and "
          "+0.05 per bold span; headers and lists have no effect)")
    return 0
