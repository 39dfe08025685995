"""The task plugin contract.

A task says where its data comes from (``dataset``), how a record becomes a typed ``Doc``
(``record_to_doc``), how a prompt is built (zero/few-shot, optional chat template), which requests
it makes (``requests``), how one sample is scored (``score``: sample-level values) and which
metrics it reports (``metrics``: ``Metric`` objects, sample or corpus level, and ``MetricGroup``s,
one corpus computation giving several names, with a bootstrap CI). Declarations are checked: a
sample metric the task does not declare, or a declared one no sample carries, is an error.
Aggregation never hides scoring: every per-sample value is in the samples file.

Three ready-made shapes cover most benchmarks: ``MultipleChoiceTask`` (loglikelihood of each
choice; acc and acc_norm), ``GenerationTask`` (generate, then ``score_text``: values only, the
framework builds the sample) and ``PerplexityTask`` (rolling loglikelihood). A new benchmark is one
small file in ``tasks/`` with ``@register_task``.

What a task may override (every hook has a default on ``Task``):

==========================  ===================================================================
``record_to_doc``           a data record -> ``Doc`` (required)
``doc_to_text/_target``     how one doc reads as a question / as a few-shot answer
``build_prompt_text``       the whole prompt text (default: instruction + few-shot + question);
                            the one prompt hook: ``prompt_text`` caches it, ``messages``,
                            ``context`` and ``prompt_of`` derive from it
``messages``                the chat form, when a task needs more than one user turn
``requests``                the requests of one doc (the shapes below provide it)
``score_text``              generation: one completion -> ``Scored`` or a metrics dict
``score_texts``             generation: all completions of a doc (n > 1) -> ``Scored``
``score_batch``             generation: all docs at once (worker pools, sandboxes)
``score`` / ``score_all``   other shapes: a doc's responses -> ``Scored``; all docs -> ``Sample``s
``judged``                  what a judge model computes (``--judge``; ``evalkit.taskapi.judged``)
``judge_requests``          requests for the run's judge model (default: what ``judged`` asks)
``metrics``                 ``Metric``/``MetricGroup`` objects (direction, sample or corpus level)
``breakdowns``              per-group results (subjects, levels)
``run_extra``               task-level figures for the record's ``extra``
``metric_inputs``           (prediction, references) for appended ``evaluate:`` metrics
``docs_from_references``    docs from plain reference files (``evalkit score --references``)
``canonical_prediction``    the reference solution of a doc (``evalkit check-canonical``)
``redact_samples``/``family``  never show the questions / the leaderboard's task family
==========================  ===================================================================
"""
from __future__ import annotations

import math
from typing import Callable, ClassVar, Optional, Sequence

from evalkit.scoring import metric as _metric
from evalkit.taskapi import judged as _judged
from evalkit.taskapi.data import DataSource
from evalkit.taskapi.prompts import Prompting
from evalkit.taskapi.items import _UNSET, Doc, RunContext, Sample, Scored, content_hash, make_sample  # noqa: F401
from evalkit.scoring.metric import Metric, MetricGroup  # noqa: F401 (re-exported)
from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest
from evalkit.scoring.stats import MetricValue, derive_seed


def run_params(base: GenParams, ctx: RunContext, task: str, doc_id: str) -> GenParams:
    """A task's generation parameters with the run's overrides (``--gen-kwargs``); sampling gets a
    seed derived from the run seed, the task and the doc."""
    p = dict(base.__dict__)
    p.update({k: v for k, v in ctx.gen_overrides.items() if k in p})
    if p["temperature"] and p.get("seed") is None:
        p["seed"] = derive_seed(ctx.seed, task, "sample", doc_id) % (2 ** 31)
    p["stop"] = tuple(p["stop"])
    return GenParams(**p)


