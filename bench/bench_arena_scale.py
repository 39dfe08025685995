"""Arena ratings at LMArena scale: ``evalkit arena rate`` vs FastChat's ``elo_analysis`` recipe.

    python bench/bench_arena_scale.py                 # 1M battles x 120 models x 100 rounds vs the peer
    python bench/bench_arena_scale.py --memory        # peak RSS at 1M and at 10M battles
    python bench/bench_arena_scale.py --quick         # 200k battles, 200 CI rounds (a smoke test)
    python bench/bench_arena_scale.py --style         # style control: --style-control vs FastChat's recipe

What it does, all from one run and one seeded generator (120 models, popularity-skewed by a Zipf law,
true strengths N(0, 1) in natural-log units, 10% ties split between "tie" and "tie (bothbad)"):
1. writes 1,000,000 LMArena-like battles to a JSONL file (question_id, tstamp, language, turn,
   conv_metadata, as LMArena's clean battle files have);
2. runs ``evalkit arena rate FILE --rounds 100`` end to end in a child process (read, fit, count
   bootstrap, matrices, run record, copy of the battles) and reads its wall time and peak RSS
   (``VmHWM`` of the child, see ``child_rate``);
3. times the peer: FastChat's recipe as published (``fastchat/serve/monitor/elo_analysis.py``:
   a DataFrame of the battles, ``compute_mle_elo`` = three pandas pivot tables, a duplicated
   design matrix and a scikit-learn ``LogisticRegression`` fit, bootstrapped by
   ``battles.sample(frac=1.0, replace=True)``) on a few rounds, and extrapolates its 100 rounds;
4. checks the numbers: the evalkit point ratings against the pre-change implementation (read from
   git, commit ``BASE``) and against the peer's fit; the count bootstrap against the battle
   bootstrap on 1,000 rounds (smaller data, so the battle bootstrap finishes);
5. (``--memory``) rates 1,000,000 and 10,000,000 battles the same way and reports both peak RSS.
6. (``--style``) battles whose judge also favours longer, bolder answers, with LMArena's full
   ``conv_metadata``; ``evalkit arena rate --style-control`` (time and peak RSS of its process) against
   FastChat's style-control recipe (``bench/arena_style_peer.py``: construct_style_matrices +
   fit_mle_elo, bootstrapped) in its own process, timed on a few rounds; point ratings and coefficients
   compared.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from results_md import record_run  # noqa: E402

BASE = "69a7d10f866c761bf5ac7f13b0171dc032d57351"   # evalkit before the count bootstrap


# ---- the generator ---------------------------------------------------------------------------------
def _meta(ta, tb, ba, bb, hl):
    """LMArena's conv_metadata: token sums and per-kind markdown counts for each side."""
    h = lambda x: ", ".join(f'"h{i + 1}": {int(c)}' for i, c in enumerate(x))  # noqa: E731
    return (f'{{"sum_user_tokens": 40, "sum_assistant_a_tokens": {ta}, "sum_assistant_b_tokens": {tb}, '
            f'"context_a_tokens": 60, "context_b_tokens": 60, "turns": 1, '
            f'"header_count_a": {{{h(hl[0:6])}}}, "list_count_a": {{"ordered": {hl[12]}, "unordered": {hl[13]}}}, '
            f'"bold_count_a": {{"**": {ba}, "__": 0}}, "header_count_b": {{{h(hl[6:12])}}}, '
            f'"list_count_b": {{"ordered": {hl[14]}, "unordered": {hl[15]}}}, "bold_count_b": {{"**": {bb}, "__": 0}}}}')


