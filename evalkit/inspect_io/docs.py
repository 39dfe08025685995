"""Which evalkit doc an Inspect sample is, for ``--task-map INSPECT_TASK=EVALKIT_TASK``.

Inspect samples carry their dataset's ids (often 1, 2, ... in file order) and the raw input; an
evalkit doc carries its query (the input inside evalkit's template). A sample is a doc when the one
text contains the other and the target agrees (a letter or the text of the gold choice, or a target
found in the doc's reference answer). The doc at the sample's position is tried first (id k: docs
k-1 and k), then a doc whose query is the input, then the one doc whose query contains it.
"""
from __future__ import annotations

import string
from typing import Optional


def _targets(target) -> list[str]:
    vals = target if isinstance(target, (list, tuple)) else [target]
    return [str(v).strip() for v in vals if v is not None and str(v).strip()]


def target_agrees(doc, target) -> bool:
    ts = _targets(target)
    if not ts:
        return True
    if doc.choices and doc.gold is not None:
        gold = doc.gold
        gold_text = str(doc.choices[gold]).strip() if 0 <= gold < len(doc.choices) else None
        for t in ts:
            if len(t) == 1 and t.upper() in string.ascii_uppercase:
                if string.ascii_uppercase.index(t.upper()) == gold:
                    return True
            elif t.isdigit() and int(t) == gold or t == gold_text:
                return True
        return False
    if doc.target is None:
        return True
    ref = doc.target if isinstance(doc.target, (list, tuple)) else [doc.target]
    ref_text = "\n".join(str(r) for r in ref)
    return any(t in ref_text for t in ts)


def same_item(doc, text: str, target) -> bool:
    q, x = (doc.query or "").strip(), (text or "").strip()
    if not q or not x:
        return False
    return (q in x or x in q) and target_agrees(doc, target)


class DocFinder:
    """Finds the evalkit doc of each Inspect sample: (position, doc), or None when there is none."""

    def __init__(self, docs: list):
        self.docs = docs
        self.by_query: dict = {}
        for i, d in enumerate(docs):
            self.by_query.setdefault((d.query or "").strip(), []).append(i)

    def find(self, sample_id, text: str, target) -> Optional[tuple]:
        k = sample_id if isinstance(sample_id, int) else int(sample_id) if str(sample_id).isdigit() else None
        if k is not None:
            for i in (k - 1, k):
                if 0 <= i < len(self.docs) and same_item(self.docs[i], text, target):
                    return i, self.docs[i]
        exact = [i for i in self.by_query.get((text or "").strip(), []) if target_agrees(self.docs[i], target)]
        if len(exact) == 1:
            return exact[0], self.docs[exact[0]]
        hits = [i for i, d in enumerate(self.docs) if same_item(d, text, target)]
        return (hits[0], self.docs[hits[0]]) if len(hits) == 1 else None
