r"""AIME 2024 and AIME 2025: 30 problems each (AIME I and II), integer answers 0-999.

Two recipes per year:

- ``aime24``, ``aime25``: the model-card recipe (DeepSeek-R1 and Qwen3/QwQ model cards sample at
  temperature 0.6, top_p 0.95 and average 16 or 64 samples; evalkit's default is 16): the problem
  followed by "Please reason step by step, and put your final answer within \boxed{}." as one user
  turn through the model's chat template (always; option ``chat=false`` sends the raw text to a
  base model), 32,768 new tokens. The headline is ``avg@16`` (the mean accuracy of one sample, with
  a 95% CI over the 30 problems); pass@k, pass^k and maj@16 come with it (``evalkit.scoring.repeats``).
  ``--repeats K`` (or ``--gen-kwargs n=K``) changes K; each sample is cached on its own.
  The answer is the last ``\boxed{...}`` (its last integer when it holds more than a number),
  else the last integer of the response; it is right when it equals the answer as an integer
  (``025`` = ``25``). Model cards grade with their own scripts (QwenLM/QwQ's ``eval/``, whose data
  ``../shared/data/aime/qwq`` is, reads the boxed answer); evalkit's integer check was not compared
  with those scripts here. Where a response has no ``\boxed{}`` evalkit falls back to its last
  integer, which a boxed-only grader would count as no answer.
- ``aime24_greedy``, ``aime25_greedy``: lm-eval's ``aime24``/``aime25`` (lm-eval 0.4.13,
  ``lm_eval/tasks/aime``): "Question: {problem}\nAnswer:", no chat template unless
  ``--apply-chat-template``, greedy, stop at "Question:", "</s>", "<|im_end|>", "<|eot_id|>",
  32,768 new tokens, one sample, and lm-eval's own answer check (``tasks/aime_lm_eval.py``, a port of
  its ``process_results``: ``$...$`` or last ``\boxed{}``, Hendrycks' ``strip_string``, string
  equality with the dataset's answer field as written, so ``\boxed{033}`` is wrong against ``33``).
  ``exact_match`` is lm-eval's verdict; ``exact_match_integer`` is evalkit's integer check beside it.
  Tested: the same requests and per-item verdicts as ``lm-eval:aime24`` (lm-eval's own config through
  evalkit's catalog) on the same responses, all 30 problems; aime25 shares the answer check.

Data: the hub datasets lm-eval reads (``Maxwell-Jia/AIME_2024``, split ``train``: ``ID, Problem,
Solution, Answer``; ``math-ai/aime25``, split ``test``: ``problem, answer`` as lm-eval's config
reads them), or local copies with ``--data aime24=PATH``: QwenLM/QwQ's
``eval/data/aime24.jsonl``/``aime25.jsonl`` (``prompt`` with Qwen's instruction suffix, which is
stripped; ``answer`` int; its aime24 copy lacks the ``[asy]`` figure code of two problems that
Qwen2.5-Math's copy has), Qwen2.5-Math's ``aime24/test.jsonl`` (``id, problem, answer`` as "025"),
or a folder holding one of them. Doc ids are the record's id field where it has one, else its
position (so sampling seeds, which derive from the doc id, differ between copies).
"""
from __future__ import annotations

import re
from typing import Optional

from evalkit.scoring.math_equivalence import boxed_answer
from evalkit.scoring.metric import Metric
from evalkit.taskapi.data import DataSource, FieldError
from evalkit.taskapi.chat_turn import ChatTurnTask
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, GenerationTask, Scored, register_task
from evalkit.tasks import aime_lm_eval

INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
LM_EVAL_STOPS = ("Question:", "</s>", "<|im_end|>", "<|eot_id|>")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")

AIME24_DATA = DataSource(hub_path="Maxwell-Jia/AIME_2024", hub_splits={"test": "train"},
                         local_files={"test": ["aime24.jsonl", "aime24/test.jsonl", "test.jsonl", "train.jsonl"]},
                         data_dir="aime/qwq")
AIME25_DATA = DataSource(hub_path="math-ai/aime25",
                         local_files={"test": ["aime25.jsonl", "aime25/test.jsonl", "test.jsonl"]},
                         data_dir="aime/qwq")


def _first(record: dict, names: tuple):
    for n in names:
        if n in record and record[n] is not None:
            return n, record[n]
    raise FieldError(names[0], f"is missing (looked for {', '.join(names)})")


