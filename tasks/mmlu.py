"""MMLU (Hendrycks et al. 2021): 57 subjects of four-choice questions, scored as lm-eval scores them.

``mmlu``: all 57 subjects as one task (doc ids ``<subject>-<index>``), 5-shot from the first five
dev questions of the same subject, lm-eval's default prompt ("The following are multiple choice
questions (with answers) about {subject}.\\n\\n{question}\\nA. ...\\nAnswer:"), scored by the
loglikelihood of " A"/" B"/" C"/" D" (acc and acc_norm; one-token choices that share a context are
scored from one forward pass by the backends). Reported overall as micro (over questions) and
macro (over subjects) averages, and per subject and per category (STEM, humanities, social
sciences, other: lm-eval's mapping), each with a CI.

``mmlu_<subject>``: one subject. ``mmlu_cot``: zero-shot chain of thought for chat models with
simple-evals' prompt, the last "Answer: X" counts; items whose first and last answers differ are
flagged.

Data: the hub dataset ``cais/mmlu``, or a local folder with ``dev/`` and ``test/`` (or ``data/dev``
...) holding ``<subject>_<split>.csv`` either as the original headerless CSVs (answer letter A-D)
or with a header row and a 0-3 answer index (a CSV export of the hub parquet).
"""
from __future__ import annotations

import csv
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from evalkit.scoring.choices import extract_answer_letter, macro_mean, simple_evals_prompt
from evalkit.taskapi.data import DataError, DataSource, FieldError, Provenance, Record, decoded_lines
from evalkit.taskapi.requests import GenParams
from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.task import Doc, GenerationTask, MultipleChoiceTask, Scored, register_task

# lm-eval's mapping (tasks/mmlu/_generate_configs.py), which follows the MMLU paper's categories.
SUBJECTS = {
    "abstract_algebra": "stem", "anatomy": "stem", "astronomy": "stem", "business_ethics": "other",
    "clinical_knowledge": "other", "college_biology": "stem", "college_chemistry": "stem",
    "college_computer_science": "stem", "college_mathematics": "stem", "college_medicine": "other",
    "college_physics": "stem", "computer_security": "stem", "conceptual_physics": "stem",
    "econometrics": "social_sciences", "electrical_engineering": "stem", "elementary_mathematics": "stem",
    "formal_logic": "humanities", "global_facts": "other", "high_school_biology": "stem",
    "high_school_chemistry": "stem", "high_school_computer_science": "stem",
    "high_school_european_history": "humanities", "high_school_geography": "social_sciences",
    "high_school_government_and_politics": "social_sciences", "high_school_macroeconomics": "social_sciences",
    "high_school_mathematics": "stem", "high_school_microeconomics": "social_sciences",
    "high_school_physics": "stem", "high_school_psychology": "social_sciences", "high_school_statistics": "stem",
    "high_school_us_history": "humanities", "high_school_world_history": "humanities", "human_aging": "other",
    "human_sexuality": "social_sciences", "international_law": "humanities", "jurisprudence": "humanities",
    "logical_fallacies": "humanities", "machine_learning": "stem", "management": "other", "marketing": "other",
    "medical_genetics": "other", "miscellaneous": "other", "moral_disputes": "humanities",
    "moral_scenarios": "humanities", "nutrition": "other", "philosophy": "humanities", "prehistory": "humanities",
    "professional_accounting": "other", "professional_law": "humanities", "professional_medicine": "other",
    "professional_psychology": "social_sciences", "public_relations": "social_sciences",
    "security_studies": "social_sciences", "sociology": "social_sciences", "us_foreign_policy": "social_sciences",
    "virology": "other", "world_religions": "humanities",
}
CATEGORIES = ("stem", "humanities", "social_sciences", "other")
LETTERS = ("A", "B", "C", "D")
_SPLIT_DIRS = {"test": "test", "dev": "dev", "validation": "val"}
_HEADER = ("question", "choice0", "choice1", "choice2", "choice3", "answer")


def _split_dir(root: Path, split: str) -> Path:
    name = _SPLIT_DIRS.get(split, split)
    for cand in (root / name, root / "data" / name):
        if cand.is_dir():
            return cand
    raise DataError(f"{root}: no {name}/ folder for MMLU split {split!r} "
                    f"(expected {root}/{name}/<subject>_{name}.csv as in the original data.tar)")


