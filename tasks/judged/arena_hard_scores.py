"""Arena-Hard v2.0's figures, computed as upstream's ``show_result.py`` computes them
(lmarena/arena-hard-auto, commit 196f6b8; ``tests/reference/arena_hard_auto`` holds the code the
tests run beside this module).

- **Battles** (``battle_scores``, upstream ``load_judgments``): each prompt is judged twice, game 1
  with the baseline as assistant A, game 2 with the model as A. Game 2's label maps to the model's
  scores and game 1's to one minus them; a strong verdict (``>>``/``<<``) counts ``weight`` = 3 times,
  so a prompt gives 2 to 6 battle rows of 1, 0.5 or 0. A prompt with either verdict missing is left
  out whole (upstream drops a judgment with a null game). A label outside upstream's table
  (``[[A]]``, ``[[A>=B]]``) is a missing verdict here; upstream raises ``KeyError`` on it.
- **Score** (``bootstrap_means``, upstream ``print_leaderboard``): 100 rounds, each the mean of the
  battle rows resampled with replacement; the score is the *mean of the rounds*, the interval their
  5th and 95th percentiles (a 90% interval, upstream's). Upstream draws the rows with pandas'
  ``groupby("model").sample(frac=1, replace=True)`` on numpy's global random state; here a
  ``RandomState(seed)`` makes the same draws (``randint(0, n, n)`` per round, what
  ``RandomState.choice(n, n)`` does), so ``np.random.seed(seed)`` before upstream's function gives
  the same rounds.
- **Style-controlled score** (``style_control``, upstream ``print_leaderboard_with_style_features``
  with both ``length`` and ``markdown``): a Bradley-Terry logistic model over the battle rows with
  the model's and the baseline's one-hot columns (+1/-1) and four style covariates, the token-length
  difference ``(m - b) / (m + b)`` and, for headers, list items and bold spans, the difference of
  densities ``d = count / (tokens + 1)`` as ``(d_m - d_b) / (d_m + d_b + 1)``, standardised over
  the rows (mean, unbiased std). 100 rounds of rows drawn by ``RandomState(seed).randint(0, n, (100,
  n))`` (upstream: ``np.random.randint``), each fitted as upstream fits it: ``torch.optim.LBFGS(lr=0.1,
  max_iter=50, tolerance_grad=tolerance_change=1e-9)`` from all coefficients at 0.5, a fixed step and
  no line search (``lbfgs``, a numpy port, float64 where upstream is float32). That fit stops before
  the optimum; the port reproduces where it stops. The win rate of a round is
  ``exp(c_model) / (exp(c_model) + exp(c_baseline))``; the score is the rounds' median, the interval
  their 5th/95th percentiles. A style column that is constant over the rows (all zero in a small
  run) is left at zero here; upstream divides by its zero std and stops on an assertion.
- **Style features** (``style_meta``, upstream ``gen_answer.py`` + ``utils/add_markdown_info.py``):
  code blocks' insides removed (upstream's ``remove_pattern`` with ``"```([^`]*)```"``), then the
  counts of headers ``^#{k}\\s`` per level, ordered ``^\\s*\\d+\\.\\s`` and unordered ``^\\s*[-*+]\\s``
  list items, ``**bold**`` and ``__bold__`` spans; ``token_len`` counts the whole answer's tokens.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

import numpy as np

WEIGHT = 3
ROUNDS = 100
QUANTILES = (0.05, 0.95)
_ONE = {"A>B": 1.0, "A=B": 0.5, "A<B": 0.0, "B>A": 0.0, "B=A": 0.5, "B<A": 1.0}
_STRONG = {"A>>B": 1.0, "A<<B": 0.0, "B>>A": 0.0, "B<<A": 1.0}
LABELS = frozenset(_ONE) | frozenset(_STRONG)


def label_scores(label: str, weight: int = WEIGHT) -> Optional[list]:
    """Upstream's ``label_to_score``: assistant A's scores for one verdict label (None: not a label)."""
    if label in _ONE:
        return [_ONE[label]]
    if label in _STRONG:
        return [_STRONG[label]] * weight
    return None


def battle_scores(game1: Optional[str], game2: Optional[str], weight: int = WEIGHT) -> Optional[list]:
    """The model's battle rows for one prompt: game 2 (model as A) then one minus game 1 (baseline
    as A), as upstream's ``load_judgments``; None when either game has no usable verdict."""
    s1 = label_scores(game1, weight) if game1 is not None else None
    s2 = label_scores(game2, weight) if game2 is not None else None
    if s1 is None or s2 is None:
        return None
    return s2 + [1 - s for s in s1]


