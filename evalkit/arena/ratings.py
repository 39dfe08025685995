"""Elo and Bradley–Terry ratings from pairwise battles, as Chatbot Arena does it.

The published FastChat / LMArena analysis (``fastchat/serve/monitor/elo_analysis.py``
and the LMArena Elo notebook) in plain numpy/scipy, one job per module; this
module gathers their public names where callers have always imported them:

* ``elo``: ``compute_online_elo``, the sequential Elo update (order dependent).
* ``bt``: ``compute_bt``, the Bradley–Terry maximum-likelihood fit on the Elo scale.
* ``style``: ``compute_bt_style``, BT with LMArena's "style control" covariates (per-battle objects);
  ``style_board``: ``style_leaderboard``, the same fit at LMArena scale on a ``BattleTable`` read with
  ``read_battle_table(paths, style=STYLE_CONTROL_ELEMENTS_V1)``, with weighted-bootstrap CIs.
* ``bootstrap``: ``bootstrap_samples`` / ``bootstrap_ratings`` / ``rating_table``
  (resampling battles, any rating function) and LMArena's ``shared_ranks``.
* ``resample`` / ``leaderboard``: the count bootstrap (a multinomial draw of the
  (pair, outcome) cell counts per round) and ``bt_leaderboard``, the BT table at
  LMArena scale that reports undetermined ratings as such.
* ``matrices``: ``win_rate_matrix`` / ``battle_count_matrix`` / ``predicted_win_rate_matrix``.

Conventions: ``P(a beats b) = 1 / (1 + base ** ((R_b - R_a) / scale))`` (10 and
400 as in chess).  Any tie, including ``"tie (bothbad)"``, scores 0.5 for each
side.  Battles may be given as ``Battle`` objects, mappings with
``model_a``/``model_b``/``winner`` keys, a pandas DataFrame with those columns,
or (for the BT and matrix functions) a ``BattleTable``.  Randomness only ever
comes from an explicitly seeded ``numpy.random.Generator``.
"""

from __future__ import annotations

from .bootstrap import bootstrap_ratings, bootstrap_samples, rating_table, shared_ranks, summarize_bootstrap
from .bt import compute_bt
from .elo import compute_online_elo
from .leaderboard import bt_leaderboard
from .matrices import battle_count_matrix, predicted_win_rate_matrix, win_rate_matrix
from .resample import bootstrap_cells
from .style import STYLE_CONTROL_ELEMENTS_V1, compute_bt_style
from .style_board import style_leaderboard

__all__ = [
    "STYLE_CONTROL_ELEMENTS_V1",
    "battle_count_matrix",
    "bootstrap_cells",
    "bootstrap_ratings",
    "bootstrap_samples",
    "bt_leaderboard",
    "compute_bt",
    "compute_bt_style",
    "compute_online_elo",
    "predicted_win_rate_matrix",
    "rating_table",
    "shared_ranks",
    "style_leaderboard",
    "summarize_bootstrap",
    "win_rate_matrix",
]