class Task(Prompting):
    """A benchmark: its data, prompts, requests, scoring and metrics (the hooks: this module's docstring)."""
    # ---- what a task declares ----
    name: ClassVar[str]
    description: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    dataset: ClassVar[DataSource] = DataSource()
    eval_split: ClassVar[str] = "test"
    fewshot_split: ClassVar[Optional[str]] = None
    num_fewshot: ClassVar[int] = 0
    fewshot_sampler: ClassVar[str] = "first_n"  # or "random" (seeded by run seed + doc id)
    fewshot_delimiter: ClassVar[str] = "\n\n"
    target_delimiter: ClassVar[str] = " "
    instruction: ClassVar[str] = ""              # text before the few-shot examples
    output_type: ClassVar[str] = "generate"
    #: what the task reports: ``Metric`` and ``MetricGroup`` objects, checked against the samples
    metrics: ClassVar[tuple] = ()
    judged: ClassVar[tuple] = ()  # what a judge model computes (evalkit.taskapi.judged; needs --judge)
    #: shorthands kept for task files written before ``metrics``: {name: bool}, {name: compute}
    higher_is_better: ClassVar[dict] = {}
    corpus_metrics: ClassVar[dict] = {}
    #: never show this task's questions (GPQA's terms), on the leaderboard or in compare reports
    redact_samples: ClassVar[bool] = False
    #: the leaderboard's task family (default: from the task name)
    family: ClassVar[Optional[str]] = None
    #: a local file of few-shot examples (``--fewshot-data TASK=PATH``), never the evaluation file
    fewshot_data_path: Optional[str] = None

    def __init__(self, data_path: Optional[str] = None, **options):
        self.data_path, self.options = data_path, options

    # ---- data ----
    def record_to_doc(self, record: dict, index: int) -> Doc:
        raise NotImplementedError

    def load_docs(self, split: str, max_docs: Optional[int] = None, path: Optional[str] = None) -> list[Doc]:
        from evalkit.taskapi.data import DataError, FieldError
        docs = []
        for i, rec in enumerate(self.dataset.iter_records(split, path or self.data_path)):
            if max_docs is not None and len(docs) >= max_docs:
                break
            try:
                doc = self.record_to_doc(rec.data, i)
            except FieldError as e:
                raise DataError(f"{rec.where}: {e} (task {self.name})") from None
            except KeyError as e:
                raise DataError(f"{rec.where}: field {e.args[0]!r} is missing (task {self.name})") from None
            except (TypeError, ValueError, AttributeError) as e:
                raise DataError(f"{rec.where}: malformed record for task {self.name}: {e}") from None
            if doc is not None:
                docs.append(doc)
        return docs

    def eval_docs(self) -> list[Doc]:
        return self.load_docs(self.eval_split)

    def docs_within_limit(self, docs: Sequence[Doc], limit) -> list[Doc]:
        """The docs ``--limit`` keeps (default: the first ``limit_count(limit, len(docs))``); a task
        made of subtasks may take the first N of each, as lm-eval's groups do."""
        n = limit_count(limit, len(docs))
        return list(docs[:n] if n is not None else docs)

    # ---- requests and scoring ----
    def requests(self, doc: Doc, ctx: RunContext) -> list:
        raise NotImplementedError

    def judge_requests(self, doc: Doc, responses: list, ctx: RunContext) -> list:
        """Requests for the run's judge model (``--judge``) about one doc's answers, made after the
        answer phase (default: none). Their answers reach scoring as ``ctx.judgments`` (by request
        key); a run without ``--judge`` has none, and the task scores without them. Default: what the
        task's judged metrics ask (``evalkit.taskapi.judged``)."""
        return _judged.requests(self, doc, responses)

    def score(self, doc: Doc, responses: list, ctx: RunContext):
        """One doc's values from its responses: a ``Scored`` (or a plain metrics dict); the framework
        builds the ``Sample`` (``as_sample``)."""
        raise NotImplementedError

    def score_all(self, docs: Sequence[Doc], responses: Sequence[list], ctx: RunContext) -> list[Sample]:
        """Score every doc of the run (``responses[i]`` answers ``docs[i]``). Override to batch costly
        checks, e.g. a worker pool for math equivalence; the default scores one doc at a time."""
        return [self.as_sample(d, r, self.score(d, r, ctx), ctx) for d, r in zip(docs, responses)]

    def as_sample(self, doc: Doc, responses: list, result, ctx: Optional[RunContext]) -> Sample:
        """The framework's side of scoring: a task's values (``Scored`` or a metrics dict) become the
        doc's ``Sample``, with the prompt, responses and target its shape shows by default."""
        if isinstance(result, Sample):  # a task file written before ``Scored`` builds its own
            return result
        s = result if isinstance(result, Scored) else Scored(dict(result))
        return make_sample(doc, s, self.sample_prompt(doc, ctx) if s.prompt is _UNSET else None,
                           self.recorded_responses(responses) if s.responses is _UNSET else None,
                           self.sample_target(doc) if s.target is _UNSET else None)

    def sample_prompt(self, doc: Doc, ctx: RunContext):
        """The prompt the samples file shows (default ``prompt_of``)."""
        return self.prompt_of(doc, ctx)

    def sample_target(self, doc: Doc):
        """The target the samples file shows (default the doc's)."""
        return doc.target

    def recorded_responses(self, responses: list) -> list:
        """The responses as the samples file shows them (default: as answered)."""
        return list(responses)

    def responses_from_predictions(self, doc: Doc, predictions: list[str]) -> list:
        """Saved outputs of one doc as the responses ``score`` takes (``evalkit score``, no model).
        Default: one generate request answered with every prediction (several allow pass@k)."""
        from evalkit.taskapi.requests import Completion
        return [[Completion(p, "stop") for p in predictions]]

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "aggregate" in cls.__dict__:  # an override written before ``appended`` still works
            cls.aggregate = _metric.accepting_appended(cls.__dict__["aggregate"])

    def metric_declarations(self) -> tuple:
        """What the task declares: its ``metrics`` and the entries of the older class dicts, and the
        repeat figures (avg@K, pass@k, pass^k, maj@K) its samples carried when scored with K samples."""
        own = _metric.declarations((*self.metrics, *_judged.declarations_of(self)), self.higher_is_better,
                                   self.corpus_metrics, self.name)
        return (*own, *self.repeat_declarations())

    def repeat_declarations(self, samples: Optional[Sequence] = None) -> tuple:
        """The repeat metrics these samples carry that the task does not declare, remembered for the
        record's declarations (``evalkit.taskapi.repeats``)."""
        if samples is not None:
            from evalkit.taskapi.repeats import declarations
            own = {n for d in _metric.declarations((*self.metrics, *_judged.declarations_of(self)),
                                                   self.higher_is_better, self.corpus_metrics, self.name)
                   for n in d.names}
            self._repeat_decl = declarations(samples, own)
        return self.__dict__.get("_repeat_decl", ())

    def declared_metrics(self, appended: Sequence = ()) -> list[dict]:
        """``[{name, higher_is_better, level, group}]`` for the record, with what the run ``appended``."""
        return _metric.describe((*self.metric_declarations(), *appended))

    def metric_objects(self, samples: Sequence[Sample], appended: Sequence = ()) -> list:
        """The metrics these samples report, in record order, checked (``evalkit.scoring.metric.resolve``)."""
        extra = (*_judged.declarations_of(self), *self.repeat_declarations(samples))
        return _metric.resolve((*self.metrics, *extra) if extra else self.metrics, samples, self.higher_is_better, self.corpus_metrics, task=self.name,
                               appended=appended or self.__dict__.get("_appended", ()), strict=self.declares_metrics(),
                               own_aggregate=type(self).aggregate is not Task.aggregate)

    def declares_metrics(self) -> bool:
        """Whether the task declares its own ``metrics``: then every sample metric must be declared.
        Tasks that only inherit a shape's defaults or use the older dicts get a warning instead."""
        return (bool(self.metrics) and self.metrics is not MultipleChoiceTask.metrics) or bool(_judged.metrics_of(self))

    def aggregate(self, samples: Sequence[Sample], seed: int, appended: Sequence = ()) -> dict[str, MetricValue]:
        """Every metric over the samples, with its CI (samples are only read). ``appended``: the run's
        ``evaluate:`` declarations; their per-sample values are aggregated here, their groups were not."""
        return _metric.aggregate(self.metric_objects(samples, appended), samples, seed, self.name)

    def higher_is_better_of(self, name: str) -> bool:
        """The declared direction of ``name`` (higher is better when nothing declares it)."""
        return _metric.direction(self.metric_declarations(), name)

    def breakdowns(self, samples: Sequence[Sample]) -> dict:
        """Optional per-group results (subjects, levels, categories): {group: {metric: MetricValue}}."""
        return {}

    def run_extra(self, samples: Sequence[Sample]) -> dict:
        """Optional task-level figures for the record (sandbox layer, judge status counts, ...)."""
        return {}

    def metric_inputs(self, sample: Sample) -> tuple[str, list[str]]:
        """(prediction, references) of a sample for appended ``evaluate:`` metrics: by default the
        first response and the target as the list of references."""
        from evalkit.scoring.hf_evaluate import default_inputs
        return default_inputs(sample)

    #: whether ``docs_from_references`` is implemented (``evalkit score --references``)
    takes_references: ClassVar[bool] = False

    def docs_from_references(self, references: list[list[str]]) -> list[Doc]:
        raise NotImplementedError(f"task {self.name} reads its references from its data")

    def canonical_prediction(self, doc: Doc) -> Optional[str]:
        """The reference solution of a doc, for ``evalkit check-canonical`` (None: the task has none)."""
        return None

    def config_fingerprint(self) -> dict:
        return {"name": self.name, "version": self.version, "num_fewshot": self.num_fewshot,
                "options": self.options}


