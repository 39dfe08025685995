"""LMArena's style features (``conv_metadata``) as numpy columns, from arrow batches or records.

Style control (``evalkit.arena.style_fit``) needs, per battle and per feature
``k`` (answer tokens, markdown headers, list items, bold spans), the covariate
``(x_a - x_b) / (x_a + x_b + 1)`` that FastChat's ``construct_style_matrices``
builds.  Each value is a number or an object whose values are summed
(``{"h1": 2, "h2": 0, ...}``), as FastChat's ``extract_style_feature``.  This
module computes those ratios chunk by chunk (float64, n x k), so a battle file
never becomes Python objects: ``arrow_ratios`` for a pyarrow batch (JSON Lines
or parquet), ``record_ratios`` for the exact line-by-line reader.  A value
that is missing or not a number, a null included (also inside an object:
FastChat's ``sum()`` fails on it too), makes the fast path give up (``BadValue``
row index) so the exact reader names file, line and field.  ``arrow_style_type``
is the ``conv_metadata`` type the JSON Lines fast path declares, so that pyarrow
parses the style keys only and skips every other field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["arrow_ratios", "arrow_style_type", "pair_elements", "record_ratios", "style_ratio"]


def pair_elements(elements: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(side A names, side B names)``: the first half of ``elements`` and the second."""
    if not elements or len(elements) % 2:
        raise ValueError("style elements must list the side-A features then the side-B features")
    k = len(elements) // 2
    return list(elements[:k]), list(elements[k:])


def style_ratio(raw_a: np.ndarray, raw_b: np.ndarray) -> np.ndarray:
    """``(x_a - x_b) / (x_a + x_b + 1)``, the arithmetic of ``compute_bt_style``."""
    return (raw_a - raw_b) / (raw_a + raw_b + 1.0)


class BadValue(Exception):
    """``args[0]``: the row of the batch whose value the fast path does not accept."""


def _numeric(arr) -> np.ndarray:
    """A numeric arrow array (or a struct of them, summed) as float64; raises ``BadValue``."""
    import pyarrow as pa

    t = arr.type
    if pa.types.is_struct(t):
        if arr.null_count:
            raise BadValue(int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0]))
        total = np.zeros(len(arr))
        for i in range(t.num_fields):
            child = arr.field(i)
            if child.null_count:      # a null, or a key this row lacks: the exact reader decides
                raise BadValue(int(np.flatnonzero(child.is_null().to_numpy(zero_copy_only=False))[0]))
            if not (pa.types.is_integer(child.type) or pa.types.is_floating(child.type)):
                raise BadValue(0)
            total += child.to_numpy(zero_copy_only=False).astype(np.float64)
        return total
    if not (pa.types.is_integer(t) or pa.types.is_floating(t)) or arr.null_count:
        nulls = arr.is_null().to_numpy(zero_copy_only=False)
        raise BadValue(int(np.flatnonzero(nulls)[0]) if nulls.any() else 0)
    return arr.to_numpy(zero_copy_only=False).astype(np.float64)


def arrow_ratios(batch, elements: Sequence[str]) -> np.ndarray:
    """n x k style ratios of one arrow batch with a ``conv_metadata`` struct column."""
    import pyarrow as pa

    if "conv_metadata" not in batch.schema.names:
        raise BadValue(0)
    meta = batch.column("conv_metadata")
    if isinstance(meta, pa.ChunkedArray):
        meta = meta.combine_chunks()
    if not pa.types.is_struct(meta.type):
        raise BadValue(0)
    if meta.null_count:
        raise BadValue(int(np.flatnonzero(meta.is_null().to_numpy(zero_copy_only=False))[0]))
    names = [meta.type.field(i).name for i in range(meta.type.num_fields)]
    side_a, side_b = pair_elements(elements)
    out = np.empty((len(meta), len(side_a)))
    for j, (ka, kb) in enumerate(zip(side_a, side_b)):
        if ka not in names or kb not in names:
            raise BadValue(0)
        out[:, j] = style_ratio(_numeric(meta.field(ka)), _numeric(meta.field(kb)))
    return out


def arrow_style_type(sample: Sequence[Any], elements: Sequence[str]):
    """The ``conv_metadata`` struct type holding only the style keys, from sample records (the
    first block): a number is float64, an object a struct of float64 over the keys the sample
    shows; ``None`` when a key is a number in one record and an object in another."""
    import pyarrow as pa

    kinds: dict[str, dict | None] = {}
    for rec in sample:
        meta = rec.get("conv_metadata") if isinstance(rec, Mapping) else None
        for key in elements if isinstance(meta, Mapping) else ():
            v = meta.get(key)
            if isinstance(v, Mapping):
                if kinds.get(key, {}) is None:
                    return None
                kinds.setdefault(key, {}).update(dict.fromkeys(v))
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                if kinds.setdefault(key, None) is not None:
                    return None
    return pa.struct([(key, pa.float64() if kinds.get(key) is None else
                       pa.struct([(str(c), pa.float64()) for c in kinds[key]])) for key in elements])


def _value(meta: Mapping[str, Any], key: str) -> float | None:
    v = meta.get(key)
    if isinstance(v, Mapping):
        vals = list(v.values())
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals):
            return None
        return float(sum(vals))
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def record_ratios(rec: Mapping[str, Any], elements: Sequence[str]) -> list[float] | str:
    """One record's k style ratios, or the name of the field that is missing or bad."""
    meta = rec.get("conv_metadata")
    if not isinstance(meta, Mapping):
        return "conv_metadata"
    side_a, side_b = pair_elements(elements)
    raw_a, raw_b = [_value(meta, k) for k in side_a], [_value(meta, k) for k in side_b]
    for ka, kb, va, vb in zip(side_a, side_b, raw_a, raw_b):
        if va is None or vb is None:
            return f"conv_metadata.{ka if va is None else kb}"
    return style_ratio(np.array(raw_a), np.array(raw_b)).tolist()