def read_mmlu_csv(path: Path, subject: str) -> Iterable[Record]:
    """One subject's CSV: headerless question,A,B,C,D,letter (original) or with a header row
    question,choice0..choice3,answer and a 0-3 index (hub export)."""
    # bytes are decoded line by line: a BOM is dropped, a byte that is not UTF-8 names its line
    reader = csv.reader(decoded_lines(path))
    first = True
    for row in _rows(reader, path):
        where = Provenance(str(path), reader.line_num)
        if first:
            first = False
            if tuple(c.strip().lower() for c in row) == _HEADER:
                continue
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != 6:
            raise DataError(f"{where}: expected 6 columns (question, 4 choices, answer), got {len(row)}")
        yield Record({"question": row[0], "choices": row[1:5], "answer": row[5], "subject": subject}, where)


def _rows(reader, path: Path):
    try:
        yield from reader
    except csv.Error as e:
        raise DataError(f"{path}:{reader.line_num}: unreadable CSV ({e})") from None


def local_reader(subjects=None):
    def read(path: Path, split: str) -> Iterable[Record]:
        if path.is_file():
            raise DataError(f"{path}: MMLU wants the data folder (with dev/ and test/), not one file")
        folder = _split_dir(path, split)
        name = _SPLIT_DIRS.get(split, split)
        wanted = subjects or sorted(SUBJECTS)
        missing = [s for s in wanted if not (folder / f"{s}_{name}.csv").is_file()]
        if missing:
            raise DataError(f"{folder}: missing {len(missing)} subject file(s), e.g. {missing[0]}_{name}.csv")
        for s in wanted:
            yield from read_mmlu_csv(folder / f"{s}_{name}.csv", s)
    return read


def parse_answer(value) -> int:
    """'B' -> 1, 1 -> 1, '1' -> 1 (original letters, hub / export indices)."""
    if isinstance(value, str):
        v = value.strip()
        if v.upper() in LETTERS:
            return LETTERS.index(v.upper())
        if v.isdigit():
            value = int(v)
    if isinstance(value, (int,)) and not isinstance(value, bool) and 0 <= value <= 3:
        return int(value)
    raise FieldError("answer", f"should be a letter A-D or an index 0-3, got {value!r}")


class _MMLUBase:
    """Loading and grouping shared by the loglikelihood and chain-of-thought variants."""

    subjects: tuple = tuple(sorted(SUBJECTS))

    def load_docs(self, split):
        self._counters = Counter()
        return super().load_docs(split)

    def record_to_doc(self, record, index):
        subject = record.get("subject") or (self.subjects[0] if len(self.subjects) == 1 else None)
        if subject not in SUBJECTS:
            raise FieldError("subject", f"is not an MMLU subject: {subject!r}")
        if subject not in self.subjects:
            return None
        question = record.get("question")
        choices = record.get("choices")
        if not isinstance(question, str):
            raise FieldError("question")
        if choices is None:
            raise FieldError("choices")
        choices = [str(c) for c in choices]
        if len(choices) != 4:
            raise FieldError("choices", f"should hold 4 options, got {len(choices)}")
        if "answer" not in record:
            raise FieldError("answer")
        gold = parse_answer(record["answer"])
        i = self._counters[subject]
        self._counters[subject] += 1
        return Doc(id=f"{subject}-{i}", query=question, choices=choices, gold=gold,
                   meta={"subject": subject, "category": SUBJECTS[subject]})

    def fewshot_examples(self, doc, k, ctx):
        if k <= 0:
            return []
        pool = [d for d in self.fewshot_pool() if d.meta["subject"] == doc.meta["subject"]]
        if len(pool) < k:
            raise ValueError(f"task {self.name}: {k}-shot asked but {doc.meta['subject']} has "
                             f"{len(pool)} dev questions")
        return pool[:k]  # lm-eval: sampler first_n

    # ---- reporting ----
    def _metric_names(self, samples):
        return [m for m in samples[0].metrics if m in self.grouped_metrics] if samples else []

    def breakdowns(self, samples):
        out = {}
        names = self._metric_names(samples)
        cats = defaultdict(list)
        for s in samples:
            cats[s.extra["category"]].append(s)
        for cat in CATEGORIES:
            if cat not in cats:
                continue
            group = {}
            for m in names:
                hib = self.higher_is_better_of(m)
                group[m] = mean_metric([s.metrics[m] for s in cats[cat]], hib)
                group[f"{m}_macro"] = macro_mean(_by(cats[cat], "subject", m), hib)
            out[f"category:{cat}"] = group
        subjects = defaultdict(list)
        for s in samples:
            subjects[s.extra["subject"]].append(s)
        for subject in sorted(subjects):
            out[f"subject:{subject}"] = {m: mean_metric([s.metrics[m] for s in subjects[subject]],
                                                        self.higher_is_better_of(m)) for m in names}
        return out


