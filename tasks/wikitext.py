"""WikiText-2 document-level perplexity, defined as lm-eval defines it.

Documents are split as the hub dataset ``EleutherAI/wikitext_document_level`` splits the raw file
(a new page at each top-level `` = Title = `` heading). Each document is scored with a rolling
loglikelihood over its detokenized text; word and byte counts come from the original page text.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from evalkit.taskapi.data import DataError, DataSource, Provenance, Record, require
from evalkit.scoring.metric import Metric
from evalkit.taskapi.task import Doc, PerplexityTask, Scored, register_task

_SPLIT_FILES = {"test": "test", "validation": "valid", "train": "train"}


def split_pages(text: str) -> list[str]:
    """Pages of a raw WikiText file, exactly as the hub dataset script yields them."""
    pages, current = [], []
    lines = text.split("\n")
    for line in lines:
        rline = line.replace("= = =", "===").replace("= =", "==").strip()
        if rline.startswith("= ") and rline.strip().endswith(" ="):
            page = "\n".join(current)
            if page.strip():
                pages.append(page)
            current = []
        current.append(line)
    pages.append("\n".join(current))
    return pages


def read_raw_wikitext(path: Path, split: str):
    if path.is_dir():
        name = f"wiki.{_SPLIT_FILES.get(split, split)}.raw"
        cands = [path / name, path / "wikitext-2-raw" / name]
        found = next((c for c in cands if c.is_file()), None)
        if found is None:
            raise DataError(f"{path}: no {name} (looked in {', '.join(str(c) for c in cands)})")
        path = found
    text = path.read_text(encoding="utf-8")
    for i, page in enumerate(split_pages(text), 1):
        yield Record({"page": page}, Provenance(str(path), i))


def detokenize(page: str) -> str:
    """lm-eval's wikitext_detokenizer."""
    s = page.replace("s '", "s'")
    s = re.sub(r"/' [0-9]/", r"/'[0-9]/", s)
    s = s.replace(" @-@ ", "-").replace(" @,@ ", ",").replace(" @.@ ", ".")
    for p in (":", ";", ".", "!", "?", ","):
        s = s.replace(f" {p} ", f"{p} ")
    s = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", s)
    s = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", s)
    s = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", s)
    s = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', s)
    s = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", s)
    s = s.replace("= = = =", "====").replace("= = =", "===").replace("= =", "==")
    s = s.replace(" " + chr(176) + " ", chr(176))
    s = s.replace(" \n", "\n").replace("\n ", "\n")
    s = s.replace(" N ", " 1 ").replace(" 's", "'s")
    return s


def _word_perplexity(samples):
    return math.exp(-sum(s.extra["loglikelihood"] for s in samples) / sum(s.extra["words"] for s in samples))


def _byte_perplexity(samples):
    return math.exp(-sum(s.extra["loglikelihood"] for s in samples) / sum(s.extra["bytes"] for s in samples))


def _bits_per_byte(samples):
    return -sum(s.extra["loglikelihood"] for s in samples) / sum(s.extra["bytes"] for s in samples) / math.log(2)


@register_task
class WikiText(PerplexityTask):
    name = "wikitext"
    description = "WikiText-2 (raw) document-level perplexity: word/byte perplexity, bits per byte (lm-eval definitions)"
    version = "1"
    dataset = DataSource(hub_path="EleutherAI/wikitext_document_level", hub_name="wikitext-2-raw-v1",
                         local_reader=read_raw_wikitext)
    metrics = (Metric("word_perplexity", higher_is_better=False, level="corpus", compute=_word_perplexity),
               Metric("byte_perplexity", higher_is_better=False, level="corpus", compute=_byte_perplexity),
               Metric("bits_per_byte", higher_is_better=False, level="corpus", compute=_bits_per_byte))

    def record_to_doc(self, record, index):
        page = require(record, "page")
        return Doc(id=str(index), query=detokenize(page), target=None,
                   meta={"words": len(re.split(r"\s+", page)), "bytes": len(page.encode("utf-8"))})

    def rolling_text(self, doc):
        return doc.query

    def score(self, doc, responses, ctx):
        ll = float(responses[0])
        return Scored({}, target=None,
                      extra={"loglikelihood": ll, "words": doc.meta["words"], "bytes": doc.meta["bytes"]})
