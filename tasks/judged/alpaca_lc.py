"""AlpacaEval 2's win rates, computed as ``alpaca_eval`` computes them (``alpaca_eval/metrics/winrate.py``
and ``metrics/glm_winrate.py``, alpaca-eval 0.6.6, Apache-2.0, Tatsu Lab), on the same preferences.

A *preference* is upstream's annotation of one game, in the baseline-vs-model frame: 1 the baseline
(``output_1``) wins, 2 the model (``output_2``) wins, 1.5 (or 0) a draw; NaN when the judge gave no
verdict.

- ``win_rate`` (``get_winrate``): the mean of ``preference - 1`` over the games with a verdict, in
  percent, and its standard error (``sem``, ddof 1), both times 100 as upstream reports them.
- ``length_controlled_winrate`` (``get_length_controlled_winrate``): a logistic GLM of the preference
  on ``tanh(std_delta_len)`` (the baseline's minus the model's output length in characters, over its
  standard deviation across *all* games), the instruction's difficulty and an ``not_gamed_baseline``
  indicator, fitted by ``fit_LogisticRegressionCV`` (L1, liblinear, no intercept, ``random_state``
  123, ten Cs chosen by ``GroupKFold(5)`` on a log loss with probabilistic labels: every game twice,
  label 1 weighted by the preference, label 0 by one minus it); then the mean over all games of the
  predicted preference with no length difference, in percent. Its ``lc_standard_error`` is upstream's,
  the ``sem`` of those predictions. Games without a verdict are left out of the fit but, as
  upstream, count in the length deviation and in the final mean.

The GLMs (upstream's ``GLM_INFO``): ``length_controlled_v1`` (AlpacaEval 2's figure: the difficulty
term, and the annotations of two length-gamed baselines from the hub file ``df_gamed.csv`` of the
dataset ``tatsu-lab/alpaca_eval`` added to the fit with weight 0.2 / 2), ``length_controlled_noreg``
(the difficulty term, no gamed rows) and ``length_controlled_minimal`` (neither: the length term and the
indicator only, so one constant prediction). The two first need ``df_gamed.csv``; its difficulty of an
instruction is looked up as upstream does, by the row label (0, 1, ...) of the first row of each
``index`` in the file, with the game's position in the evaluation set.
"""
from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from evalkit.taskapi.data import DataError

#: upstream's ``GLM_INFO``: (uses the instruction difficulty, weight lambda of the gamed baselines)
GLMS = {"length_controlled_v1": (True, 0.2), "length_controlled_noreg": (True, None),
        "length_controlled_minimal": (False, None)}
HUB_FILE = {"repo_id": "tatsu-lab/alpaca_eval", "filename": "df_gamed.csv", "repo_type": "dataset"}
GAMED_COLUMNS = ("index", "preference", "std_delta_len", "instruction_difficulty", "not_gamed_baseline")
N_SPLITS = 5


@dataclass(frozen=True)
class Gamed:
    """``df_gamed.csv``: each instruction's difficulty (by row label, see the module's text) and the
    gamed baselines' design rows ``[tanh(std_delta_len), difficulty, not_gamed]`` with their preference."""

    source: str
    difficulty: dict
    rows: np.ndarray
    preference: np.ndarray
    not_gamed: np.ndarray