# ---- style features ----------------------------------------------------------------------------
_CODE = re.compile("```([^`]*)```")


def remove_code(answer: str) -> str:
    """Upstream's ``remove_pattern``: every fenced block's inside (the captured group) replaced by ''."""
    for block in _CODE.findall(answer):
        answer = answer.replace(block, "")
    return answer


def markdown_counts(text: str) -> dict:
    """Upstream's ``count_markdown_elements(text, suffix="")``, same regexes, same keys."""
    return {
        "header_count": {f"h{k}": len(re.findall(r"^#{%d}\s" % k, text, re.MULTILINE)) for k in range(1, 7)},
        "list_count": {"ordered": len(re.findall(r"^\s*\d+\.\s", text, re.MULTILINE)),
                       "unordered": len(re.findall(r"^\s*[-*+]\s", text, re.MULTILINE))},
        "bold_count": {"**": len(re.findall(r"\*\*[^*\n]+\*\*", text)),
                       "__": len(re.findall(r"__[^_\n]+__", text))},
    }


def style_meta(answer: str, token_len: int) -> dict:
    """An answer's ``metadata`` as upstream stores it beside the answer."""
    return {"token_len": int(token_len), **markdown_counts(remove_code(answer))}


def feature_row(meta: dict) -> list:
    """``[tokens, headers, list items, bold spans]`` (a count per kind is summed, as upstream)."""
    return [float(v if not isinstance(v, dict) else sum(v.values()))
            for v in (meta["token_len"], meta["header_count"], meta["list_count"], meta["bold_count"])]


def style_covariates(model: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Rows x 4 standardised covariates from the model's and the baseline's feature rows."""
    out = np.zeros_like(model, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[:, 0] = (model[:, 0] - base[:, 0]) / (model[:, 0] + base[:, 0])
        dm, db = model[:, 1:] / (model[:, :1] + 1), base[:, 1:] / (base[:, :1] + 1)
        out[:, 1:] = (dm - db) / (dm + db + 1)
    out = np.nan_to_num(out)  # both answers empty: no length difference
    std = out.std(axis=0, ddof=1) if len(out) > 1 else np.zeros(out.shape[1])
    centred = out - out.mean(axis=0)
    live = std > 0
    centred[:, live] /= std[live]
    centred[:, ~live] = 0.0
    return centred


# ---- the fits ----------------------------------------------------------------------------------
def _loss_grad(x: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple:
    """Summed binary cross-entropy with logits ``X @ x`` (torch's stable form) and its gradient."""
    z = X @ x
    loss = float(np.sum(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))))
    return loss, X.T @ (1.0 / (1.0 + np.exp(-z)) - y)


