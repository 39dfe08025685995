"""Online (sequential) Elo, exactly FastChat's ``compute_elo``."""

from __future__ import annotations

from .bt import sorted_desc
from .table import BattlesLike, columns

__all__ = ["compute_online_elo"]


def compute_online_elo(
    battles: BattlesLike,
    K: float = 4,
    scale: float = 400,
    base: float = 10,
    init_rating: float = 1000,
) -> dict[str, float]:
    """Sequential Elo ratings, exactly FastChat's ``compute_elo``.

    Every model starts at ``init_rating``; battles are replayed **in the given
    order** and each moves both ratings by ``K * (score - expected)``, where a
    tie (either kind) scores 0.5.  The result therefore depends on the order
    of the battles (recent battles weigh more, and a reversed list gives other
    numbers); that is why LMArena switched to the order-free Bradley–Terry fit
    (``compute_bt``) and why bootstrapping online Elo (which also shuffles) is
    the only way to give it an uncertainty.  Returns ``{model: rating}``,
    highest first.
    """
    a, b, w = columns(battles)
    rating: dict[str, float] = {}
    for model_a, model_b, winner in zip(a, b, w):
        ra = rating.get(model_a, init_rating)
        rb = rating.get(model_b, init_rating)
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        sa = 1 if winner == "model_a" else 0 if winner == "model_b" else 0.5
        rating[model_a] = ra + K * (sa - ea)
        rating[model_b] = rb + K * (1 - sa - eb)
    return sorted_desc(rating)