def generate(path: Path, n: int, n_models: int = 120, seed: int = 0, chunk: int = 500_000,
             style: bool = False) -> np.ndarray:
    """Write ``n`` battles to ``path`` (JSONL); returns the true strengths (natural-log units).
    ``style``: full conv_metadata, and a judge who also likes longer answers with more bold
    (log-odds +1.0 per unit of the token ratio, +0.05 per bold span of difference)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n_models)
    pop = 1.0 / np.arange(1, n_models + 1) ** 0.8
    pop = rng.permutation(pop / pop.sum())
    names = [f"model-{i:03d}" for i in range(n_models)]
    with open(path, "w", encoding="utf-8") as fh:
        for start in range(0, n, chunk):
            k = min(chunk, n - start)
            a = rng.choice(n_models, k, p=pop)
            b = rng.choice(n_models, k, p=pop)
            while (clash := np.flatnonzero(a == b)).size:      # an opponent other than a
                b[clash] = rng.choice(n_models, clash.size, p=pop)
            u, v = rng.random(k), rng.random(k)
            toks = rng.integers(20, 900, size=(k, 2))
            # (the style draws only with style=True: the plain bench's battles stay as they were)
            bold = rng.integers(0, 8, size=(k, 2)) if style else np.zeros((k, 2), dtype=np.int64)
            marks = rng.integers(0, 3, size=(k, 16)) if style else np.zeros((k, 16), dtype=np.int64)
            z = strength[a] - strength[b]
            if style:
                z = z + (toks[:, 0] - toks[:, 1]) / (toks.sum(axis=1) + 1) + 0.05 * (bold[:, 0] - bold[:, 1])
            p_a = 1.0 / (1.0 + np.exp(-z))
            win = np.where(u < 0.1, np.where(v < 0.5, 2, 3), np.where(v < p_a, 0, 1))
            labels = ("model_a", "model_b", "tie", "tie (bothbad)")
            lines = [
                f'{{"question_id": "{start + i:08x}", "model_a": "{names[x]}", "model_b": "{names[y]}", '
                f'"winner": "{labels[w]}", "judge": "arena_user_{(start + i) % 997}", "turn": 1, '
                f'"anony": true, "language": "English", "tstamp": {1.7e9 + start + i:.1f}, '
                + (f'"conv_metadata": {_meta(ta, tb, ba, bb, hl)}}}\n' if style else
                   f'"conv_metadata": {{"sum_assistant_a_tokens": {ta}, "sum_assistant_b_tokens": {tb}}}}}\n')
                for i, (x, y, w, ta, tb, ba, bb, hl) in enumerate(zip(
                    a.tolist(), b.tolist(), win.tolist(), toks[:, 0].tolist(), toks[:, 1].tolist(),
                    bold[:, 0].tolist(), bold[:, 1].tolist(), marks.tolist() if style else [None] * k))]
            fh.writelines(lines)
    return strength


# ---- the peer: FastChat's elo_analysis recipe, written from its published description -----------------
def peer_mle_elo(df: pd.DataFrame, scale=400, base=10, init_rating=1000) -> pd.Series:
    """compute_mle_elo: pivot tables of A wins, B wins and ties; each ordered pair becomes two rows
    of a design with +log(base) for A and -log(base) for B (labels 1 and 0, weighted by the
    doubled win counts, a tie counting once each way); sklearn LogisticRegression without
    intercept or penalty."""
    from sklearn.linear_model import LogisticRegression

    def pivot(part):
        return pd.pivot_table(part, index="model_a", columns="model_b", aggfunc="size", fill_value=0)

    a_win = pivot(df[df["winner"] == "model_a"])
    tied = df["winner"].isin(["tie", "tie (bothbad)"])
    tie = pivot(df[tied]) if tied.any() else pd.DataFrame(0, index=a_win.index, columns=a_win.columns)
    tie = tie + tie.T
    b_win = pivot(df[df["winner"] == "model_b"])
    win = a_win * 2 + b_win.T * 2 + tie
    models = pd.Series(np.arange(len(win.index)), index=win.index)
    p = len(models)
    X = np.zeros([p * (p - 1) * 2, p])
    Y = np.zeros(p * (p - 1) * 2)
    weights = []
    row = 0
    for m_a in win.index:
        for m_b in win.columns:
            if m_a == m_b or math.isnan(win.loc[m_a, m_b]) or math.isnan(win.loc[m_b, m_a]):
                continue
            X[row, models[m_a]], X[row, models[m_b]], Y[row] = math.log(base), -math.log(base), 1.0
            weights.append(win.loc[m_a, m_b])
            X[row + 1, models[m_a]], X[row + 1, models[m_b]], Y[row + 1] = math.log(base), -math.log(base), 0.0
            weights.append(win.loc[m_b, m_a])
            row += 2
    X, Y = X[:row], Y[:row]
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6)   # penalty=None (deprecated spelling)
    lr.fit(X, Y, sample_weight=weights)
    return pd.Series(scale * lr.coef_[0] + init_rating, index=models.index).sort_values(ascending=False)


def peer_bootstrap(df: pd.DataFrame, rounds: int, seed: int = 0) -> tuple[pd.DataFrame, list[float]]:
    """get_bootstrap_result: the fit on ``df.sample(frac=1.0, replace=True)`` per round."""
    rows, times = [], []
    for r in range(rounds):
        t = time.perf_counter()
        rows.append(peer_mle_elo(df.sample(frac=1.0, replace=True, random_state=seed + r)))
        times.append(time.perf_counter() - t)
    return pd.DataFrame(rows), times


# ---- helpers -----------------------------------------------------------------------------------------
def child_rate(path: Path, out: Path, rounds: int, extra: tuple[str, ...] = ()) -> dict:
    """``evalkit arena rate`` in a fresh process: wall seconds and peak RSS from that process.

    The peak is the child's own ``VmHWM`` (/proc/self/status): on Linux ``getrusage``'s
    ``ru_maxrss`` in a child started by (v)fork + exec also counts the parent's resident memory
    at the fork, which here is the bench's DataFrames, not evalkit."""
    code = ("import json, resource, sys, time\n"
            "t = time.perf_counter()\n"
            "from evalkit.cli import main\n"
            f"rc = main(['arena', 'rate', {str(path)!r}, '--output', {str(out)!r}, '--rounds', '{rounds}', "
            f"*{list(extra)!r}])\n"
            "wall = time.perf_counter() - t\n"
            "try:\n"
            "    peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024\n"
            "except (OSError, IndexError):\n"
            "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
            "print('@@' + json.dumps({'rc': rc, 'wall_s': wall, 'peak_rss_mib': peak}))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("@@")]
    return {**json.loads(line[2:]), "stdout": proc.stdout}


def old_ratings_module():
    """evalkit.arena.ratings as of commit BASE (today's implementation before this change)."""
    try:
        src = subprocess.run(["git", "show", f"{BASE}:evalkit/arena/ratings.py"], capture_output=True, text=True,
                             cwd=ROOT, check=True).stdout
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    tmp = Path(tempfile.mkdtemp()) / "old_ratings.py"
    tmp.write_text(src)
    spec = importlib.util.spec_from_file_location("evalkit.arena._old_ratings", tmp)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ci_agreement(n_battles: int, n_models: int, rounds: int, work: Path) -> str:
    """The count bootstrap vs the battle bootstrap (today's, with compute_bt) on the same data."""
    from evalkit.arena import bootstrap_cells, bootstrap_samples, compute_bt, load_battles
    from evalkit.arena.cells import aggregate
    from evalkit.arena.table import as_table

    path = work / "ci.jsonl"
    generate(path, n_battles, n_models, seed=7)
    battles = load_battles(path)
    old = old_ratings_module()
    fn = old.compute_bt if old is not None else compute_bt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        by_battle = (old.bootstrap_samples if old is not None else bootstrap_samples)(battles, fn, rounds, seed=1)
        t_battle = time.perf_counter() - t
        t = time.perf_counter()
        by_count = bootstrap_cells(aggregate(as_table(battles)), rounds, seed=2)
        t_count = time.perf_counter() - t
    sd = by_battle.std()
    rows = []
    for q in (0.025, 0.5, 0.975):
        d = (by_count.quantile(q) - by_battle.quantile(q)).abs()
        # standard error of a difference of two independent sample quantiles (normal approximation)
        se = math.sqrt(2 * q * (1 - q) / rounds) / (math.exp(-0.5 * 1.959964 ** 2 * (q != 0.5)) / math.sqrt(2 * math.pi))
        rows.append((f"q{q:g}", float((d / (sd * se)).max()), float(d.max())))
    dm = (by_count.mean() - by_battle.mean()).abs()
    rows.insert(0, ("mean", float((dm / (sd * math.sqrt(2 / rounds))).max()), float(dm.max())))
    ds = (by_count.std() - sd).abs()
    rows.append(("sd", float((ds / (sd / math.sqrt(rounds))).max()), float(ds.max())))
    lines = [f"CI agreement, {rounds} rounds each, {n_battles:,} battles x {n_models} models "
             f"(battle bootstrap = {'commit ' + BASE[:7] if old else 'bootstrap_samples'}):",
             f"  battle bootstrap {t_battle:.1f} s, count bootstrap {t_count:.2f} s",
             "  statistic  max |count - battle| over models   in Monte Carlo standard errors (max)"]
    lines += [f"  {name:<9}  {diff:8.2f} Elo                        {z:5.2f}" for name, z, diff in rows]
    worst = max(z for _, z, _ in rows)
    lines.append(f"  worst {worst:.2f} standard errors over {len(rows)} x {n_models} comparisons: "
                 f"{'agree within Monte Carlo error' if worst < 4.5 else 'DISAGREE'}")
    return "\n".join(lines), worst


def memory_run(work: Path, n: int, big: int, rounds: int) -> int:
    """Peak RSS of the whole ``evalkit arena rate`` process at ``n`` and at ``big`` battles. The big
    file is the ``n``-battle file repeated (``big / n`` times): same shape, written in seconds."""
    small = work / "battles.jsonl"
    generate(small, n)
    copies = max(1, big // n)
    large = work / "big.jsonl"
    with open(large, "wb") as out:
        for _ in range(copies):
            with open(small, "rb") as fh:
                while block := fh.read(1 << 24):
                    out.write(block)
    print(f"memory of `evalkit arena rate --rounds {rounds}` (whole process: its peak RSS, VmHWM):")
    peaks = []
    for label, path, count in (("small", small, n), ("big", large, copies * n)):
        res = child_rate(path, work / f"out-{label}", rounds)
        peaks.append(res["peak_rss_mib"])
        print(f"  {count:>11,} battles ({path.stat().st_size / 2**30:5.2f} GiB JSONL): {res['wall_s']:6.1f} s, "
              f"peak RSS {res['peak_rss_mib']:6.0f} MiB")
        subprocess.run(["rm", "-rf", str(work / f"out-{label}")])
    extra = (peaks[1] - peaks[0]) * 2**20 / max(1, (copies - 1) * n)
    print(f"  ({copies} copies of the {n:,}-battle file) peak RSS grows {extra:.0f} bytes per extra battle: "
          "the columns (9 bytes a battle) held twice while the chunks are joined, not the file or Python objects")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="200k battles, 3 peer rounds, no 10M run")
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--peer-rounds", type=int, default=3)
    ap.add_argument("--memory", action="store_true",
                    help="only the memory run: peak RSS of `evalkit arena rate` on --battles and on --big battles")
    ap.add_argument("--big", type=int, default=10_000_000, help="battles for the memory run")
    ap.add_argument("--ci-rounds", type=int, default=1000)
    ap.add_argument("--style", action="store_true",
                    help="style control: `arena rate --style-control` vs FastChat's style-control recipe")
    ap.add_argument("--peer-battles", type=int, default=250_000,
                    help="--style: battles (a prefix of the file) for the side-by-side with FastChat's recipe")
    args = ap.parse_args()
    if args.quick:
        args.battles, args.ci_rounds = 200_000, 200
    work = Path(tempfile.mkdtemp(prefix="arena-scale-"))
    status = 0
    if args.style:
        from arena_style_bench import style_run
        try:
            return style_run(work, args.battles, args.rounds, args.peer_rounds, generate, child_rate,
                             min(args.battles, args.peer_battles))
        finally:
            subprocess.run(["rm", "-rf", str(work)])
    if args.memory:
        try:
            return memory_run(work, args.battles, args.big, args.rounds)
        finally:
            subprocess.run(["rm", "-rf", str(work)])
    try:
        path = work / "battles.jsonl"
        t = time.perf_counter()
        strength = generate(path, args.battles)
        print(f"generated {args.battles:,} battles, 120 models, 10% ties in {time.perf_counter() - t:.1f} s "
              f"({path.stat().st_size / 2**20:.0f} MiB JSONL)")

        ours = child_rate(path, work / "out", args.rounds)
        (rec,) = [p for p in (work / "out").iterdir() if (p / "run.json").exists()]
        run = json.loads((rec / "run.json").read_text())
        ratings = run["tasks"]["arena"]["ratings"]
        print(f"\nevalkit arena rate --rounds {args.rounds}: {ours['wall_s']:.1f} s end to end "
              f"(read, fit, bootstrap, matrices, record), peak RSS {ours['peak_rss_mib']:.0f} MiB")

        t = time.perf_counter()
        df = pd.read_json(path, lines=True)[["model_a", "model_b", "winner"]]
        t_load = time.perf_counter() - t
        t = time.perf_counter()
        peer_fit = peer_mle_elo(df)
        t_fit = time.perf_counter() - t
        _, times = peer_bootstrap(df, args.peer_rounds)
        per_round = float(np.mean(times))
        peer_total = t_load + t_fit + args.rounds * per_round
        print(f"FastChat elo_analysis recipe: load {t_load:.1f} s, fit {t_fit:.2f} s, "
              f"{args.peer_rounds} bootstrap rounds timed at {per_round:.2f} s each "
              f"({', '.join(f'{x:.2f}' for x in times)})")
        print(f"  extrapolated to {args.rounds} rounds: {peer_total:.0f} s = load + fit + {args.rounds} x round")
        ratio = peer_total / ours["wall_s"]
        print(f"ratio (peer / evalkit): {ratio:.1f}x, {(peer_total - t_load) / ours['wall_s']:.1f}x leaving out the "
              f"peer's file load (evalkit's time includes its own)  [goal >= 10x; evalkit goal < 30 s: "
              f"{'met' if ours['wall_s'] < 30 else 'NOT met'}]")

        ev = pd.Series({m: r["rating"] for m, r in ratings.items()})
        print(f"\npoint ratings: max |evalkit - peer fit| {float((ev - peer_fit.reindex(ev.index)).abs().max()):.3f} Elo "
              f"(sklearn stops at tol 1e-6); ranks follow the true strengths: Spearman "
              f"{pd.Series(ev.rank()).corr(pd.Series({f'model-{i:03d}': s for i, s in enumerate(strength)}).reindex(ev.index).rank()):.4f}")
        old = old_ratings_module()
        if old is not None:
            from evalkit.arena import read_battle_table
            from evalkit.arena.bt import to_elo
            from evalkit.arena.cells import aggregate
            from evalkit.arena.resample import fit_fast
            table = read_battle_table(path)
            cells = aggregate(table)
            new_fit = to_elo(cells.models, fit_fast(cells), 400, 1000, None, 1000.0)   # what rate() records
            t = time.perf_counter()
            old_fit = old.compute_bt(table.to_battles())
            t_old = time.perf_counter() - t
            diff = max(abs(new_fit[m] - old_fit[m]) for m in old_fit)
            print(f"  vs the pre-change compute_bt (commit {BASE[:7]}, {t_old:.1f} s for one fit): "
                  f"max |diff| {diff:.2g} Elo; recorded (2-decimal) ratings off by at most "
                  f"{max(abs(ratings[m]['rating'] - old_fit[m]) for m in old_fit):.3f}")
        widths = [r["ci_high"] - r["ci_low"] for r in ratings.values()]
        print(f"  95% CI widths {min(widths):.1f} .. {max(widths):.1f} Elo; "
              f"{sum(1 for r in ratings.values() if not r['determined'])} undetermined")

        print()
        text, worst = ci_agreement(10_000 if not args.quick else 5_000, 16, args.ci_rounds, work)
        print(text)
        status |= worst >= 4.5

    finally:
        subprocess.run(["rm", "-rf", str(work)])
    return int(status)


if __name__ == "__main__":
    sys.exit(record_run("arena-scale", main, variant_flags=("--quick", "--memory", "--style")))
