"""Tests for evalkit.arena: battle I/O, online Elo, Bradley–Terry, bootstrap, ranks.

References used here are independent of the code under test: the worked
example of the Wikipedia "Bradley–Terry model" article (published strengths),
a Zermelo/Newman fixed-point iteration written below, scikit-learn's
LogisticRegression on a design matrix built here the way FastChat builds it,
and a literal transcription of FastChat's online Elo loop.
"""

from __future__ import annotations

import json
import math
import os
import random
import warnings
from collections import defaultdict
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit.arena import (
    Battle,
    BattleFormatError,
    battle_count_matrix,
    bootstrap_ratings,
    bootstrap_samples,
    compute_bt,
    compute_bt_style,
    compute_online_elo,
    load_battles,
    predicted_win_rate_matrix,
    rating_table,
    shared_ranks,
    win_rate_matrix,
    write_battles,
)

ARENA_HARD = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "chatbot_arena" / "arena_hard_battles.jsonl"
)
needs_arena_hard = pytest.mark.skipif(
    not ARENA_HARD.is_file(),
    reason=f"shared data file absent: {ARENA_HARD} (arena-hard-auto battles, see SOURCE.txt)",
)


# ----------------------------------------------------------------------------
# helpers / independent references
# ----------------------------------------------------------------------------

def battles_from_wins(names, wins):
    """wins[i][j] battles in which names[i] (as model_a) beat names[j]."""
    out = []
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i != j:
                out += [Battle(None, a, b, "model_a")] * int(wins[i][j])
    return out


def zermelo_mm(wins, iters=100_000, tol=1e-15):
    """Newman's form of Zermelo's fixed point (Wikipedia eq. 5), Gauss–Seidel,
    normalised to geometric mean 1 after each sweep."""
    w = np.asarray(wins, dtype=float)
    n = len(w)
    p = np.ones(n)
    for _ in range(iters):
        old = p.copy()
        for i in range(n):
            num = sum(w[i, j] * p[j] / (p[i] + p[j]) for j in range(n) if j != i)
            den = sum(w[j, i] / (p[i] + p[j]) for j in range(n) if j != i)
            p[i] = num / den
        p /= math.exp(np.log(p).mean())
        if np.max(np.abs(p - old)) < tol:
            break
    return p


def fastchat_online_elo(rows, K=4, SCALE=400, BASE=10, INIT_RATING=1000):
    """FastChat's compute_elo loop, transcribed over (model_a, model_b, winner)."""
    rating = defaultdict(lambda: INIT_RATING)
    for model_a, model_b, winner in rows:
        ra = rating[model_a]
        rb = rating[model_b]
        ea = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        eb = 1 / (1 + BASE ** ((ra - rb) / SCALE))
        if winner == "model_a":
            sa = 1
        elif winner == "model_b":
            sa = 0
        elif winner == "tie" or winner == "tie (bothbad)":
            sa = 0.5
        else:
            raise ValueError(f"unexpected vote {winner}")
        rating[model_a] += K * (sa - ea)
        rating[model_b] += K * (1 - sa - eb)
    return dict(rating)


