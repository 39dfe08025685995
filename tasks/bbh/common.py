"""What both BBH tasks share: one doc per item (ids ``<subtask>-<index>``), ``--limit N`` as the
first N items of every subtask (as lm-eval's groups take it), the prompt files read once per run,
and reporting: the micro average (the plain mean over items), the macro average (``<m>_macro``: the
mean of the subtask means, with ``macro_mean``'s stratified interval) and one breakdown per subtask
(every sample metric)."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from evalkit.scoring import subtasks
from evalkit.taskapi.data import DataError, FieldError, require
from evalkit.taskapi.task import Doc, first_of_each_group

from .data import SUBTASKS, CoTPrompt, load_prompt


class BBHBase:
    """Mixed into the CoT (generation) and the multiple-choice task."""

    subtasks: tuple = SUBTASKS
    grouped_metrics: tuple = ()

    def load_docs(self, split, max_docs=None, path=None):
        self._counts = defaultdict(int)
        return super().load_docs(split, max_docs, path)

    def record_to_doc(self, record, index):
        subtask = require(record, "subtask")
        if subtask not in SUBTASKS:
            raise FieldError("subtask", f"is not a BBH subtask: {subtask!r}")
        question, target = require(record, "input"), require(record, "target")
        i = self._counts[subtask]
        self._counts[subtask] += 1
        return Doc(id=f"{subtask}-{i}", query=question, target=target, meta={"subtask": subtask})

    def docs_within_limit(self, docs: Sequence[Doc], limit) -> list[Doc]:
        """``--limit N``: the first N items of every subtask (a fraction: of every subtask's items)."""
        return first_of_each_group(docs, limit, lambda d: d.meta["subtask"])

    def cot_prompt(self, subtask: str) -> CoTPrompt:
        cache = self.__dict__.setdefault("_prompts", {})
        if subtask not in cache:
            cache[subtask] = load_prompt(self.data_path, subtask)
        return cache[subtask]

    def shots(self, doc, ctx) -> tuple:
        """(the subtask's paper prompt, the number of exemplars asked); more than it has is an error."""
        prompt = self.cot_prompt(doc.meta["subtask"])
        k = self.num_fewshot if ctx.num_fewshot is None else ctx.num_fewshot
        if k > len(prompt.exemplars):
            raise DataError(f"task {self.name}: {k}-shot asked but the paper's prompt of {doc.meta['subtask']} "
                            f"has {len(prompt.exemplars)} exemplars")
        return prompt, k

    def breakdowns(self, samples):
        return subtasks.breakdowns(samples, self.higher_is_better_of)