def read_gamed(path, source: Optional[str] = None) -> Gamed:
    """``df_gamed.csv`` read as upstream reads it (``pd.read_csv``); a missing column is a one-line error."""
    import pandas as pd

    path = Path(path)
    try:
        df = pd.read_csv(path)
    except Exception as e:  # noqa: BLE001 (pandas raises many kinds for a bad file)
        raise DataError(f"{path}: not a readable df_gamed.csv ({type(e).__name__}: {e})") from None
    missing = [c for c in GAMED_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{path}: df_gamed.csv lacks column(s) {', '.join(missing)} (AlpacaEval's GLM needs "
                        f"{', '.join(GAMED_COLUMNS)})")
    first = df.drop_duplicates("index")["instruction_difficulty"]
    ng = df["not_gamed_baseline"].astype(float).to_numpy()
    rows = np.column_stack([np.tanh(df["std_delta_len"].astype(float).to_numpy()),
                            df["instruction_difficulty"].astype(float).to_numpy(), ng])
    return Gamed(source or str(path), {int(k): float(v) for k, v in first.items()}, rows,
                 df["preference"].astype(float).to_numpy(), ng)


def hub_gamed() -> tuple[Optional[Gamed], str]:
    """``df_gamed.csv`` from the hub (or the local HF cache when the hub is unreachable), and why not."""
    from evalkit.util import hub_access
    reason = hub_access.go_offline_if_unreachable()
    try:
        from huggingface_hub import hf_hub_download
        path = hf_hub_download(**HUB_FILE)
    except Exception as e:  # noqa: BLE001 (offline, gated, missing package: say why)
        why = reason or f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        return None, f"hub file {HUB_FILE['repo_id']}/{HUB_FILE['filename']} unavailable ({why})"
    return read_gamed(path, f"hub:{HUB_FILE['repo_id']}/{HUB_FILE['filename']}"), ""


def _as_preferences(pref) -> np.ndarray:
    """Upstream's ``astype(float).replace({0.0: 1.5})``."""
    p = np.asarray(pref, dtype=float)
    return np.where(p == 0.0, 1.5, p)


def win_rate(pref) -> dict:
    """``get_winrate``'s figures (percent) from the preferences (NaN: no verdict)."""
    p = _as_preferences(pref)
    keep = p[(p >= 1) & (p <= 2)] - 1  # validate_alpacaeval_preference without NaN
    n = len(keep)
    return {"win_rate": float(keep.mean() * 100) if n else math.nan,
            "standard_error": float(keep.std(ddof=1) / math.sqrt(n) * 100) if n > 1 else math.nan,
            "n_wins": int((keep > 0.5).sum()), "n_wins_base": int((keep < 0.5).sum()),
            "n_draws": int(((p == 1.5) | (p == 0)).sum()), "n_total": n}


def _logloss_continuous(y_true, y_pred, true_prob, true_sample_weight=None):
    """Upstream's ``logloss_continuous``: the log loss against the probabilistic label of each copy."""
    y = np.where(np.asarray(y_true) == 1, true_prob, 1 - np.asarray(true_prob))
    y_pred = np.clip(y_pred, 1e-15, 1 - 1e-15)
    loss = y * np.log(y_pred) + (1 - y) * np.log(1 - y_pred)
    if true_sample_weight is not None:
        loss = loss * true_sample_weight
    return -np.mean(loss)


def _l1_kwargs(cls) -> dict:
    """L1 as this scikit-learn spells it (``penalty="l1"`` is deprecated from 1.8: ``l1_ratios=(1,)``)."""
    params = inspect.signature(cls).parameters
    out = {"use_legacy_attributes": False} if "use_legacy_attributes" in params else {}
    deprecated = "l1_ratios" in params and params["penalty"].default == "deprecated"
    out.update({"l1_ratios": (1.0,)} if deprecated else {"penalty": "l1"})
    return out


def fit(x: np.ndarray, pref: np.ndarray, sample_weight: Optional[np.ndarray] = None, n_splits: int = N_SPLITS):
    """``fit_LogisticRegressionCV(..., is_ytrue_proba=True)``: each row twice (label 1 weighted by its
    probability, label 0 by one minus it), ``GroupKFold`` over the rows, upstream's scorer and settings."""
    import sklearn
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GroupKFold

    n = len(pref)
    x2, y = np.vstack([x, x]), np.r_[np.ones(n, int), np.zeros(n, int)]
    true_prob, groups = np.r_[pref, 1 - pref], np.r_[np.arange(n), np.arange(n)]
    true_sw = None if sample_weight is None else np.r_[sample_weight, sample_weight]
    sw = true_prob if true_sw is None else true_prob * true_sw
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        scorer = make_scorer(_logloss_continuous, response_method="predict_proba", greater_is_better=False)
        scorer = scorer.set_score_request(true_sample_weight=True, true_prob=True)
        model = LogisticRegressionCV(cv=GroupKFold(n_splits=n_splits), scoring=scorer, random_state=123, dual=False,
                                     solver="liblinear", n_jobs=None, fit_intercept=False,
                                     **_l1_kwargs(LogisticRegressionCV))
        model.set_fit_request(sample_weight=True)
        model.fit(x2, y, sample_weight=sw, groups=groups, true_sample_weight=true_sw, true_prob=true_prob)
    return model


def length_controlled(pref, len_baseline, len_model, index, glm: str, gamed: Optional[Gamed] = None) -> dict:
    """``get_length_controlled_winrate``'s ``length_controlled_winrate`` and ``lc_standard_error``
    (percent) and the GLM's weights, from each game's preference (NaN: no verdict), the baseline's and
    the model's output lengths in characters and the game's position in the evaluation set (``index``).
    NaN figures when the GLM cannot be fitted (fewer games with a verdict than folds)."""
    with_difficulty, lam = GLMS[glm]
    if with_difficulty and gamed is None:
        raise ValueError(f"GLM {glm} needs df_gamed.csv (the instruction difficulties)")
    p = _as_preferences(pref) - 1
    delta = np.asarray(len_baseline, dtype=float) - np.asarray(len_model, dtype=float)
    sd = delta.std(ddof=1) if len(delta) > 1 else math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        tanh = np.tanh(delta / sd)
    cols = [tanh]
    if with_difficulty:
        try:
            cols.append(np.array([gamed.difficulty[int(i)] for i in index], dtype=float))
        except KeyError as e:
            raise DataError(f"{gamed.source}: no instruction_difficulty for index {e.args[0]}") from None
    names = ["np.tanh(std_delta_len)", *(["instruction_difficulty"] if with_difficulty else []),
             "not_gamed_baseline.astype(float)"]
    x = np.column_stack([*cols, np.ones(len(p))])
    x_test = x.copy()
    x_test[:, 0] = 0.0  # std_delta_len = 0: no length difference
    x_test = x_test[~np.isnan(x_test).any(axis=1)]  # patsy drops rows with a missing value
    train, y, weight = x, p, None
    if lam:
        train, y = np.vstack([gamed.rows, x]), np.r_[gamed.preference, p]
        ng = np.r_[gamed.not_gamed, np.ones(len(p))]
        weight = ng + lam * (1 - ng) / 2  # "divided by 2 because there are two gamed baselines"
    keep = ~np.isnan(train).any(axis=1) & ~np.isnan(y)
    nan = {"length_controlled_winrate": math.nan, "lc_standard_error": math.nan, "weights": {}}
    if keep.sum() < N_SPLITS or not len(x_test):
        return nan
    try:
        model = fit(train[keep], y[keep], None if weight is None else weight[keep])
    except ValueError:  # too few games for the folds
        return nan
    predicted = model.predict_proba(x_test)[:, 1]
    return {"length_controlled_winrate": float(predicted.mean() * 100),
            "lc_standard_error": float(predicted.std(ddof=1) / math.sqrt(len(predicted)) * 100)
            if len(predicted) > 1 else math.nan,
            "weights": {k: float(v) for k, v in zip(names, model.coef_[0])}}


def resolve_glm(task: str, choice: str = "auto", path: Optional[str] = None) -> tuple[str, Optional[Gamed], str]:
    """The GLM a run fits, its ``df_gamed.csv`` and a note when it falls back: ``auto`` is AlpacaEval 2's
    ``length_controlled_v1`` when ``df_gamed.csv`` is at hand (``path``, else the hub or its local
    cache), else ``length_controlled_minimal``, with a one-line warning; a GLM named outright that
    needs the file and cannot have it is an error."""
    import logging

    if choice not in ("auto", *GLMS):
        raise ValueError(f"--task-args {task}:glm={choice!r}: expected auto or one of {', '.join(GLMS)}")
    if choice == "length_controlled_minimal":
        return choice, None, ""
    gamed, why = (read_gamed(path), "") if path else hub_gamed()
    if gamed is not None:
        return ("length_controlled_v1" if choice == "auto" else choice), gamed, ""
    hint = f"pass --task-args {task}:glm_data=PATH/df_gamed.csv (hub dataset {HUB_FILE['repo_id']})"
    if choice != "auto":
        raise DataError(f"task {task}: GLM {choice} needs df_gamed.csv: {why}; {hint}")
    note = (f"task {task}: length-controlled win rate from length_controlled_minimal (no instruction difficulty, "
            f"no regularisation), not AlpacaEval 2's length_controlled_v1: {why}; {hint}")
    logging.getLogger(__name__).warning(note)
    return "length_controlled_minimal", None, note