def sklearn_bt(battles, extra_columns=None, C=None, solver="lbfgs", SCALE=400, BASE=10, INIT_RATING=1000):
    """FastChat's compute_mle_elo design (duplicated battles; +log(BASE) for A,
    -log(BASE) for B; one tie = one A win + one B win) fitted by scikit-learn.

    ``solver="lbfgs"`` is FastChat's configuration (full, rank-deficient
    design; its precision is limited by lbfgs stalling around |grad| ~ 1e-8).
    ``solver="newton-cholesky"`` fixes the gauge by dropping the last model's
    column (its coefficient is 0) so the Newton system is full rank, and
    converges to machine precision.  Returns (centred Elo ratings, extra coefs).
    """
    sk = pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression

    df = pd.DataFrame([{"model_a": b.model_a, "model_b": b.model_b, "winner": b.winner} for b in battles])
    models = pd.concat([df["model_a"], df["model_b"]]).unique()
    models = pd.Series(np.arange(len(models)), index=models)
    df = pd.concat([df, df], ignore_index=True)
    p, n = len(models), len(df)
    k = 0 if extra_columns is None else extra_columns.shape[1]
    X = np.zeros([n, p + k])
    X[np.arange(n), models[df["model_a"]]] = +math.log(BASE)
    X[np.arange(n), models[df["model_b"]]] = -math.log(BASE)
    if k:
        X[:, p:] = np.concatenate([extra_columns, extra_columns])
    Y = np.zeros(n)
    Y[df["winner"] == "model_a"] = 1.0
    tie_idx = ((df["winner"] == "tie") | (df["winner"] == "tie (bothbad)")).to_numpy().copy()
    tie_idx[len(tie_idx) // 2:] = False
    Y[tie_idx] = 1.0

    major, minor = (int(x) for x in sk.__version__.split(".")[:2])
    if C is None:  # unpenalised; `penalty=None` is deprecated from 1.8 in favour of C=inf
        kw = {"C": np.inf} if (major, minor) >= (1, 8) else {"penalty": None}
    else:
        kw = {"C": C}
    drop = solver == "newton-cholesky" and C is None
    cols = [c for c in range(p + k) if not (drop and c == p - 1)]
    lr = LogisticRegression(fit_intercept=False, tol=1e-12, max_iter=100_000, solver=solver, **kw)
    lr.fit(X[:, cols], Y)
    coef = np.zeros(p + k)
    coef[cols] = lr.coef_[0]
    theta = coef[:p] - (coef[:p].mean() if C is None else 0.0)
    return dict(zip(models.index, SCALE * theta + INIT_RATING)), coef[p:]


def synthetic_battles(n=3000, seed=123, tie_rate=0.15):
    """Seeded BT-distributed battles among 6 models, with both kinds of tie."""
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(6)]
    strength = np.array([0.0, 0.3, 0.5, 0.9, 1.2, 1.6])
    out = []
    for _ in range(n):
        i, j = rng.choice(6, size=2, replace=False)
        pa = 1 / (1 + math.exp(-(strength[i] - strength[j])))
        u = rng.random()
        if u < tie_rate:
            winner = "tie" if rng.random() < 0.5 else "tie (bothbad)"
        else:
            winner = "model_a" if rng.random() < pa else "model_b"
        out.append(Battle(str(len(out)), names[i], names[j], winner))
    return out


def max_rel(ours, ref):
    assert set(ours) == set(ref)
    return max(abs(ours[m] - ref[m]) / abs(ref[m]) for m in ref)


# ----------------------------------------------------------------------------
# Bradley–Terry
# ----------------------------------------------------------------------------

WIKI_NAMES = ["A", "B", "C", "D"]
# Wikipedia, "Bradley–Terry model", worked example: row team's wins over column team.
WIKI_WINS = [[0, 2, 0, 1], [3, 0, 5, 0], [0, 3, 0, 1], [4, 0, 3, 0]]
WIKI_PUBLISHED = [0.640, 1.043, 0.660, 2.270]  # normalised to geometric mean 1


def test_bt_wikipedia_worked_example():
    ratings = compute_bt(battles_from_wins(WIKI_NAMES, WIKI_WINS))
    # back from the Elo scale to strengths p = base ** (coef), geometric mean 1
    p = np.array([10 ** ((ratings[m] - 1000) / 400) for m in WIKI_NAMES])
    p /= math.exp(np.log(p).mean())
    np.testing.assert_allclose(p, WIKI_PUBLISHED, atol=6e-4)  # published to 3 decimals
    np.testing.assert_allclose(p, zermelo_mm(WIKI_WINS), rtol=1e-8)


def test_bt_natural_scale_matches_zermelo():
    # base e, scale 1: ratings - init are the log-strengths themselves
    ratings = compute_bt(battles_from_wins(WIKI_NAMES, WIKI_WINS), scale=1, base=math.e, init_rating=0)
    logp = np.log(zermelo_mm(WIKI_WINS))
    np.testing.assert_allclose([ratings[m] for m in WIKI_NAMES], logp, atol=1e-9)


@needs_arena_hard
def test_bt_matches_sklearn_on_arena_hard():
    battles = load_battles(ARENA_HARD)
    anchor = "gpt-4o-mini"
    ours = compute_bt(battles, anchor=anchor, anchor_rating=1114.0)
    assert ours[anchor] == pytest.approx(1114.0, abs=1e-9)
    for solver, rel in (("lbfgs", 1e-8), ("newton-cholesky", 1e-11)):
        ref, _ = sklearn_bt(battles, solver=solver)
        ref = {m: r + 1114.0 - ref[anchor] for m, r in ref.items()}
        assert max_rel(ours, ref) < rel, solver
        assert max(abs(ours[m] - ref[m]) for m in ref) < rel * 1000, solver  # Elo points
    # and it is a real spread, not a degenerate fit
    assert max(ours.values()) - min(ours.values()) > 300


