"""Which rows of a long ranking a page shows (no Streamlit): the rows whose name contains the search
text (case-insensitive), one page of ``size`` of them in the ranking's own order, and the pinned rows
on top whatever the page or the search. Positions index the full order, so a shown row keeps its
global rank."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

from .board import Leaderboard

SIZES = (10, 25, 50, 100)
DEFAULT_SIZE = 25
PIN = "📌"


@dataclass(frozen=True)
class Window:
    rows: list            # positions into the full order: pinned first, then the page's other rows
    pinned: list          # positions of the pinned rows (a subset of ``rows``)
    start: int            # the page's first and last match, 1-based (0, 0 when nothing matches)
    stop: int
    matches: int          # rows that match the search
    total: int            # rows in the full order
    page: int             # 1-based, within 1..pages
    pages: int

    def caption(self, search: str = "") -> str:
        what = f" matching '{search}'" if search else ""
        of = f"{self.matches:,}{what}" + (f" (of {self.total:,})" if self.matches != self.total else "")
        shown = f"rows {self.start:,}–{self.stop:,} of {of}" if self.matches else f"no rows{what}"
        return shown + (f" · {len(self.pinned)} pinned {PIN} on top" if self.pinned else "")


def window(names: Sequence[str], size: int, page: int, search: str = "", pinned: Sequence[str] = (),
           keys: Optional[Sequence[str]] = None) -> Window:
    """The rows of ``names`` (in order) a page shows. ``search`` matches ``names``; ``pinned`` matches
    ``keys`` (default ``names``: the task view pins by model while its names can carry a run id)."""
    keys = list(names if keys is None else keys)
    needle = (search or "").strip().lower()
    matches = [i for i, n in enumerate(names) if needle in str(n).lower()] if needle else list(range(len(names)))
    size = max(1, int(size))
    pages = max(1, -(-len(matches) // size))
    page = min(max(1, int(page)), pages)
    lo = (page - 1) * size
    on_page = matches[lo:lo + size]
    wanted = set(pinned or ())
    pins = [i for i, k in enumerate(keys) if k in wanted]
    pin_set = set(pins)
    return Window(pins + [i for i in on_page if i not in pin_set], pins, lo + 1 if on_page else 0,
                  lo + len(on_page), len(matches), len(names), page, pages)


def page_label(page: int, size: int, matches: int) -> str:
    """``rows 26–50`` for page 2 of 25 rows."""
    lo = (page - 1) * size + 1
    return f"rows {lo:,}–{min(matches, lo + size - 1):,}"


def board_page(lb: Leaderboard, rows: Sequence[int]) -> Leaderboard:
    """``lb`` cut to the rows at ``rows`` (positions in ``lb.entries``), in that order; ranks, the
    overall and every figure stay those of the whole board."""
    rows = list(rows)
    entries = [lb.entries[i] for i in rows]
    return replace(lb, display=lb.display.iloc[rows].reset_index(drop=True), values=lb.values.loc[entries],
                   ranks=lb.ranks.loc[entries], cells=lb.cells[lb.cells["entry"].isin(entries)],
                   grid=lb.grid.iloc[rows].reset_index(drop=True), entries=entries,
                   ci_low=lb.ci_low.loc[entries], ci_high=lb.ci_high.loc[entries])
