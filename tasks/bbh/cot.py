"""``bbh_cot``: BIG-Bench Hard, 3-shot chain of thought with the paper's prompts, greedy generation,
exact match of the answer after "the answer is" (lm-eval's ``bbh_cot_fewshot_<subtask>``).

The prompt is the paper's ``cot-prompts/<subtask>.txt`` after its ``-----`` line, byte for byte,
then "\\n\\nQ: <input>\\nA: Let's think step by step.\\n". The answer is the first match of lm-eval's
filter ``(?<=the answer is )(.*)(?=.)`` (everything after "the answer is" on that line but its last
character, normally the final period), stripped, ``[invalid]`` when nothing matches, compared to
the target as an exact string (no case or punctuation folding, as lm-eval's ``exact_match``).
"""
from __future__ import annotations

import re

from evalkit.scoring.metric import Metric
from evalkit.scoring.subtasks import macro_group
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import GenerationTask, Scored, register_task

from .common import BBHBase
from .data import SUBTASKS, bbh_source

ANSWER = re.compile(r"(?<=the answer is )(.*)(?=.)")
INVALID = "[invalid]"
COT_CUE = "A: Let's think step by step.\n"


def extract_answer(text: str) -> str:
    """lm-eval's ``regex`` + ``take_first`` filter of ``bbh_cot_fewshot_*``: the first match, stripped."""
    found = ANSWER.findall(text)
    return found[0].strip() if found else INVALID


@register_task
class BBHCoT(BBHBase, GenerationTask):
    name = "bbh_cot"
    description = "BIG-Bench Hard, 27 subtasks, 3-shot CoT (the paper's prompts), exact match; micro+macro"
    version = "1"
    family = "bbh"
    dataset = bbh_source()
    eval_split = "test"
    num_fewshot = 3
    # lm-eval's bbh_cot_fewshot: greedy, up to 1024 tokens, stop at "</s>", "Q" or a blank line
    gen_params = GenParams(max_tokens=1024, temperature=0.0, stop=("</s>", "Q", "\n\n"))
    grouped_metrics = ("exact_match",)
    metrics = (Metric("exact_match"), Metric("no_answer", higher_is_better=False), macro_group(grouped_metrics))

    def build_prompt_text(self, doc, ctx):
        prompt, k = self.shots(doc, ctx)
        if k == len(prompt.exemplars):
            prefix = prompt.body  # byte for byte
        else:
            prefix = "\n\n".join([prompt.description, *(f"Q: {q}\nA: {a}" for q, a, _ in prompt.exemplars[:k])])
        return f"{prefix}\n\nQ: {doc.query}\n{COT_CUE}"

    def score_text(self, doc, text):
        answer = extract_answer(text)
        return Scored({"exact_match": float(answer == doc.target), "no_answer": float(answer == INVALID)},
                      extracted=answer, target=doc.target, extra={"subtask": doc.meta["subtask"]})


def _subtask_task(subtask: str) -> type:
    cls = type(f"BBHCoT_{subtask}", (BBHCoT,), {
        "name": f"bbh_cot_{subtask}",
        "description": f"BIG-Bench Hard {subtask.replace('_', ' ')}, 3-shot CoT (the paper's prompt), exact match",
        "dataset": bbh_source((subtask,)), "subtasks": (subtask,), "__module__": __name__,
        "metrics": (Metric("exact_match"), Metric("no_answer", higher_is_better=False))})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


for _subtask in SUBTASKS:
    globals()[f"BBHCoT_{_subtask}"] = _subtask_task(_subtask)