def test_bt_matches_sklearn_with_both_tie_kinds():
    battles = synthetic_battles()
    assert {b.winner for b in battles} == {"model_a", "model_b", "tie", "tie (bothbad)"}
    ours = compute_bt(battles)
    assert max_rel(ours, sklearn_bt(battles, solver="lbfgs")[0]) < 1e-8
    assert max_rel(ours, sklearn_bt(battles, solver="newton-cholesky")[0]) < 1e-11
    # "tie (bothbad)" is exactly a tie
    relabelled = [Battle(b.prompt_id, b.model_a, b.model_b, "tie" if b.is_tie else b.winner) for b in battles]
    assert compute_bt(relabelled) == pytest.approx(ours, abs=1e-9)


def test_bt_gauge_anchor_order_and_weights():
    battles = synthetic_battles(n=1500, seed=7)
    r = compute_bt(battles)
    assert np.mean(list(r.values())) == pytest.approx(1000.0, abs=1e-9)  # centred on init_rating
    assert list(r) == sorted(r, key=lambda m: -r[m])  # highest first
    shuffled = battles[:]
    random.Random(0).shuffle(shuffled)
    assert compute_bt(shuffled) == pytest.approx(r, abs=1e-9)  # order free
    anchored = compute_bt(battles, anchor="m2", anchor_rating=1114.0)
    assert anchored["m2"] == 1114.0
    diffs = {m: anchored[m] - r[m] for m in r}
    assert max(diffs.values()) - min(diffs.values()) < 1e-9  # a pure shift
    # integer weights == duplicated battles
    w = [1 + (i % 3) for i in range(len(battles))]
    dup = [b for b, k in zip(battles, w) for _ in range(k)]
    assert compute_bt(battles, weights=w) == pytest.approx(compute_bt(dup), abs=1e-9)
    with pytest.raises(ValueError, match="anchor"):
        compute_bt(battles, anchor="nope")
    # DataFrame input gives the same answer
    df = pd.DataFrame([b.to_dict() for b in battles])
    assert compute_bt(df) == pytest.approx(r, abs=1e-9)


def test_bt_warns_when_mle_does_not_exist():
    # "top" beats everyone and never loses: its MLE rating is +infinity
    battles = [Battle(None, "top", "x", "model_a"), Battle(None, "y", "top", "model_b"),
               Battle(None, "x", "y", "model_a"), Battle(None, "y", "x", "model_a")]
    with pytest.warns(RuntimeWarning, match="does not exist"):
        compute_bt(battles, max_iter=200)
    # one tie against "top" makes the win graph strongly connected: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compute_bt(battles + [Battle(None, "top", "x", "tie")])


# ----------------------------------------------------------------------------
# online Elo
# ----------------------------------------------------------------------------

ELO_SEQUENCE = [
    ("a", "b", "model_a"), ("b", "c", "tie"), ("c", "a", "model_a"), ("a", "d", "tie (bothbad)"),
    ("d", "b", "model_b"), ("c", "d", "model_a"), ("a", "b", "tie"), ("b", "a", "model_a"),
    ("d", "c", "model_a"), ("a", "c", "model_b"), ("b", "d", "tie"), ("c", "b", "model_b"),
]


def test_online_elo_equals_fastchat_loop():
    battles = [Battle(str(i), a, b, w) for i, (a, b, w) in enumerate(ELO_SEQUENCE)]
    ours = compute_online_elo(battles)
    ref = fastchat_online_elo(ELO_SEQUENCE)
    assert set(ours) == set(ref)
    for m in ref:
        assert ours[m] == ref[m]  # same arithmetic, bit for bit
    assert sum(ours.values()) == pytest.approx(4000.0)  # zero-sum updates
    custom = compute_online_elo(battles, K=32, scale=200, base=math.e, init_rating=1500)
    ref2 = fastchat_online_elo(ELO_SEQUENCE, K=32, SCALE=200, BASE=math.e, INIT_RATING=1500)
    assert custom == pytest.approx(ref2, abs=0)


