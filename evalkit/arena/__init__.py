"""Arena: pairwise battles between models and their Elo / Bradley–Terry ratings.

``battles`` holds the record type and its JSONL/JSON loaders; ``ratings`` the
FastChat/LMArena-compatible rating, bootstrap and matrix functions.
"""

from .battles import (
    TIE_WINNERS,
    WINNERS,
    Battle,
    BattleFormatError,
    load_battles,
    write_battles,
)
from .ratings import (
    STYLE_CONTROL_ELEMENTS_V1,
    battle_count_matrix,
    bootstrap_ratings,
    bootstrap_samples,
    compute_bt,
    compute_bt_style,
    compute_online_elo,
    predicted_win_rate_matrix,
    rating_table,
    shared_ranks,
    summarize_bootstrap,
    win_rate_matrix,
)

__all__ = [
    "STYLE_CONTROL_ELEMENTS_V1",
    "TIE_WINNERS",
    "WINNERS",
    "Battle",
    "BattleFormatError",
    "battle_count_matrix",
    "bootstrap_ratings",
    "bootstrap_samples",
    "compute_bt",
    "compute_bt_style",
    "compute_online_elo",
    "load_battles",
    "predicted_win_rate_matrix",
    "rating_table",
    "shared_ranks",
    "summarize_bootstrap",
    "win_rate_matrix",
    "write_battles",
]
