"""The record's two content hashes of a task, computed here and nowhere else: the dataset
fingerprint (which docs, by id and content) and the prompt hash (what the model was shown). Both
read the sample rows, so an evaluation, a rescore, a merge of shards, a judge run and an imported
lm-eval run of the same docs and prompts carry the same hashes."""
from __future__ import annotations

from typing import Iterable

from evalkit.util.hashing import content_hash


def dataset_fingerprint(rows: Iterable[dict]) -> str:
    return content_hash(sorted((r["doc_id"], r["doc_hash"]) for r in rows))


def prompt_hash(rows: Iterable[dict]) -> str:
    return content_hash([r["prompt_hash"] for r in rows])