def test_online_elo_is_order_dependent():
    battles = [Battle(None, a, b, w) for a, b, w in ELO_SEQUENCE]
    forward = compute_online_elo(battles)
    backward = compute_online_elo(battles[::-1])
    assert backward == pytest.approx(fastchat_online_elo(ELO_SEQUENCE[::-1]), abs=0)
    assert max(abs(forward[m] - backward[m]) for m in forward) > 0.1


@needs_arena_hard
def test_online_elo_on_arena_hard_matches_fastchat_loop():
    battles = load_battles(ARENA_HARD)
    ref = fastchat_online_elo([(b.model_a, b.model_b, b.winner) for b in battles])
    assert compute_online_elo(battles) == pytest.approx(ref, abs=0)


# ----------------------------------------------------------------------------
# bootstrap, ranks, table
# ----------------------------------------------------------------------------

def test_bootstrap_is_seeded_and_cis_cover_the_fit():
    battles = synthetic_battles(n=1200, seed=11)
    s1 = bootstrap_samples(battles, compute_bt, rounds=25, seed=5)
    s2 = bootstrap_samples(battles, compute_bt, rounds=25, seed=5)
    pd.testing.assert_frame_equal(s1, s2)
    s3 = bootstrap_samples(battles, compute_bt, rounds=25, seed=6)
    assert not np.allclose(s1[s3.columns].to_numpy(), s3.to_numpy())
    # the global random state is neither used nor touched
    np.random.seed(0)
    before = np.random.random()
    np.random.seed(0)
    bootstrap_samples(battles, compute_bt, rounds=3, seed=5)
    assert np.random.random() == before

    summary = bootstrap_ratings(battles, compute_bt, rounds=25, seed=5)
    assert list(summary.columns) == ["median", "mean", "std", "ci_low", "ci_high", "rounds"]
    fit = compute_bt(battles)
    for m, r in fit.items():
        assert summary.loc[m, "ci_low"] < r < summary.loc[m, "ci_high"]
    np.testing.assert_allclose(summary["ci_low"], s1.quantile(0.025)[summary.index])


def test_bootstrap_with_online_elo_and_anchor_partial():
    battles = synthetic_battles(n=600, seed=3)
    elo = bootstrap_ratings(battles, compute_online_elo, rounds=10, seed=1)
    assert set(elo.index) == {f"m{i}" for i in range(6)}
    anchored = bootstrap_samples(battles, partial(compute_bt, anchor="m0", anchor_rating=900.0), rounds=5, seed=1)
    np.testing.assert_allclose(anchored["m0"], 900.0)


def test_shared_ranks_constructed_example():
    lo = {"A": 10, "B": 15, "C": 0, "D": 30, "E": 30}
    hi = {"A": 20, "B": 25, "C": 5, "D": 40, "E": 30}
    ranks = shared_ranks(pd.Series(lo), pd.Series(hi))
    # D and E overlap (E's interval is the point 30, D's lower bound is not > 30)
    assert ranks.to_dict() == {"D": 1, "E": 1, "B": 3, "A": 3, "C": 5}


def test_rating_table():
    battles = synthetic_battles(n=1500, seed=21)
    table = rating_table(battles, rounds=30, seed=2)
    assert list(table.columns) == ["rating", "ci_low", "ci_high", "n_battles", "rank"]
    assert table["rating"].is_monotonic_decreasing
    assert table["n_battles"].sum() == 2 * len(battles)
    assert table["rank"].iloc[0] == 1
    expected = shared_ranks(table["ci_low"], table["ci_high"])
    pd.testing.assert_series_equal(table["rank"], expected.reindex(table.index), check_names=False)
    assert (table["ci_low"] <= table["rating"]).all() and (table["rating"] <= table["ci_high"]).all()
    again = rating_table(battles, rounds=30, seed=2)
    pd.testing.assert_frame_equal(table, again)
    med = rating_table(battles, fn=compute_online_elo, rounds=10, seed=2, point="median")
    assert med["rating"].is_monotonic_decreasing


# ----------------------------------------------------------------------------
# matrices
# ----------------------------------------------------------------------------

