"""The conventions a retrieval figure depends on, explicit and recorded with every result.

The established tools disagree silently (verified, see README "Retrieval conventions"):

- gain: trec_eval's NDCG gain is the qrel value (``linear``); some papers and ranx's
  ``ndcg_burges`` use ``2**rel - 1`` (``exponential``). Only grades > 0 carry gain.
- relevance threshold: binary measures (hit, MRR, P, recall, MAP) count a doc relevant when its
  grade is >= ``rel_threshold`` (trec_eval's ``-l``, default 1); NDCG ignores it (as trec_eval).
- ties: ``trec`` ranks by score descending, then doc id descending (byte order), as trec_eval does
  whatever the rank column says; ``input`` keeps the run's own order among equal scores (stable).
- queries: ``judged`` averages over every query of the qrels, a query the run lacks scoring 0 (what
  a user expects: a retriever that returns nothing for a query failed it); ``run`` averages only
  over queries both in the run and the qrels (trec_eval without ``-c``). Queries of the run that the
  qrels lack are never scored (they are counted and reported).
- ``ignore_identical_ids``: drop a retrieved doc whose id equals the query id (BEIR's default).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

GAINS = ("linear", "exponential")
TIES = ("trec", "input")
QUERIES = ("judged", "run")
FAMILIES = ("hit", "mrr", "ndcg", "recall", "P", "map")
DEFAULT_KS = (1, 5, 10, 100)


@dataclass(frozen=True)
class Conventions:
    gain: str = "linear"
    rel_threshold: int = 1
    ties: str = "trec"
    queries: str = "judged"
    ignore_identical_ids: bool = False

    def __post_init__(self):
        for name, allowed in (("gain", GAINS), ("ties", TIES), ("queries", QUERIES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"retrieval convention {name}={getattr(self, name)!r}: expected one of "
                                 f"{', '.join(allowed)}")
        if not isinstance(self.rel_threshold, int) or self.rel_threshold < 1:
            raise ValueError(f"retrieval convention rel_threshold={self.rel_threshold!r}: expected an integer >= 1 "
                             "(unjudged documents count as grade 0, so a threshold <= 0 would make them relevant)")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_options(cls, options: dict) -> "Conventions":
        """From task options (strings from ``--task-args``); unknown keys are ignored here."""
        kw = {}
        for key in ("gain", "ties", "queries"):
            if key in options:
                kw[key] = str(options[key])
        if "rel_threshold" in options:
            try:
                kw["rel_threshold"] = int(options["rel_threshold"])
            except (TypeError, ValueError):
                raise ValueError(f"rel_threshold={options['rel_threshold']!r}: expected an integer >= 1") from None
        if "ignore_identical_ids" in options:
            v = options["ignore_identical_ids"]
            kw["ignore_identical_ids"] = v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")
        return cls(**kw)


def parse_ks(value) -> tuple[int, ...]:
    """Cutoffs from ``"1+5+10"``, ``"1,5"``, an int or a sequence."""
    if value is None or value == "":
        return DEFAULT_KS
    if isinstance(value, int):
        items = [value]
    elif isinstance(value, str):
        items = [x for x in value.replace("+", ",").replace(" ", ",").split(",") if x]
    else:
        items = list(value)
    try:
        ks = sorted({int(x) for x in items})
    except ValueError:
        raise ValueError(f"cutoffs {value!r}: expected integers such as 1+5+10") from None
    if not ks or ks[0] < 1:
        raise ValueError(f"cutoffs {value!r}: each must be >= 1")
    return tuple(ks)
