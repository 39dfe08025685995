"""What both BBH tasks share: one doc per item (ids ``<subtask>-<index>``), ``--limit N`` as the
first N items of every subtask (as lm-eval's groups take it), the prompt files read once per run,
and reporting: the micro average (the plain mean over items), the macro average (``<m>_macro``: the
mean of the subtask means, with ``macro_mean``'s stratified interval) and one breakdown per subtask
(every sample metric)."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from evalkit.scoring.choices import macro_mean
from evalkit.scoring.metric import MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.data import DataError, FieldError, require
from evalkit.taskapi.task import Doc, limit_count

from .data import SUBTASKS, CoTPrompt, load_prompt


def macro_group(names: tuple) -> MetricGroup:
    """``<m>_macro`` for each of ``names``: the unweighted mean over subtasks of the subtask means."""
    def estimate(samples):
        return {f"{m}_macro": macro_mean(by_subtask(samples, m)) for m in names} if samples else {}
    return MetricGroup("macro", tuple(f"{m}_macro" for m in names), True, estimate=estimate)


def by_subtask(samples, metric: str) -> dict:
    groups = defaultdict(list)
    for s in samples:
        groups[s.extra["subtask"]].append(s.metrics[metric])
    return dict(groups)


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
        if limit is None:
            return list(docs)
        groups = defaultdict(list)
        for d in docs:
            groups[d.meta["subtask"]].append(d)
        keep = {id(d) for g in groups.values() for d in g[:limit_count(limit, len(g))]}
        return [d for d in docs if id(d) in keep]

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
        names = list(samples[0].metrics) if samples else []
        groups = defaultdict(list)
        for s in samples:
            groups[s.extra["subtask"]].append(s)
        return {f"subtask:{t}": {m: mean_metric([s.metrics[m] for s in groups[t]], self.higher_is_better_of(m))
                                 for m in names} for t in sorted(groups)}