def test_win_rate_and_count_matrices():
    battles = [Battle(None, a, b, w) for a, b, w in [
        ("x", "y", "model_a"), ("y", "x", "model_a"), ("x", "y", "model_a"),
        ("x", "y", "tie"), ("y", "z", "model_b"),
    ]]
    counts = battle_count_matrix(battles)
    assert counts.loc["x", "y"] == counts.loc["y", "x"] == 4
    assert counts.loc["x", "z"] == 0 and counts.loc["z", "y"] == 1
    assert battle_count_matrix(battles, include_ties=False).loc["x", "y"] == 3
    wr = win_rate_matrix(battles)
    assert wr.loc["x", "y"] == pytest.approx(2 / 3) and wr.loc["y", "x"] == pytest.approx(1 / 3)
    assert wr.loc["z", "y"] == 1.0 and np.isnan(wr.loc["x", "z"]) and np.isnan(wr.loc["x", "x"])
    assert win_rate_matrix(battles, ties="half").loc["x", "y"] == pytest.approx(2.5 / 4)
    assert win_rate_matrix(battles, ties="loss").loc["x", "y"] == pytest.approx(2 / 4)
    assert list(win_rate_matrix(battles, models=["z", "x"]).index) == ["z", "x"]


def test_predicted_win_rate_matrix():
    pw = predicted_win_rate_matrix({"a": 1000.0, "b": 1400.0, "c": 1000.0})
    assert list(pw.index) == ["b", "a", "c"]
    assert pw.loc["b", "a"] == pytest.approx(10 / 11)
    assert pw.loc["a", "c"] == pytest.approx(0.5)
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose((pw + pw.T).to_numpy()[off], 1.0)
    assert np.isnan(np.diag(pw.to_numpy())).all()


# ----------------------------------------------------------------------------
# style control
# ----------------------------------------------------------------------------