def limit_count(limit, n_docs: int) -> Optional[int]:
    """The number of docs ``limit`` takes of a task: a count, or a fraction below 1 of the task's
    docs rounded up (lm-eval's ``--limit 0.1``)."""
    if limit is None:
        return None
    if isinstance(limit, float) and limit < 1:
        return math.ceil(n_docs * limit)
    return int(limit)


def first_of_each_group(docs, limit, group: Callable[[Doc], str]) -> list[Doc]:
    """``--limit`` per group (subtask, category) as lm-eval's groups take it: the first ``limit``
    docs of each group (a fraction below 1: of each group's), in the docs' order."""
    if limit is None:
        return list(docs)
    groups: dict = {}
    for d in docs:
        groups.setdefault(group(d), []).append(d)
    keep = {id(d) for g in groups.values() for d in g[:limit_count(limit, len(g))]}
    return [d for d in docs if id(d) in keep]


class MultipleChoiceTask(Task):
    """Score each choice by loglikelihood of ``target_delimiter + choice`` after the context."""

    output_type = "multiple_choice"
    metrics = (Metric("acc"), Metric("acc_norm"))

    def doc_to_choice_text(self, doc: Doc, i: int) -> str:
        return self.target_delimiter + doc.choices[i]

    def requests(self, doc, ctx):
        context = self.context(doc, ctx)
        return [LoglikelihoodRequest(context, self.doc_to_choice_text(doc, i)) for i in range(len(doc.choices))]

    def score(self, doc, responses, ctx):
        lls = [r.logprob for r in responses]
        lens = [len(c) for c in doc.choices]
        pred = max(range(len(lls)), key=lambda i: lls[i])
        pred_norm = max(range(len(lls)), key=lambda i: lls[i] / max(1, lens[i]))
        return Scored({"acc": float(pred == doc.gold), "acc_norm": float(pred_norm == doc.gold)}, extracted=pred)

    def sample_prompt(self, doc, ctx):
        return self.context(doc, ctx)

    def sample_target(self, doc):
        return doc.gold

    def recorded_responses(self, responses):
        return [[r.logprob, r.is_greedy] for r in responses]


