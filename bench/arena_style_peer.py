"""FastChat's style-control recipe, for ``bench_arena_scale.py --style``.

Written from ``fastchat/serve/monitor/elo_analysis.py`` (the version with
``construct_style_matrices`` / ``fit_mle_elo`` / ``get_bootstrap_result_style_control``):
the battles are duplicated into a dense ``2n x (models + k)`` design (``+log(10)`` for
model A, ``-log(10)`` for B, the k standardised style ratios), a tie becomes one A win
plus one B win, and scikit-learn's ``LogisticRegression(fit_intercept=False)`` (its
defaults: lbfgs, C=1, tol=1e-4, max_iter=100) fits it.  Each bootstrap round draws the
battles with replacement and refits on the duplicated rows of the draw.

Run as a script it times the recipe on a battle file in its own process and prints one
``@@{json}`` line with the load / matrix / fit / per-round times and its peak RSS, so the
bench reads the peer's memory from the peer's process, not from its own.
"""
from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
import pandas as pd

STYLE_CONTROL_ELEMENTS_V1 = ["sum_assistant_a_tokens", "header_count_a", "list_count_a", "bold_count_a",
                             "sum_assistant_b_tokens", "header_count_b", "list_count_b", "bold_count_b"]


def construct_style_matrices(df, BASE=10, apply_ratio=(1, 1, 1, 1), style_elements=STYLE_CONTROL_ELEMENTS_V1,
                             add_one=True):
    models = pd.concat([df["model_a"], df["model_b"]]).unique()
    models = pd.Series(np.arange(len(models)), index=models)
    df = pd.concat([df, df], ignore_index=True)
    p, n = len(models.index), df.shape[0]
    k = int(len(style_elements) / 2)
    X = np.zeros([n, p + k])
    X[np.arange(n), models[df["model_a"]]] = +math.log(BASE)
    X[np.arange(n), models[df["model_b"]]] = -math.log(BASE)
    style_vector = np.array([df.conv_metadata.map(
        lambda x: x[element] if type(x[element]) is int else sum(x[element].values())).tolist()
        for element in style_elements])
    style_diff = (style_vector[:k] - style_vector[k:]).astype(float)
    style_sum = (style_vector[:k] + style_vector[k:]).astype(float)
    if add_one:
        style_sum = style_sum + np.ones(style_diff.shape)
    apply = np.flatnonzero(apply_ratio)
    style_diff[apply] /= style_sum[apply]
    style_mean = np.mean(style_diff, axis=1)
    style_std = np.std(style_diff, axis=1)
    X[:, -k:] = ((style_diff - style_mean[:, np.newaxis]) / style_std[:, np.newaxis]).T
    Y = np.zeros(n)
    Y[df["winner"] == "model_a"] = 1.0
    tie_idx = ((df["winner"] == "tie") | (df["winner"] == "tie (bothbad)")).to_numpy().copy()
    tie_idx[len(tie_idx) // 2:] = False
    Y[tie_idx] = 1.0
    return X, Y, models


def fit_mle_elo(X, Y, models, SCALE=400, INIT_RATING=1000):
    from sklearn.linear_model import LogisticRegression

    p = len(models.index)
    lr = LogisticRegression(fit_intercept=False)
    lr.fit(X, Y)
    elo = SCALE * lr.coef_[0] + INIT_RATING
    return pd.Series(elo[:p], index=models.index).sort_values(ascending=False), lr.coef_[0][p:]


def bootstrap_rounds(X, Y, battles, models, rounds, seed=0):
    """get_bootstrap_result_style_control, seeded; returns the per-round seconds."""
    rng = np.random.default_rng(seed)
    k = X.shape[0] // 2
    tie = ((battles["winner"] == "tie") | (battles["winner"] == "tie (bothbad)")).to_numpy()
    times, elos = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        idx = rng.choice(k, size=k, replace=True)
        nontie, tied = idx[~tie[idx]], idx[tie[idx]]
        tied = np.concatenate([tied, tied + k])
        _X = np.concatenate([X[nontie], X[nontie], X[tied]])
        _Y = np.concatenate([Y[nontie], Y[nontie], Y[tied]])
        elos.append(fit_mle_elo(_X, _Y, models)[0])
        del _X, _Y
        times.append(time.perf_counter() - t)
    return times, elos


def main(path: str, rounds: int) -> None:
    t = time.perf_counter()
    df = pd.read_json(path, lines=True)[["model_a", "model_b", "winner", "conv_metadata"]]
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    X, Y, models = construct_style_matrices(df)
    t_matrix = time.perf_counter() - t
    t = time.perf_counter()
    elo, coefs = fit_mle_elo(X, Y, models)
    t_fit = time.perf_counter() - t
    times, _ = bootstrap_rounds(X, Y, df, models, rounds)
    peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    print("@@" + json.dumps({"load_s": t_load, "matrix_s": t_matrix, "fit_s": t_fit, "round_s": times,
                             "peak_rss_mib": peak, "design_mib": X.nbytes / 2**20,
                             "ratings": elo.to_dict(), "coefs": list(map(float, coefs))}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
