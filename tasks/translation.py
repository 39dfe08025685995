"""Machine translation: WMT14 en-de and WMT16 de-en (hub or local files), the four WMT22 General
directions over that test set's JSONL release, and a generic ``translation`` task.

Prompts. Base models get lm-eval's format, ``German phrase: <source>\\nEnglish phrase:`` with the
reference after a space, zero-shot by default (``--num-fewshot k``: k examples, a blank line apart),
stopping at the end of the line. Chat models (``--apply-chat-template``) get an instruction and the
few-shot examples as earlier user/assistant turns; the first non-empty line of the reply is the
hypothesis.

Scores. BLEU, chrF and TER through sacrebleu at corpus level (``evalkit.scoring.text_metrics``): each
sample keeps its sufficient statistics, the corpus score is computed from their sum, the CI from a
seeded segment bootstrap. sacrebleu's signature of each metric is in the run record
(``tasks[name].extra.sacrebleu.signatures``). For Chinese/Japanese/Korean targets BLEU uses
sacrebleu's language tokenizer, as its command line does.

Data. Records (JSONL/JSON/CSV/Parquet) either in the hub layout ``{"translation": {"de": ..., "en":
...}}`` or with a source field (``source``/``src``) and a reference field (``reference``/``ref``/
``target``/``tgt``/``tgr``; a string or a list for several references). The generic ``translation``
task also reads a plain text file as references only, one per line (for ``evalkit score``); its
languages come from ``--task-args translation:src_lang=en,tgt_lang=de``.

Options (``--task-args TASK:k=v``): ``mt_metrics=bleu+chrf+ter`` (which to compute),
``bleu_tokenize=13a``, ``chrf_word_order=2`` (chrF++), ``bootstrap=1000`` (replicates; 0: no CI),
``src_lang``/``tgt_lang`` (generic task).
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import ClassVar, Optional

from evalkit.taskapi.data import (
    DataError,
    DataSource,
    FieldError,
    Provenance,
    Record,
    read_records,
)
from evalkit.scoring.text_metrics import (
    BLEU_TOKENIZER_FOR,
    MT_METRICS,
    SacreBLEUMetrics,
    as_references,
    parse_metric_list,
)
from evalkit.taskapi.requests import GenParams
from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.task import Doc, GenerationTask, Scored, register_task

LANGUAGES = {"ar": "Arabic", "cs": "Czech", "de": "German", "en": "English", "es": "Spanish", "et": "Estonian",
             "fi": "Finnish", "fr": "French", "gu": "Gujarati", "hi": "Hindi", "it": "Italian", "ja": "Japanese",
             "kk": "Kazakh", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "nl": "Dutch", "pl": "Polish",
             "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "tr": "Turkish", "uk": "Ukrainian",
             "zh": "Chinese"}
SOURCE_FIELDS = ("source", "src")
REFERENCE_FIELDS = ("reference", "references", "ref", "refs", "target", "tgt", "tgr")
RECORD_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet")


# ---- data helpers (shared with tasks/summarization.py) ----

def first_field(record: dict, names: tuple, required: bool = True):
    """The value of the first of ``names`` present in ``record`` (FieldError naming them all if none)."""
    for n in names:
        if n in record and record[n] is not None:
            return record[n]
    if required:
        raise FieldError(names[0], f"is missing (also looked for {', '.join(repr(n) for n in names[1:])})")
    return None


def references_of(value, field: str) -> list[str]:
    refs = [value] if isinstance(value, str) else value
    if not isinstance(refs, (list, tuple)) or not refs or not all(isinstance(r, str) for r in refs):
        raise FieldError(field, "should be a string or a non-empty list of strings")
    return list(refs)


def is_record_file(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(s) or name.endswith(s + ".gz") for s in RECORD_SUFFIXES)


def read_lines(path: Path) -> list[str]:
    """One item per line, line endings removed (a final newline does not add an empty item)."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_records_or_references(path: Path, split: str, extra_readers=()):
    """Local data of the generic tasks: a records file, a folder with ``<split>.<ext>``, or a plain
    text file read as references only (one per line)."""
    if path.is_dir():
        for cand in sorted(path.glob(f"{split}.*")):
            if is_record_file(cand) or any(cand.name.endswith(ext) for ext, _ in extra_readers):
                return read_records_or_references(cand, split, extra_readers)
        raise DataError(f"{path}: no {split}.jsonl/.json/.csv/.parquet file in this folder (a file path instead of "
                        "a folder serves every split; few-shot examples then never include the doc itself)")
    for ext, reader in extra_readers:
        if path.name.lower().endswith(ext):
            return reader(path)
    if is_record_file(path):
        return read_records(path)
    return (Record({"reference": line}, Provenance(str(path), i)) for i, line in enumerate(read_lines(path), 1))