def lbfgs(X: np.ndarray, y: np.ndarray, lr: float = 0.1, max_iter: int = 50, tol: float = 1e-9,
          history: int = 100) -> np.ndarray:
    """``torch.optim.LBFGS(lr, max_iter, tolerance_grad=tol, tolerance_change=tol)``'s one ``step``
    without line search, from every coefficient at 0.5, as upstream's ``fit_pairwise_model``."""
    x = np.full(X.shape[1], 0.5)
    loss, g = _loss_grad(x, X, y)
    if np.abs(g).max() <= tol:
        return x
    dirs, stps, ro, h_diag = [], [], [], 1.0
    d = t = prev_g = None
    for it in range(1, max_iter + 1):
        if it == 1:
            d = -g
        else:
            yv, s = g - prev_g, d * t
            ys = float(yv @ s)
            if ys > 1e-10:
                if len(dirs) == history:
                    dirs.pop(0), stps.pop(0), ro.pop(0)
                dirs.append(yv), stps.append(s), ro.append(1.0 / ys)
                h_diag = ys / float(yv @ yv)
            q, al = -g, [0.0] * len(dirs)
            for i in range(len(dirs) - 1, -1, -1):
                al[i] = float(stps[i] @ q) * ro[i]
                q = q - al[i] * dirs[i]
            d = q * h_diag
            for i in range(len(dirs)):
                d = d + (al[i] - float(dirs[i] @ d) * ro[i]) * stps[i]
        prev_g, prev_loss = g, loss
        t = min(1.0, 1.0 / float(np.abs(g).sum())) * lr if it == 1 else lr
        if float(g @ d) > -tol:
            break
        x = x + t * d
        if it == max_iter:
            break
        loss, g = _loss_grad(x, X, y)
        if np.abs(g).max() <= tol or np.abs(d * t).max() <= tol or abs(loss - prev_loss) < tol:
            break
    return x


def style_design(covariates: np.ndarray) -> np.ndarray:
    """Upstream's ``all_features`` for one model against one baseline: the model's one-hot column
    (+1), the baseline's (-1), then the covariates."""
    n = len(covariates)
    return np.column_stack([np.ones(n), -np.ones(n), covariates])


def style_rounds(X: np.ndarray, y: np.ndarray, seed: int, rounds: int = ROUNDS) -> np.ndarray:
    """The model's win rate against the baseline in each bootstrap round of the style fit."""
    idx = np.random.RandomState(seed).randint(0, len(y), size=(rounds, len(y)))
    out = np.empty(rounds)
    for r in range(rounds):
        c = lbfgs(X[idx[r]], y[idx[r]])
        out[r] = np.exp(c[0]) / (np.exp(c[0]) + np.exp(c[1]))
    return out


def bootstrap_means(scores: np.ndarray, seed: int, rounds: int = ROUNDS) -> np.ndarray:
    """Each round's mean of the battle rows drawn with replacement (upstream's pandas draws)."""
    rs = np.random.RandomState(seed)
    n = len(scores)
    return np.array([scores[rs.randint(0, n, size=n)].mean() for _ in range(rounds)])


def summary(rounds: np.ndarray, centre: str) -> dict:
    """``{value, lower, upper, stderr}`` of bootstrap rounds: the value their mean (``centre="mean"``,
    the plain score) or median (the style-controlled one), the bounds their 5th/95th percentiles."""
    value = float(rounds.mean() if centre == "mean" else np.quantile(rounds, 0.5))
    lo, hi = (float(np.quantile(rounds, q)) for q in QUANTILES)
    return {"value": value, "lower": lo, "upper": hi, "stderr": float(rounds.std(ddof=1))}


def group_figures(items: Sequence[dict], seeds: tuple, styled: bool = True) -> dict:
    """Both scores of one group of prompts. ``items``: ``{"scores": [...], "model": meta,
    "baseline": meta}`` of the prompts with both verdicts, in record order; ``seeds``: (plain, style);
    ``styled``: whether to fit the style-controlled score. Returns ``{"score": summary, "score_sc":
    summary or None, "raw_score": mean of the rows, "battles": rows, "prompts": n}``."""
    rows = np.array([s for it in items for s in it["scores"]], dtype=float)
    out = {"battles": int(len(rows)), "prompts": len(items), "score": None, "score_sc": None, "raw_score": None}
    if not len(rows):
        return out
    out["raw_score"] = float(rows.mean())
    out["score"] = summary(bootstrap_means(rows, seeds[0]), "mean")
    if not styled:
        return out
    model = np.array([feature_row(it["model"]) for it in items for _ in it["scores"]])
    base = np.array([feature_row(it["baseline"]) for it in items for _ in it["scores"]])
    if len(rows) > 1:
        out["score_sc"] = summary(style_rounds(style_design(style_covariates(model, base)), rows, seeds[1]),
                                  "median")
    return out
