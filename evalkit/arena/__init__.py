"""Arena: pairwise battles between models and their Elo / Bradley–Terry ratings.

``battles`` holds the record type and its JSONL/JSON/parquet loaders; ``table``
the columnar form the ratings work on and ``stream`` its chunked file reader;
``ratings`` gathers the FastChat/LMArena-compatible rating, bootstrap and
matrix functions (each in its own module, see its docstring).
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
    bootstrap_cells,
    bootstrap_ratings,
    bootstrap_samples,
    bt_leaderboard,
    compute_bt,
    compute_bt_style,
    compute_online_elo,
    predicted_win_rate_matrix,
    rating_table,
    shared_ranks,
    style_leaderboard,
    summarize_bootstrap,
    win_rate_matrix,
)
from .stream import read_battle_table
from .table import BattleTable, as_table

__all__ = [
    "STYLE_CONTROL_ELEMENTS_V1",
    "TIE_WINNERS",
    "WINNERS",
    "Battle",
    "BattleFormatError",
    "BattleTable",
    "as_table",
    "battle_count_matrix",
    "bootstrap_cells",
    "bootstrap_ratings",
    "bootstrap_samples",
    "bt_leaderboard",
    "compute_bt",
    "compute_bt_style",
    "compute_online_elo",
    "load_battles",
    "predicted_win_rate_matrix",
    "rating_table",
    "read_battle_table",
    "shared_ranks",
    "style_leaderboard",
    "summarize_bootstrap",
    "win_rate_matrix",
    "write_battles",
]