class GenerationTask(Task):
    """Generate, then score the text. A task implements ``score_text(doc, text)`` (or
    ``score_texts`` for several completions per doc, or ``score_batch`` for all docs at once) and
    returns values only: a metrics dict or a ``Scored``; the framework builds the ``Sample``."""

    output_type = "generate"
    gen_params: ClassVar[GenParams] = GenParams()

    def params(self, doc: Doc, ctx: RunContext) -> GenParams:
        p = run_params(self.gen_params, ctx, self.name, doc.id)
        if p.n > 1 and p.greedy:
            raise ValueError(f"task {self.name}: n={p.n} samples per problem (--repeats) need temperature > 0 "
                             "(greedy samples are all the same), e.g. --gen-kwargs temperature=0.6")
        return p

    def requests(self, doc, ctx):
        params = self.params(doc, ctx)
        if ctx.apply_chat_template:
            msgs = tuple((m["role"], m["content"]) for m in self.messages(doc, ctx))
            return [GenerateRequest(messages=msgs, params=params)]
        return [GenerateRequest(prompt=self.prompt_text(doc, ctx), params=params)]

    # ---- scoring: values only ----
    def score_text(self, doc: Doc, text: str):
        """One completion -> ``Scored`` (or a plain metrics dict)."""
        raise NotImplementedError(f"task {self.name}: implement score_text(doc, text)")

    def score_texts(self, doc: Doc, texts: list[str]):
        """Every completion of a doc (``n`` > 1); default: the first one counts."""
        return self.score_text(doc, texts[0] if texts else "")

    def score_batch(self, docs: Sequence[Doc], texts: Sequence[list[str]], ctx: RunContext) -> list:
        """All docs of the run at once; override to batch costly checks."""
        return [self.score_texts(d, t) for d, t in zip(docs, texts)]

    def score_all(self, docs, responses, ctx):
        if type(self).score is not GenerationTask.score:  # a task that scores a doc's responses itself
            return [self.as_sample(d, r, self.score(d, r, ctx), ctx) for d, r in zip(docs, responses)]
        texts = [[c.text for c in r[0]] if r else [] for r in responses]
        if any(len(t) > 1 for t in texts) and type(self).score_texts is GenerationTask.score_texts:
            from evalkit.taskapi.repeats import score_repeats  # K samples per problem: each scored alone
            scored = score_repeats(self, docs, texts, ctx)
        else:
            scored = self.score_batch(docs, texts, ctx)
        return [self.sample_of(d, r, t, s, ctx) for d, r, t, s in zip(docs, responses, texts, scored)]

    def score(self, doc, responses, ctx):
        return self.score_all([doc], [responses], ctx)[0]

    def run_extra(self, samples):
        from evalkit.taskapi.repeats import run_summary  # K > 1 samples per problem: K, naive vs clustered SE
        return run_summary(samples)

    def sample_of(self, doc: Doc, responses: list, texts: list[str], scored, ctx: RunContext) -> Sample:
        s = scored if isinstance(scored, Scored) else Scored(dict(scored))
        s = Scored(s.metrics, s.extracted, dict(s.extra), s.target, s.prompt, texts if s.responses is _UNSET else s.responses)
        if responses and responses[0]:
            s.extra.setdefault("finish_reason", responses[0][0].finish_reason)
        return self.as_sample(doc, responses, s, ctx)

    def recorded_responses(self, responses):
        """The completion texts of the doc's first request."""
        return [c.text for c in responses[0]] if responses else []


class PerplexityTask(Task):
    """Rolling loglikelihood of each doc's whole text (``rolling_text``), for perplexity tasks (``wikitext``)."""
    output_type = "loglikelihood_rolling"

    def rolling_text(self, doc: Doc) -> str:
        return doc.query

    def requests(self, doc, ctx):
        return [RollingRequest(self.rolling_text(doc))]

    def sample_prompt(self, doc, ctx):
        return self.rolling_text(doc)

    def recorded_responses(self, responses):
        return [float(r) for r in responses]


_REGISTRY: dict[str, type] = {}


def register_task(cls: type) -> type:
    """Class decorator: make a Task subclass available by its ``name``."""
    name = getattr(cls, "name", None)
    if not name:
        raise ValueError(f"{cls.__name__} needs a 'name'")
    if name in _REGISTRY and _REGISTRY[name].__qualname__ != cls.__qualname__:
        raise ValueError(f"task name {name!r} is registered twice ({_REGISTRY[name].__module__} and {cls.__module__})")
    _REGISTRY[name] = cls
    return cls