def _styled(battles, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for b in battles:
        meta = {
            "sum_assistant_a_tokens": int(rng.integers(10, 900)),
            "sum_assistant_b_tokens": int(rng.integers(10, 900)),
            "header_count_a": {"h1": int(rng.integers(0, 3)), "h2": int(rng.integers(0, 3))},
            "header_count_b": {"h1": int(rng.integers(0, 3)), "h2": int(rng.integers(0, 3))},
            "list_count_a": {"ordered": int(rng.integers(0, 5)), "unordered": int(rng.integers(0, 5))},
            "list_count_b": {"ordered": int(rng.integers(0, 5)), "unordered": int(rng.integers(0, 5))},
            "bold_count_a": {"**": int(rng.integers(0, 4)), "__": 0},
            "bold_count_b": {"**": int(rng.integers(0, 4)), "__": 0},
        }
        out.append(Battle(b.prompt_id, b.model_a, b.model_b, b.winner, extra={"conv_metadata": meta}))
    return out


def _style_design(battles):
    keys_a = ["sum_assistant_a_tokens", "header_count_a", "list_count_a", "bold_count_a"]
    keys_b = [k.replace("_a", "_b") if k != "sum_assistant_a_tokens" else "sum_assistant_b_tokens" for k in keys_a]

    def val(v):
        return v if isinstance(v, int) else sum(v.values())

    A = np.array([[val(b.extra["conv_metadata"][k]) for k in keys_a] for b in battles], float)
    B = np.array([[val(b.extra["conv_metadata"][k]) for k in keys_b] for b in battles], float)
    d = (A - B) / (A + B + 1)
    return (d - d.mean(0)) / d.std(0)


def test_bt_style_matches_sklearn():
    battles = _styled(synthetic_battles(n=1500, seed=5))
    design = _style_design(battles)
    ours, coefs = compute_bt_style(battles)
    ref, ref_coef = sklearn_bt(battles, extra_columns=design, solver="newton-cholesky")
    assert max_rel(ours, ref) < 1e-11
    np.testing.assert_allclose(list(coefs.values()), ref_coef, atol=1e-10)
    # FastChat's fit_mle_elo: sklearn default C=1 on the duplicated rows == l2=0.5 here
    ours_pen, coefs_pen = compute_bt_style(battles, l2=0.5)
    ref_pen, ref_coef_pen = sklearn_bt(battles, extra_columns=design, C=1.0, solver="newton-cholesky")
    assert max_rel(ours_pen, ref_pen) < 1e-11
    np.testing.assert_allclose(list(coefs_pen.values()), ref_coef_pen, atol=1e-10)
    # the style covariates really enter: the ratings move
    assert max(abs(ours[m] - compute_bt(battles)[m]) for m in ours) > 1e-3


# ----------------------------------------------------------------------------
# battle files
# ----------------------------------------------------------------------------

@needs_arena_hard
def test_load_real_arena_hard_file():
    battles = load_battles(ARENA_HARD)
    assert len(battles) == 2136
    counts = pd.Series([b.winner for b in battles]).value_counts().to_dict()
    assert counts == {"model_b": 1758, "model_a": 347, "tie": 31}
    assert battles[0].prompt_id == "0" and battles[0].extra == {}


def test_write_and_load_roundtrip(tmp_path):
    battles = [
        Battle("q1", "x", "y", "model_a", judge="gpt-4", extra={"tstamp": 1.5, "language": "English"}),
        Battle(None, "y", "z", "tie (bothbad)"),
        Battle("7", "z", "x", "model_b", extra={"question_id": 99}),
    ]
    for name in ("b.jsonl", "b.json"):
        path = tmp_path / name
        write_battles(path, battles)
        assert load_battles(path) == battles
    assert json.loads((tmp_path / "b.json").read_text())[0]["judge"] == "gpt-4"
    write_battles(tmp_path / "b.jsonl", battles[:1])  # overwrite in place
    assert load_battles(tmp_path / "b.jsonl") == battles[:1]
    assert sorted(os.listdir(tmp_path)) == ["b.json", "b.jsonl"]  # no temp files left


def test_write_is_atomic_on_failure(tmp_path):
    path = tmp_path / "b.jsonl"
    write_battles(path, [Battle(None, "x", "y", "model_a")])
    before = path.read_text()
    bad = Battle(None, "x", "y", "model_a", extra={"obj": object()})  # not JSON-serialisable
    with pytest.raises(TypeError):
        write_battles(path, [bad])
    assert path.read_text() == before
    assert os.listdir(tmp_path) == ["b.jsonl"]


def test_loader_accepts_question_id_and_keeps_extra(tmp_path):
    path = tmp_path / "fc.jsonl"
    path.write_text(
        '{"question_id": 3, "model_a": "x", "model_b": "y", "winner": "tie", "judge": "u1", "anony": true}\n'
        "\n"
        '{"model_a": "y", "model_b": "x", "winner": "model_b"}\n'
    )
    a, b = load_battles(path)
    assert (a.prompt_id, a.judge, a.extra) == ("3", "u1", {"anony": True})
    assert b.prompt_id is None


@pytest.mark.parametrize(
    "content, line, field, snippet",
    [
        ('{"model_a": "x", "model_b": "y", "winner": "model_a"}\n{"model_a": "x", "model_b": \n',
         2, None, "invalid JSON"),
        ('{"model_a": "x", "model_b": "y", "winner": "model_a"}\n\n{"model_a": "x", "model_b": "y"}\n',
         3, "winner", "missing"),
        ('{"model_a": "x", "model_b": "y", "winner": "model_c"}\n', 1, "winner", "model_c"),
        ('{"model_a": "x", "model_b": "x", "winner": "tie"}\n', 1, "model_b", "itself"),
        ('{"model_a": "", "model_b": "x", "winner": "tie"}\n', 1, "model_a", "non-empty"),
        ('["model_a", "x"]\n', 1, None, "JSON object"),
        ('{"question_id": [1], "model_a": "x", "model_b": "y", "winner": "tie"}\n', 1, "question_id", "integer"),
        # JSON array file: line of the offending element
        ('[\n  {"model_a": "x", "model_b": "y", "winner": "tie"},\n  {"model_a": "x",\n   "winner": "tie"}\n]\n',
         3, "model_b", "missing"),
        ('[\n  {"model_a": "x", "model_b": "y", "winner": "tie"},\n  {"model_a": "x" "model_b": "y"}\n]\n',
         3, None, "invalid JSON"),
        ('[\n  {"model_a": "x", "model_b": "y", "winner": "tie"}\n  {"model_a": "x"}\n]\n',
         3, None, "expected ','"),
    ],
)
def test_loader_errors_name_file_line_and_field(tmp_path, content, line, field, snippet):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(BattleFormatError) as info:
        load_battles(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == str(path) and err.line == line and err.field == field
    msg = str(err)
    assert msg.startswith(f"{path}:{line}: ")
    if field:
        assert f"field {field!r}" in msg
    assert snippet in msg