def macro_group(names: tuple) -> MetricGroup:
    """``<m>_macro`` for each of ``names``: the unweighted mean over subjects of the per-subject means,
    with the stratified analytic interval of ``macro_mean`` (no bootstrap); none without samples."""
    def estimate(samples):
        return {f"{m}_macro": macro_mean(_by(samples, "subject", m)) for m in names} if samples else {}
    return MetricGroup("macro", tuple(f"{m}_macro" for m in names), True, estimate=estimate)


def _by(samples, key, metric) -> dict:
    groups = defaultdict(list)
    for s in samples:
        groups[s.extra[key]].append(s.metrics[metric])
    return dict(groups)


def _mmlu_source(hub_name: str, subjects=None) -> DataSource:
    return DataSource(hub_path="cais/mmlu", hub_name=hub_name, hub_splits={"validation": "validation"},
                      local_reader=local_reader(subjects), data_dir="mmlu")


@register_task
class MMLU(_MMLUBase, MultipleChoiceTask):
    name = "mmlu"
    description = "MMLU, 57 subjects, 5-shot (first 5 dev of the subject), lm-eval prompt; acc/acc_norm micro+macro"
    version = "1"
    dataset = _mmlu_source("all")
    eval_split = "test"
    fewshot_split = "dev"
    num_fewshot = 5
    grouped_metrics = ("acc", "acc_norm")
    metrics = (Metric("acc"), Metric("acc_norm"), macro_group(grouped_metrics))

    def doc_to_text(self, doc):
        opts = "".join(f"\n{LETTERS[i]}. {c}" for i, c in enumerate(doc.choices))
        return f"{doc.query.strip()}{opts}\nAnswer:"

    def doc_to_target(self, doc):
        return LETTERS[doc.gold]

    def doc_to_choice_text(self, doc, i):
        return self.target_delimiter + LETTERS[i]

    def build_prompt_text(self, doc, ctx):
        subject = doc.meta["subject"].replace("_", " ")
        header = f"The following are multiple choice questions (with answers) about {subject}.\n\n"
        k = self.num_fewshot if ctx.num_fewshot is None else ctx.num_fewshot
        shots = self.fewshot_examples(doc, k, ctx)
        parts = [self.doc_to_text(ex) + self.target_delimiter + self.doc_to_target(ex) for ex in shots]
        return header + self.fewshot_delimiter.join(parts + [self.doc_to_text(doc)])

    def score(self, doc, responses, ctx):
        lls = [r.logprob for r in responses]
        pred = max(range(4), key=lambda i: lls[i])  # choices "A".."D" all have length 1: acc_norm == acc
        return Scored({"acc": float(pred == doc.gold), "acc_norm": float(pred == doc.gold)}, extracted=LETTERS[pred],
                      extra={"subject": doc.meta["subject"], "category": doc.meta["category"]}, target=LETTERS[doc.gold])


def _make_subject_task(subject: str) -> type:
    cls = type(f"MMLU_{subject}", (MMLU,), {
        "name": f"mmlu_{subject}",
        "description": f"MMLU {subject.replace('_', ' ')} ({SUBJECTS[subject]}), 5-shot, lm-eval prompt",
        "dataset": _mmlu_source(subject, [subject]),
        "subjects": (subject,),
        "__module__": __name__,
    })
    cls.__qualname__ = cls.__name__
    return register_task(cls)


for _subject in SUBJECTS:
    globals()[f"MMLU_{_subject}"] = _make_subject_task(_subject)


@register_task
class MMLUCoT(_MMLUBase, GenerationTask):
    name = "mmlu_cot"
    vote_kind = "letter"
    description = "MMLU zero-shot chain of thought (simple-evals prompt, for chat models); last 'Answer: X' counts"
    version = "1"
    dataset = _mmlu_source("all")
    eval_split = "test"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=2048, temperature=0.0)
    grouped_metrics = ("acc",)
    metrics = (Metric("acc"), Metric("first_last_differ", higher_is_better=False),
               Metric("no_answer", higher_is_better=False), macro_group(grouped_metrics))

    def build_prompt_text(self, doc, ctx):
        if ctx.num_fewshot:
            raise ValueError(f"task {self.name} is zero-shot (simple-evals' prompt)")
        return simple_evals_prompt(doc.query.strip(), doc.choices)

    def score_text(self, doc, text):
        ans = extract_answer_letter(text, "ABCD")
        metrics = {"acc": float(ans.letter == LETTERS[doc.gold]),
                   "first_last_differ": float(ans.first_last_differ), "no_answer": float(ans.letter is None)}
        return Scored(metrics, extracted=ans.to_dict(), target=LETTERS[doc.gold],
                      extra={"subject": doc.meta["subject"], "category": doc.meta["category"]})
