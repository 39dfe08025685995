"""The typed values of a record: a metric value with its uncertainty, and a sample row.

Both are ``dict`` subclasses with typed attributes, so a value is the JSON the record holds (it
serialises, compares and indexes as before: ``metrics["acc"]["value"]`` keeps working for every
reader written against the raw JSON) while readers use ``metrics["acc"].value``, ``.ci_low``,
``row.doc_id``. ``MetricValue.check`` and ``SampleRow.check`` validate what a file says and name the
field that is wrong; ``migrate`` in ``evalkit.records.record`` brings older shapes up to date first.
"""
from __future__ import annotations

import math
from typing import Any, Optional

METRIC_FIELDS = ("value", "stderr", "ci_low", "ci_high", "n", "kind", "higher_is_better")
METRIC_DEFAULTS = {"stderr": None, "ci_low": None, "ci_high": None, "n": 0, "kind": "mean", "higher_is_better": True}


def _finite(x):
    return None if isinstance(x, float) and not math.isfinite(x) else x


def _number(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


class MetricValue(dict):
    """One reported number: ``value`` with its ``stderr`` and 95% interval (``ci_low``, ``ci_high``),
    over ``n`` items, how it was aggregated (``kind``: mean, corpus, macro) and its direction. A
    value that is not finite (no items) is ``null`` in the record (``mv["value"] is None``) and NaN
    as a number (``mv.value``)."""

    def __init__(self, value, stderr=None, ci_low=None, ci_high=None, n=0, kind="mean", higher_is_better=True,
                 **other):
        super().__init__(value=_finite(value), stderr=_finite(stderr), ci_low=_finite(ci_low),
                         ci_high=_finite(ci_high), n=n, kind=kind, higher_is_better=higher_is_better, **other)

    value: float = property(lambda self: math.nan if self["value"] is None else self["value"])
    stderr: Optional[float] = property(lambda self: self["stderr"])
    ci_low: Optional[float] = property(lambda self: self["ci_low"])
    ci_high: Optional[float] = property(lambda self: self["ci_high"])
    n: int = property(lambda self: self["n"])
    kind: str = property(lambda self: self["kind"])
    higher_is_better: bool = property(lambda self: self["higher_is_better"])

    def to_dict(self) -> dict:
        return dict(self)

    @classmethod
    def check(cls, d: Any, where: str) -> "MetricValue":
        """A metric value as a record holds it, checked field by field (``ValueError`` naming the field)."""
        if isinstance(d, MetricValue):
            return d
        if not isinstance(d, dict):
            raise ValueError(f"{where}: a metric value must be an object, got {type(d).__name__}")
        if "value" not in d:
            raise ValueError(f"{where}: field 'value' is missing")
        for k in ("value", "stderr", "ci_low", "ci_high"):
            if not _number(d.get(k)):
                raise ValueError(f"{where}.{k}: expected a number or null, got {d[k]!r}")
        n = d.get("n", 0)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{where}.n: expected a count (integer >= 0), got {n!r}")
        if not isinstance(d.get("kind", "mean"), str):
            raise ValueError(f"{where}.kind: expected a string, got {d['kind']!r}")
        if not isinstance(d.get("higher_is_better", True), bool):
            raise ValueError(f"{where}.higher_is_better: expected true or false, got {d['higher_is_better']!r}")
        return cls(**{**METRIC_DEFAULTS, **d})


def metric_values(d: Any, where: str) -> dict[str, MetricValue]:
    """``{name: MetricValue}`` from a record's ``metrics`` object."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object of metric values, got {type(d).__name__}")
    return {k: MetricValue.check(v, f"{where}.{k}") for k, v in d.items()}


class SampleRow(dict):
    """One line of a samples file: ``doc_id``, ``doc_hash``, ``prompt``, ``responses``, ``target``,
    ``metrics`` (per-sample values), ``extracted``, ``extra``, ``prompt_hash`` and, in runs that
    were sharded or merged, ``doc_index``; other keys (``best_of_n``) are kept as they are."""

    doc_id: str = property(lambda self: self["doc_id"])
    doc_hash: str = property(lambda self: self.get("doc_hash", ""))
    prompt = property(lambda self: self.get("prompt"))
    responses: list = property(lambda self: self.get("responses", []))
    target = property(lambda self: self.get("target"))
    metrics: dict = property(lambda self: self.get("metrics", {}))
    extracted = property(lambda self: self.get("extracted"))
    extra: dict = property(lambda self: self.get("extra") or {})
    prompt_hash: str = property(lambda self: self.get("prompt_hash", ""))
    doc_index: Optional[int] = property(lambda self: self.get("doc_index"))

    @classmethod
    def check(cls, d: Any, where: str) -> "SampleRow":
        if not isinstance(d, dict):
            raise ValueError(f"{where}: a sample row must be an object, got {type(d).__name__}")
        if not isinstance(d.get("doc_id"), (str, int)) or isinstance(d.get("doc_id"), bool):
            raise ValueError(f"{where}: field 'doc_id' must be a string, got {d.get('doc_id')!r}")
        if not isinstance(d.get("metrics", {}), dict):
            raise ValueError(f"{where}: field 'metrics' must be an object")
        return cls(d)