class ReferenceTextTask(GenerationTask):
    """What the text-generation tasks share: references as a list on ``doc.target``, the cleaned
    output on ``sample.extracted``, few-shot pools that never include the doc itself, and docs
    built from plain reference files for ``evalkit score --references``."""

    takes_references = True

    def fewshot_examples(self, doc, k, ctx):
        if k <= 0:
            return []
        pool = [d for d in self.fewshot_pool() if d.id != doc.id]
        if len(pool) < k:
            raise ValueError(f"task {self.name}: {k}-shot asked but the few-shot split has {len(pool)} examples")
        if self.fewshot_sampler == "first_n":
            return pool[:k]
        import random
        return random.Random(derive_seed(ctx.seed, self.name, "fewshot", doc.id)).sample(pool, k)

    def requests(self, doc, ctx):
        if not doc.meta.get("has_input", True):
            raise ValueError(f"task {self.name}: doc {doc.id} has references only, no input text: running a model "
                             "needs records with the input (see `evalkit tasks`); use `evalkit score` for saved outputs")
        return super().requests(doc, ctx)

    def docs_from_references(self, references: list[list[str]]) -> list[Doc]:
        """Docs for scoring saved outputs against references only (no input text)."""
        return [Doc(id=str(i), query="", target=list(refs), fewshot_target=refs[0], meta={"has_input": False})
                for i, refs in enumerate(references)]

    def metric_inputs(self, sample) -> tuple[str, list[str]]:
        return sample.extracted or "", as_references(sample.target)

    def sample_prompt(self, doc, ctx):
        return self.prompt_or_none(doc, ctx)

    def prompt_or_none(self, doc, ctx):
        """The prompt for the samples file (None for reference-only docs scored by `evalkit score`)."""
        return self.prompt_of(doc, ctx) if doc.meta.get("has_input", True) else None


# ---- translation ----

def lang_name(code: Optional[str]) -> Optional[str]:
    return LANGUAGES.get(code, code) if code else None


class TranslationTask(ReferenceTextTask):
    src_lang: ClassVar[Optional[str]] = None
    tgt_lang: ClassVar[Optional[str]] = None
    gen_params = GenParams(max_tokens=256, temperature=0.0, stop=("\n",))
    target_delimiter = " "
    fewshot_delimiter = "\n\n"
    bootstrap_replicates: ClassVar[int] = 1000

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.src = options.get("src_lang", self.src_lang)
        self.tgt = options.get("tgt_lang", self.tgt_lang)
        bleu, chrf = {}, {}
        tok = options.get("bleu_tokenize") or BLEU_TOKENIZER_FOR.get(self.tgt or "")
        if tok:
            bleu["tokenize"] = str(tok)
        if options.get("chrf_word_order") is not None:
            chrf["word_order"] = int(options["chrf_word_order"])
        names = parse_metric_list(options.get("mt_metrics", "+".join(MT_METRICS)), MT_METRICS)
        self.mt = SacreBLEUMetrics(names, bleu=bleu, chrf=chrf)
        self.replicates = int(options.get("bootstrap", self.bootstrap_replicates))
        # one computation (the summed sufficient statistics) gives every chosen metric, one bootstrap
        self.metrics = (self.mt.group(self.replicates),)

    # ---- data ----
    def record_to_doc(self, record, index):
        if isinstance(record.get("translation"), dict):
            pair = record["translation"]
            if self.src not in pair or self.tgt not in pair:
                raise FieldError("translation", f"has no {self.src!r}/{self.tgt!r} pair (has {sorted(pair)})")
            source, refs = pair[self.src], references_of(pair[self.tgt], "translation")
        else:
            source = first_field(record, SOURCE_FIELDS, required=False)
            refs = references_of(first_field(record, REFERENCE_FIELDS), "reference")
        if source is not None and not isinstance(source, str):
            raise FieldError("source", f"should be a string, got {type(source).__name__}")
        doc_id = str(record.get("id", index))
        return Doc(id=doc_id, query=source or "", target=refs, fewshot_target=refs[0],
                   meta={"has_input": source is not None})

    # ---- prompts ----
    def doc_to_text(self, doc):
        s, t = lang_name(self.src), lang_name(self.tgt)
        if s and t:
            return f"{s} phrase: {doc.query}\n{t} phrase:"
        return f"Source: {doc.query}\nTranslation:"

    def instruction_for(self, doc) -> str:
        s, t = lang_name(self.src), lang_name(self.tgt)
        direction = f" {s} text into {t}" if s and t else (f" text into {t}" if t else " text")
        return f"Translate the following{direction}. Reply with the translation only.\n\n{doc.query}"

    def messages(self, doc, ctx):
        k = self.num_fewshot if ctx.num_fewshot is None else ctx.num_fewshot
        msgs = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        for ex in self.fewshot_examples(doc, k, ctx):
            msgs += [{"role": "user", "content": self.instruction_for(ex)},
                     {"role": "assistant", "content": self.doc_to_target(ex)}]
        return msgs + [{"role": "user", "content": self.instruction_for(doc)}]

    def params(self, doc, ctx):
        p = super().params(doc, ctx)
        if ctx.apply_chat_template:  # a chat reply may open with a newline; take its first line instead
            p = replace(p, stop=tuple(s for s in p.stop if s != "\n"))
        return p

    # ---- scoring ----
    @staticmethod
    def hypothesis(text: str) -> str:
        """The first non-empty line, stripped."""
        return next((line.strip() for line in text.split("\n") if line.strip()), "")

    def score_text(self, doc, text):
        hyp = self.hypothesis(text)
        refs = as_references(doc.target)
        return Scored({}, extracted=hyp, target=refs, extra={"sacrebleu": self.mt.segment_stats(hyp, refs)})

    def run_extra(self, samples):
        extra = super().run_extra(samples)
        extra["sacrebleu"] = {
            "signatures": self.mt.signatures({len(as_references(s.target)) for s in samples} or {1}),
            "bootstrap": {"replicates": self.replicates, "resampled": "segments",
                          "ci": "percentiles 2.5/97.5 of the replicates", "stderr": "std of the replicates"},
        }
        return extra


