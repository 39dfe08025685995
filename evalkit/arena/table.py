"""Battles as columns: one row per battle, model indices and outcome codes in numpy arrays.

``BattleTable`` is what the rating code works on.  It holds no per-battle Python
objects: ``a``/``b`` are int32 indices into ``models`` and ``winner`` is an int8
code into ``WINNERS`` (0 ``model_a``, 1 ``model_b``, 2 ``tie``, 3 ``tie
(bothbad)``), so ten million battles take ~90 MB.  ``models`` is in order of
first appearance (``model_a`` then ``model_b`` of battle 0, then battle 1, ...),
the order every rating function uses, which keeps fits bit-for-bit the same
whichever way the battles were read.  Tables come from ``as_table`` (Battle
objects, mappings or a DataFrame) or from ``evalkit.arena.stream`` (files).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .battles import WINNERS, Battle

__all__ = ["BattleTable", "BattlesLike", "WINNER_CODES", "as_table", "columns"]

BattlesLike = Iterable[Battle | Mapping[str, Any]] | pd.DataFrame

#: ``WINNERS[code]`` is the winner string of a code in ``BattleTable.winner``.
WINNER_CODES: dict[str, int] = {w: i for i, w in enumerate(WINNERS)}
_WINNER_SET = frozenset(WINNERS)


def columns(battles: BattlesLike) -> tuple[list[str], list[str], list[str]]:
    """The ``model_a``, ``model_b`` and ``winner`` columns as lists, validating
    winners (and self-battles) for inputs that bypassed ``Battle``."""
    if isinstance(battles, pd.DataFrame):
        missing = [c for c in ("model_a", "model_b", "winner") if c not in battles.columns]
        if missing:
            raise ValueError(f"battles DataFrame lacks column(s) {missing}")
        a = battles["model_a"].tolist()
        b = battles["model_b"].tolist()
        w = battles["winner"].tolist()
    else:
        a, b, w = [], [], []
        for i, x in enumerate(battles):
            if isinstance(x, Battle):
                a.append(x.model_a), b.append(x.model_b), w.append(x.winner)
            elif isinstance(x, Mapping):
                try:
                    a.append(x["model_a"]), b.append(x["model_b"]), w.append(x["winner"])
                except KeyError as err:
                    raise ValueError(f"battle #{i}: missing field {err.args[0]!r}") from None
            else:
                raise TypeError(f"battle #{i}: expected Battle or mapping, got {type(x).__name__}")
    for i, (ma, mb, win) in enumerate(zip(a, b, w)):
        if win not in _WINNER_SET:
            raise ValueError(
                f"battle #{i}: field 'winner': invalid value {win!r}; expected one of {list(WINNERS)}"
            )
        if ma == mb:
            raise ValueError(f"battle #{i}: model {ma!r} battles itself")
    return a, b, w


@dataclass(frozen=True, eq=False)
class BattleTable:
    """Battles in columns.  ``judges`` counts battles per judge (``"unknown"`` when
    unset); ``paths``, ``digests`` (SHA-256 per file) and ``fingerprint`` are set
    when the table was read from files (see ``evalkit.arena.stream``)."""

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    winner: np.ndarray
    judges: dict[str, int] = field(default_factory=dict)
    paths: tuple[str, ...] = ()
    fingerprint: str | None = None
    digests: dict[str, str] = field(default_factory=dict)
    style: np.ndarray | None = None             # n x k style ratios (read_battle_table(..., style=...))
    style_elements: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.a)
        if not (len(self.b) == n == len(self.winner)):
            raise ValueError("a, b and winner must have one entry per battle")
        if self.style is not None and len(self.style) != n:
            raise ValueError("style must have one row per battle")

    def __len__(self) -> int:
        return int(len(self.a))

    @classmethod
    def from_columns(cls, a: list[str], b: list[str], w: list[str], **kw: Any) -> BattleTable:
        """A table from validated name/winner lists (see ``columns``)."""
        models = list(dict.fromkeys(m for pair in zip(a, b) for m in pair))
        index = {m: i for i, m in enumerate(models)}
        n = len(a)
        return cls(
            tuple(models),
            np.fromiter((index[m] for m in a), dtype=np.int32, count=n),
            np.fromiter((index[m] for m in b), dtype=np.int32, count=n),
            np.fromiter((WINNER_CODES[x] for x in w), dtype=np.int8, count=n),
            **kw,
        )

    def same_battles(self, other: BattleTable) -> bool:
        """Same models in the same order and the same battles in the same order."""
        return (self.models == other.models and np.array_equal(self.a, other.a)
                and np.array_equal(self.b, other.b) and np.array_equal(self.winner, other.winner))

    def to_battles(self) -> list[Battle]:
        """``Battle`` objects (model and winner only); for the order-dependent online Elo."""
        names, wins = self.models, WINNERS
        return [Battle(None, names[i], names[j], wins[k])
                for i, j, k in zip(self.a.tolist(), self.b.tolist(), self.winner.tolist())]

    def outcomes(self) -> dict[str, int]:
        """Battles per winner value (only the values that occur), in ``WINNERS`` order."""
        counts = np.bincount(self.winner, minlength=len(WINNERS))
        return {w: int(c) for w, c in zip(WINNERS, counts) if c}

    def tallies(self) -> pd.DataFrame:
        """Per model ``wins``, ``losses``, ``ties`` and ``n_battles`` (either side)."""
        m = len(self.models)
        wins, losses, ties = (np.zeros(m, dtype=np.int64) for _ in range(3))
        for lo in range(0, len(self), 1 << 20):          # a slice at a time: bounded temporaries
            a, b, w = (x[lo:lo + (1 << 20)] for x in (self.a, self.b, self.winner))
            a_won, b_won = w == 0, w == 1
            tie = ~(a_won | b_won)
            wins += np.bincount(a[a_won], minlength=m) + np.bincount(b[b_won], minlength=m)
            losses += np.bincount(b[a_won], minlength=m) + np.bincount(a[b_won], minlength=m)
            ties += np.bincount(a[tie], minlength=m) + np.bincount(b[tie], minlength=m)
        out = pd.DataFrame({"wins": wins, "losses": losses, "ties": ties},
                           index=pd.Index(self.models, name="model")).astype(np.int64)
        out["n_battles"] = out.sum(axis=1)
        return out


def as_table(battles: BattlesLike | BattleTable) -> BattleTable:
    """Any accepted battle input as a ``BattleTable`` (a table is returned as is)."""
    if isinstance(battles, BattleTable):
        return battles
    items = battles if isinstance(battles, pd.DataFrame) else list(battles)
    judges: dict[str, int] = {}
    if not isinstance(items, pd.DataFrame):
        for x in items:
            if isinstance(x, Battle):
                j = x.judge or "unknown"
                judges[j] = judges.get(j, 0) + 1
    return BattleTable.from_columns(*columns(items), judges=judges)
