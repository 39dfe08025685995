"""The overall ranking's near-linear win rates (one sort per column and round) give exactly the
figures of counting every pair, on fixtures with ties, missing cells, lower-is-better columns and
a bootstrap drawn in chunks; average ranks equal scipy's."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pandas as pd
import pytest

from evalkit.dashboards import ranking


def pairwise_win_rates(x: np.ndarray) -> np.ndarray:
    """The definition: per model, the others it beats plus half those it ties, over the others."""
    m = x.shape[-1]
    beats = (x[..., :, None] > x[..., None, :]).sum(axis=-1)
    ties = (x[..., :, None] == x[..., None, :]).sum(axis=-1) - 1
    return (beats + 0.5 * ties) / (m - 1)


def fixture(seed: int, models: int, cols: int):
    rng = np.random.default_rng(seed)
    idx, names = [f"m{i}" for i in range(models)], [f"c{j}" for j in range(cols)]
    v = pd.DataFrame(rng.random((models, cols)).round(2), index=idx, columns=names)   # rounding makes ties
    v[v > 0.9] = np.nan                                                                 # coverage groups
    stderr = pd.DataFrame(np.where(rng.random((models, cols)) < 0.3, np.nan, 0.01), index=idx, columns=names)
    return v, v - 0.03, v + 0.03, stderr


@pytest.mark.parametrize("seed,models,cols", [(0, 4, 2), (1, 30, 3), (2, 120, 6)])
def test_sorted_win_rates_equal_the_pairwise_count(monkeypatch, seed, models, cols):
    v, lo, hi, se = fixture(seed, models, cols)
    hib = {"c1": False}
    fast = ranking.overall_ranking(v, lo, hi, hib, list(v.columns), {"c0": 3, "c1": 1}, se, rounds=250, seed=seed)
    monkeypatch.setattr(ranking, "_win_rates", pairwise_win_rates)
    monkeypatch.setattr(ranking, "CHUNK", 250)                        # every round in one draw
    monkeypatch.setattr(ranking, "_MEMO", OrderedDict())               # computed again, not remembered
    exact = ranking.overall_ranking(v, lo, hi, hib, list(v.columns), {"c0": 3, "c1": 1}, se, rounds=250, seed=seed)
    pd.testing.assert_frame_equal(fast, exact)
    assert fast["score"].notna().sum() >= 2 and fast["group"].nunique() > 1


def test_average_ranks_equal_scipy():
    stats = pytest.importorskip("scipy.stats")
    x = np.random.default_rng(5).integers(0, 6, size=(7, 40)).astype(float)   # many ties per row
    np.testing.assert_array_equal(ranking.average_ranks(x), stats.rankdata(x, axis=-1))
    np.testing.assert_allclose(ranking._win_rates(x), pairwise_win_rates(x))


def test_two_thousand_models_fit_in_chunks():
    rng = np.random.default_rng(9)
    v = pd.DataFrame(rng.random((2000, 7)), index=[f"m{i}" for i in range(2000)])
    out = ranking.overall_ranking(v, v - 0.02, v + 0.02, {}, list(v.columns), rounds=200)
    assert out["score"].notna().all() and (out["ci_low"] <= out["score"]).all()
    best = out["score"].idxmax()
    assert out.at[best, "rank"] == 1 and v.loc[best].mean() > v.mean(axis=1).quantile(0.99)


def test_a_ranking_is_computed_once_per_distinct_input(monkeypatch):
    v, lo, hi, se = fixture(3, 20, 3)
    first = ranking.overall_ranking(v, lo, hi, {}, list(v.columns), stderr=se, rounds=50)
    calls, real = [], ranking._bootstrap
    monkeypatch.setattr(ranking, "_bootstrap", lambda *a: calls.append(1) or real(*a))
    again = ranking.overall_ranking(v.copy(), lo.copy(), hi.copy(), {}, list(v.columns), stderr=se, rounds=50)
    pd.testing.assert_frame_equal(first, again)
    assert calls == []                                                   # remembered
    v.iloc[0, 0] = 0.5 if v.iloc[0, 0] != 0.5 else 0.4
    ranking.overall_ranking(v, lo, hi, {}, list(v.columns), stderr=se, rounds=50)
    assert calls                                                         # another input: computed
