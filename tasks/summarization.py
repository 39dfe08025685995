"""Abstractive summarization: XSum (one sentence), CNN/DailyMail (three sentences) and a generic
``summarization`` task, scored with ROUGE-1/2/L/Lsum.

Prompts follow HELM's: ``###\\nArticle: <document>\\n\\nSummarize the above article in N sentence(s).\\n``,
the summary right after, stopping at ``###`` (which would open the next example); zero-shot by
default. Chat models get the same instruction as a user turn, few-shot examples as earlier turns.

Scores: rouge-score with Porter stemming, F-measure per sample (``evalkit.scoring.text_metrics``), reported
as the mean with the analytic stderr. ``rougeLsum`` splits texts into sentences on newlines, as the
reference implementation expects: CNN/DM highlights are one sentence per line; outputs are scored
as generated (stripped), never re-split.

Data: the hub datasets (EdinburghNLP/xsum, abisee/cnn_dailymail 3.0.0) or local files in their
layout (XSum ``document``/``summary``/``id``; CNN/DM ``article``/``highlights``/``id``), as
JSONL/JSON/CSV/Parquet or a .zip holding one such file. The generic task takes any records with a
``document``/``article``/``text``/``source`` field and a ``summary``/``highlights``/``reference``/
``target`` field (``--task-args summarization:sentences=N``), or plain references for ``evalkit score``.
"""
from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import ClassVar

from evalkit.tasks.translation import (
    ReferenceTextTask,
    first_field,
    read_records_or_references,
    references_of,
)

from evalkit.taskapi.data import DataError, DataSource, Provenance, Record
from evalkit.scoring.metric import Metric
from evalkit.scoring.text_metrics import ROUGE_TYPES, RougeMetrics, as_references
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, Scored, register_task

DOCUMENT_FIELDS = ("document", "article", "text", "source")
SUMMARY_FIELDS = ("summary", "highlights", "reference", "references", "target")


def read_zip(path: Path):
    """Records from the one .jsonl/.json/.csv file inside a .zip (e.g. a CNN/DM sample)."""
    with zipfile.ZipFile(path) as zf:
        members = [m for m in zf.namelist() if m.lower().endswith((".jsonl", ".json", ".csv")) and not m.startswith("__")]
        if len(members) != 1:
            raise DataError(f"{path}: expected exactly one .jsonl/.json/.csv file inside, found {members or 'none'}")
        member = members[0]
        src = f"{path}!{member}"
        with zf.open(member) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            if member.lower().endswith(".csv"):
                reader = csv.DictReader(text)
                rows = [(dict(row), reader.line_num) for row in reader]
            elif member.lower().endswith(".jsonl"):
                rows = [(json.loads(line), i) for i, line in enumerate(text, 1) if line.strip()]
            else:
                rows = [(r, i) for i, r in enumerate(json.load(text), 1)]
    return [Record(row, Provenance(src, line)) for row, line in rows]


def read_summaries(path: Path, split: str):
    return read_records_or_references(path, split, extra_readers=((".zip", read_zip),))


class SummarizationTask(ReferenceTextTask):
    sentences: ClassVar[int] = 1
    gen_params = GenParams(max_tokens=128, temperature=0.0, stop=("###",))
    target_delimiter = ""
    fewshot_delimiter = "\n\n"
    #: ROUGE F-measures per sample, reported as their means
    metrics = tuple(Metric(t) for t in ROUGE_TYPES)

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.n_sentences = int(options.get("sentences", self.sentences))
        self.rouge = RougeMetrics(ROUGE_TYPES, use_stemmer=True)

    def record_to_doc(self, record, index):
        document = first_field(record, DOCUMENT_FIELDS, required=False)
        refs = references_of(first_field(record, SUMMARY_FIELDS), SUMMARY_FIELDS[0])
        doc_id = str(record.get("id") or index)
        return Doc(id=doc_id, query=document or "", target=refs, fewshot_target=refs[0],
                   meta={"has_input": document is not None})

    def _ask(self) -> str:
        n = self.n_sentences
        return f"Summarize the above article in {n} sentence{'s' if n != 1 else ''}."

    def doc_to_text(self, doc):
        return f"###\nArticle: {doc.query}\n\n{self._ask()}\n"

    def messages(self, doc, ctx):
        k = self.num_fewshot if ctx.num_fewshot is None else ctx.num_fewshot
        msgs = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        for ex in self.fewshot_examples(doc, k, ctx):
            msgs += [{"role": "user", "content": f"Article: {ex.query}\n\n{self._ask()}"},
                     {"role": "assistant", "content": self.doc_to_target(ex)}]
        return msgs + [{"role": "user", "content": f"Article: {doc.query}\n\n{self._ask()}"}]

    def score_text(self, doc, text):
        summary = text.split("###")[0].strip()
        refs = as_references(doc.target)
        return Scored(self.rouge.scores(summary, refs), extracted=summary, target=refs)


@register_task
class XSum(SummarizationTask):
    name = "xsum"
    description = "XSum one-sentence news summaries (BBC): ROUGE-1/2/L/Lsum F (rouge-score, stemmed), mean ± stderr"
    version = "1"
    dataset = DataSource(hub_path="EdinburghNLP/xsum", local_reader=read_summaries)
    fewshot_split = "validation"
    sentences = 1


@register_task
class CNNDailyMail(SummarizationTask):
    name = "cnn_dailymail"
    description = "CNN/DailyMail 3.0.0 highlights (3 sentences): ROUGE-1/2/L/Lsum F (rouge-score, stemmed)"
    version = "1"
    dataset = DataSource(hub_path="abisee/cnn_dailymail", hub_name="3.0.0", local_reader=read_summaries)
    fewshot_split = "validation"
    sentences = 3
    gen_params = GenParams(max_tokens=192, temperature=0.0, stop=("###",))


@register_task
class Summarization(SummarizationTask):
    name = "summarization"
    description = ("Any summarization data (--data summarization=FILE; records with document/summary, or plain "
                   "references for `evalkit score`): ROUGE-1/2/L/Lsum")
    version = "1"
    dataset = DataSource(local_reader=read_summaries)
    fewshot_split = "test"