def _wmt_source(hub: str, pair: str, test: str, valid: str) -> DataSource:
    return DataSource(hub_path=hub, hub_name=pair,
                      local_files={"test": ["test", test], "validation": ["validation", valid]})


@register_task
class WMT14EnDe(TranslationTask):
    name = "wmt14_en_de"
    description = "WMT14 English->German (newstest2014): sacrebleu BLEU/chrF/TER, corpus-level with bootstrap CI"
    version = "1"
    dataset = _wmt_source("wmt/wmt14", "de-en", "newstest2014", "newstest2013")
    fewshot_split = "validation"
    src_lang, tgt_lang = "en", "de"


@register_task
class WMT16DeEn(TranslationTask):
    name = "wmt16_de_en"
    description = "WMT16 German->English (newstest2016): sacrebleu BLEU/chrF/TER, corpus-level with bootstrap CI"
    version = "1"
    dataset = _wmt_source("wmt/wmt16", "de-en", "newstest2016", "newstest2015")
    fewshot_split = "validation"
    src_lang, tgt_lang = "de", "en"


def read_wmt22(path: Path, split: str, direction: str):
    """WMT22 General test set as JSONL rows ``{"src", "tgr" (the reference), "type": "en2de"}``
    (a file, or a folder holding test.jsonl); keeps one direction, ids ``<direction>-<n>``."""
    if path.is_dir():
        path = path / "test.jsonl"
        if not path.is_file():
            raise DataError(f"{path}: missing (expected the WMT22 General test.jsonl)")
    n = 0
    for rec in read_records(path):
        if rec.data.get("type") == direction:
            yield Record({**rec.data, "id": f"{direction}-{n}"}, rec.where)
            n += 1
    if n == 0:
        raise DataError(f"{path}: no rows with type {direction!r}")


def _wmt22(src: str, tgt: str):
    direction = f"{src}2{tgt}"

    class WMT22(TranslationTask):
        name = f"wmt22_{src}_{tgt}"
        description = (f"WMT22 General {lang_name(src)}->{lang_name(tgt)} (generaltest2022, ref A; local JSONL via "
                       f"--data): sacrebleu BLEU/chrF/TER with bootstrap CI")
        version = "1"
        dataset = DataSource(local_reader=partial(read_wmt22, direction=direction))
        eval_split = "test"
        fewshot_split = "test"  # no dev set in the release: examples are other test docs, never the doc itself
        src_lang, tgt_lang = src, tgt

    WMT22.__name__ = WMT22.__qualname__ = f"WMT22_{src}_{tgt}"
    return register_task(WMT22)


for _s, _t in (("en", "de"), ("de", "en"), ("en", "zh"), ("zh", "en")):
    _wmt22(_s, _t)


@register_task
class Translation(TranslationTask):
    name = "translation"
    description = ("Any translation data (--data translation=FILE; records with source/reference, or plain "
                   "references for `evalkit score`): sacrebleu BLEU/chrF/TER with bootstrap CI")
    version = "1"
    dataset = DataSource(local_reader=read_records_or_references)
    fewshot_split = "test"