def to_int(text) -> Optional[int]:
    """An integer written as ``25``, ``025``, ``1,000``, ``25.0``; None otherwise."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    s = str(text).strip().replace(",", "").replace("\\!", "").strip("$ ")
    s = re.sub(r"^\\text\{(.*)\}$", r"\1", s).strip()
    m = re.fullmatch(r"-?\d+(?:\.0+)?", s)
    return int(float(s)) if m else None


def last_integer(text: str) -> Optional[int]:
    """The last number of ``text`` read as an integer (``1,000`` -> 1000); None without one."""
    nums = _NUMBER.findall(text or "")
    for n in reversed(nums):
        v = to_int(n)
        if v is not None:
            return v
    return None


def extract_integer(text: str) -> Optional[int]:
    r"""The answer of a response: the last ``\boxed{}`` (as an integer, else its last integer), else
    the last integer of the response."""
    boxed = boxed_answer(text or "")
    if boxed is not None:
        v = to_int(boxed)
        return v if v is not None else last_integer(boxed)
    return last_integer(text)


def record_to_doc(record: dict, index: int) -> Doc:
    key, problem = _first(record, ("Problem", "problem", "question", "prompt"))
    if not isinstance(problem, str) or not problem.strip():
        raise FieldError(key, "should be a non-empty string")
    problem = problem.strip()
    if problem.endswith(INSTRUCTION):  # QwQ's copies carry the instruction
        problem = problem[: -len(INSTRUCTION)].rstrip()
    akey, raw = _first(record, ("Answer", "answer"))
    answer = to_int(raw)
    if answer is None:
        raise FieldError(akey, f"should be an integer, got {raw!r}")
    ident = next((record[k] for k in ("ID", "id") if record.get(k) not in (None, "")), index)
    return Doc(id=str(ident), query=problem, target=answer, meta={"answer_raw": str(raw)})


class AIMESampled(ChatTurnTask):
    """The model-card recipe: chat, temperature 0.6, top_p 0.95, 16 samples, \\boxed{} integer answers."""

    version = "1"
    eval_split = "test"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=32768, temperature=0.6, top_p=0.95, n=16)
    metrics = (Metric("exact_match"),)
    votes = True  # maj@K over the extracted integers, every run (no answer: no vote)

    def record_to_doc(self, record, index):
        return record_to_doc(record, index)

    def doc_to_text(self, doc):
        return f"{doc.query}\n{INSTRUCTION}"

    def build_prompt_text(self, doc, ctx):
        return self.doc_to_text(doc)

    def messages(self, doc, ctx):
        msgs = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        return msgs + [{"role": "user", "content": self.doc_to_text(doc)}]

    def score_text(self, doc, text):
        pred = extract_integer(text)
        return Scored({"exact_match": float(pred is not None and pred == doc.target)}, extracted=pred)


class AIMEGreedy(GenerationTask):
    """lm-eval's aime24/aime25: "Question: ...\\nAnswer:", greedy, lm-eval's answer check."""

    version = "1"
    eval_split = "test"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=32768, temperature=0.0, stop=LM_EVAL_STOPS)
    metrics = (Metric("exact_match"), Metric("exact_match_integer"))
    repeat_metric = "exact_match"
    votes = True

    def record_to_doc(self, record, index):
        return record_to_doc(record, index)

    def doc_to_text(self, doc):
        return f"Question: {doc.query}\nAnswer:"

    def build_prompt_text(self, doc, ctx):
        return self.doc_to_text(doc)

    def score_text(self, doc, text):
        pred = extract_integer(text)
        return Scored({"exact_match": float(aime_lm_eval.exact_match(text, doc.meta["answer_raw"])),
                       "exact_match_integer": float(pred is not None and pred == doc.target)},
                      extracted=aime_lm_eval.extract(text), extra={"integer_answer": pred})


@register_task
class AIME24(AIMESampled):
    name = "aime24"
    description = "AIME 2024 (30 problems), model-card recipe: chat, T=0.6, top_p=0.95, avg@16 with pass@k, maj@16"
    dataset = AIME24_DATA


@register_task
class AIME25(AIMESampled):
    name = "aime25"
    description = "AIME 2025 (30 problems), model-card recipe: chat, T=0.6, top_p=0.95, avg@16 with pass@k, maj@16"
    dataset = AIME25_DATA


@register_task
class AIME24Greedy(AIMEGreedy):
    name = "aime24_greedy"
    description = "AIME 2024 as lm-eval's aime24: 'Question: ...\\nAnswer:', greedy, lm-eval's answer check"
    dataset = AIME24_DATA


@register_task
class AIME25Greedy(AIMEGreedy):
    name = "aime25_greedy"
    description = "AIME 2025 as lm-eval's aime25: 'Question: ...\\nAnswer:', greedy, lm-eval's answer check"
    dataset = AIME25_DATA
