"""Bradley–Terry with LMArena's "style control" covariates (``compute_bt_style``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .battles import Battle
from .bt import _fit, mle_exists, to_elo
from .cells import Cells

__all__ = ["STYLE_CONTROL_ELEMENTS_V1", "compute_bt_style"]


def _battle_list(battles: Iterable[Battle] | pd.DataFrame) -> list[Battle]:
    """Materialise battles (objects, mappings or a DataFrame) as a list of ``Battle``."""
    if isinstance(battles, pd.DataFrame):
        return [Battle.from_dict(r) for r in battles.to_dict(orient="records")]
    return [x if isinstance(x, Battle) else Battle.from_dict(x) for x in battles]


#: LMArena's style covariates: per side, the answer length in tokens and the
#: counts of markdown headers, list items and bold spans, all read from each
#: battle's ``conv_metadata`` (a dict value is summed, e.g. header counts per
#: level ``{"h1": 2, "h2": 0, ...}``).
STYLE_CONTROL_ELEMENTS_V1: tuple[str, ...] = (
    "sum_assistant_a_tokens",
    "header_count_a",
    "list_count_a",
    "bold_count_a",
    "sum_assistant_b_tokens",
    "header_count_b",
    "list_count_b",
    "bold_count_b",
)


def _style_value(meta: Mapping[str, Any], key: str, i: int) -> float:
    if key not in meta:
        raise ValueError(f"battle #{i}: conv_metadata lacks {key!r}")
    v = meta[key]
    if isinstance(v, Mapping):
        v = sum(v.values())
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"battle #{i}: conv_metadata[{key!r}] is not a number: {v!r}")
    return float(v)


def compute_bt_style(
    battles: Iterable[Battle] | pd.DataFrame,
    scale: float = 400,
    base: float = 10,
    init_rating: float = 1000,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    *,
    style_elements: Sequence[str] = STYLE_CONTROL_ELEMENTS_V1,
    l2: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> tuple[dict[str, float], dict[str, float]]:
    """Bradley–Terry with LMArena's style control; returns ``(ratings, style_coefs)``.

    As FastChat's ``construct_style_matrices`` + ``fit_mle_elo``: for each of
    the ``k`` features (first half of ``style_elements`` = side A, second half
    = side B) the covariate is ``(x_a - x_b) / (x_a + x_b + 1)``, standardised
    over the battles, and enters the logit with its own coefficient next to
    the model ratings.  The ratings then estimate strength with answer length
    and markdown use held equal; ``style_coefs`` (keyed by the side-A feature
    name, natural-log units) say how much each style feature sways the judge.

    Features come from ``battle.extra["conv_metadata"]`` (a ``conv_metadata``
    column for DataFrames).  ``l2`` adds ``l2/2 * ||params||^2`` to the summed
    log-loss; FastChat fits with sklearn's default ``C=1`` on duplicated
    battles, which is ``l2=0.5`` here (then centring is left to the penalty).
    With ``l2=0`` this is the plain MLE, centred and anchored as
    ``compute_bt``.
    """
    items = _battle_list(battles)
    if len(style_elements) % 2:
        raise ValueError("style_elements must list side-A features then side-B features")
    k = len(style_elements) // 2
    a = [x.model_a for x in items]
    b = [x.model_b for x in items]
    w = [x.winner for x in items]
    raw = np.empty((len(items), 2 * k))
    for i, x in enumerate(items):
        meta = x.extra.get("conv_metadata")
        if not isinstance(meta, Mapping):
            raise TypeError(f"battle #{i}: extra['conv_metadata'] missing or not an object")
        raw[i] = [_style_value(meta, key, i) for key in style_elements]
    diff = (raw[:, :k] - raw[:, k:]) / (raw[:, :k] + raw[:, k:] + 1.0)
    std = diff.std(axis=0)
    std[std == 0] = 1.0  # a constant feature carries no information; avoid 0/0
    design = (diff - diff.mean(axis=0)) / std

    models = list(dict.fromkeys(m for pair in zip(a, b) for m in pair))
    index = {m: i for i, m in enumerate(models)}
    pairs = np.array([[index[ma], index[mb]] for ma, mb in zip(a, b)], dtype=np.int64).reshape(-1, 2)
    outcomes = np.array([1.0 if x == "model_a" else 0.0 if x == "model_b" else 0.5 for x in w])
    counts = np.ones(len(items))
    exists = mle_exists(Cells(models, pairs, outcomes, counts)) if l2 == 0.0 else True
    theta = _fit(pairs, outcomes, counts, len(models), math.log(base), tol, max_iter,
                 n_extra=k, design=design, l2=l2, polish=exists)
    ratings = to_elo(models, theta[: len(models)], scale, init_rating, anchor, anchor_rating)
    coefs = {name: float(c) for name, c in zip(style_elements[:k], theta[len(models):])}
    return ratings, coefs

