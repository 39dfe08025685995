"""The task plugin contract.

A task says where its data comes from (``dataset``), how a record becomes a typed ``Doc``
(``record_to_doc``), how a prompt is built (zero/few-shot, optional chat template), which requests
it makes (``requests``), how one sample is scored (``score``: sample-level metrics) and which
corpus-level metrics it has (``corpus_metrics``: computed over all samples, with a bootstrap CI).
Aggregation never hides scoring: every per-sample value is in the samples file.

Three ready-made shapes cover most benchmarks: ``MultipleChoiceTask`` (loglikelihood of each
choice; acc and acc_norm), ``GenerationTask`` (generate, then ``score``) and ``PerplexityTask``
(rolling loglikelihood). A new benchmark is one small file in ``tasks/`` with ``@register_task``.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar, Optional, Sequence

from evalkit.data import DataSource
from evalkit.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest
from evalkit.stats import MetricValue, bootstrap_corpus, derive_seed, mean_metric


def content_hash(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclass
class Doc:
    """One evaluation item, typed. ``query`` is the prompt body without few-shot examples."""

    id: str
    query: str
    target: Any = None                    # reference answer(s)
    choices: Optional[list[str]] = None   # multiple choice options (continuations)
    gold: Optional[int] = None            # index of the right choice
    fewshot_target: Optional[str] = None  # text shown after the query when used as an example
    meta: dict = field(default_factory=dict)

    def hash(self) -> str:
        if "_hash" not in self.__dict__:
            self.__dict__["_hash"] = content_hash({f: getattr(self, f) for f in self.__dataclass_fields__})
        return self.__dict__["_hash"]


@dataclass
class Sample:
    """The scored outcome of one doc, written as one line of the samples file."""

    doc_id: str
    doc_hash: str
    prompt: Any
    responses: list
    target: Any
    metrics: dict
    extracted: Any = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}  # shallow: rows are written, not mutated
        d["prompt_hash"] = content_hash(self.prompt)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Sample":
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class RunContext:
    """What a task needs to know about the run when it builds prompts and requests."""

    seed: int = 1234
    num_fewshot: Optional[int] = None        # None: the task's default
    apply_chat_template: bool = False
    system_prompt: Optional[str] = None
    gen_overrides: dict = field(default_factory=dict)  # e.g. max_tokens, temperature, n
    render_chat: Optional[Callable[[list[dict]], str]] = None


class Task:
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
    higher_is_better: ClassVar[dict] = {}
    output_type: ClassVar[str] = "generate"

    def __init__(self, data_path: Optional[str] = None, **options):
        self.data_path = data_path
        self.options = options

    # ---- data ----
    def record_to_doc(self, record: dict, index: int) -> Doc:
        raise NotImplementedError

    def load_docs(self, split: str, max_docs: Optional[int] = None, path: Optional[str] = None) -> list[Doc]:
        from evalkit.data import DataError, FieldError

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

    # ---- prompts ----
    def doc_to_text(self, doc: Doc) -> str:
        return doc.query

    def doc_to_target(self, doc: Doc) -> str:
        if doc.fewshot_target is not None:
            return doc.fewshot_target
        if doc.choices is not None and doc.gold is not None:
            return doc.choices[doc.gold]
        return str(doc.target)

    def fewshot_pool(self) -> list[Doc]:
        if "_fewshot_pool" not in self.__dict__:
            from evalkit.run_checks import fewshot_path
            path = fewshot_path(self) if self.fewshot_split else None  # (refuses the evaluation file)
            self._fewshot_pool = [] if not self.fewshot_split else \
                self.load_docs(self.fewshot_split, path=path) if path else self.load_docs(self.fewshot_split)
        return self._fewshot_pool

    def fewshot_examples(self, doc: Doc, k: int, ctx: RunContext) -> list[Doc]:
        if k <= 0:
            return []
        pool = self.fewshot_pool()
        same_split = self.fewshot_split == self.eval_split
        if self.fewshot_sampler == "first_n":
            picked = []
            for d in pool:
                if not (same_split and d.id == doc.id):
                    picked.append(d)
                    if len(picked) == k:
                        break
        else:
            rng = random.Random(derive_seed(ctx.seed, self.name, "fewshot", doc.id))
            idx = rng.sample(range(len(pool)), min(len(pool), k + 1))
            picked = [pool[i] for i in idx if not (same_split and pool[i].id == doc.id)][:k]
        if len(picked) < k:
            raise ValueError(f"task {self.name}: {k}-shot asked but the few-shot split has {len(picked)} examples")
        return picked

    def prompt_text(self, doc: Doc, ctx: RunContext) -> str:
        key = (doc.hash(), ctx.seed, ctx.num_fewshot)
        cache = self.__dict__.setdefault("_prompt_cache", {})
        if key not in cache:
            cache[key] = self.build_prompt_text(doc, ctx)
        return cache[key]

    def build_prompt_text(self, doc: Doc, ctx: RunContext) -> str:
        k = self.num_fewshot if ctx.num_fewshot is None else ctx.num_fewshot
        shots = self.fewshot_examples(doc, k, ctx)
        parts = [self.doc_to_text(ex) + self.target_delimiter + self.doc_to_target(ex) for ex in shots]
        body = self.fewshot_delimiter.join(parts + [self.doc_to_text(doc)])
        return self.instruction + body

    def messages(self, doc: Doc, ctx: RunContext) -> list[dict]:
        msgs = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        return msgs + [{"role": "user", "content": self.prompt_text(doc, ctx)}]

    def context(self, doc: Doc, ctx: RunContext) -> str:
        """The scoring context as a plain string (chat template rendered when asked)."""
        if ctx.apply_chat_template:
            if ctx.render_chat is None:
                raise ValueError("--apply-chat-template needs a backend that renders chat templates")
            return ctx.render_chat(self.messages(doc, ctx))
        return self.prompt_text(doc, ctx)

    # ---- requests and scoring ----
    def requests(self, doc: Doc, ctx: RunContext) -> list:
        raise NotImplementedError

    def score(self, doc: Doc, responses: list, ctx: RunContext) -> Sample:
        raise NotImplementedError

    def score_all(self, docs: Sequence[Doc], responses: Sequence[list], ctx: RunContext) -> list[Sample]:
        """Score every doc of the run (``responses[i]`` answers ``docs[i]``). Override to batch costly
        checks, e.g. a worker pool for math equivalence; the default scores one doc at a time."""
        return [self.score(d, r, ctx) for d, r in zip(docs, responses)]

    def responses_from_predictions(self, doc: Doc, predictions: list[str]) -> list:
        """Saved outputs of one doc as the responses ``score`` takes (``evalkit score``, no model).
        Default: one generate request answered with every prediction (several allow pass@k)."""
        from evalkit.requests import Completion
        return [[Completion(p, "stop") for p in predictions]]

    #: name -> function(list of Sample) -> float, computed over the corpus with a bootstrap CI
    corpus_metrics: ClassVar[dict] = {}

    def aggregate(self, samples: Sequence[Sample], seed: int) -> dict[str, MetricValue]:
        out = {}
        names = []
        for s in samples:
            for m in s.metrics:
                if m not in names and m not in self.corpus_metrics:
                    names.append(m)
        for m in names:
            out[m] = mean_metric([s.metrics.get(m) for s in samples], self.higher_is_better.get(m, True))
        for m, fn in self.corpus_metrics.items():
            out[m] = bootstrap_corpus(samples, fn, derive_seed(seed, self.name, m, "bootstrap"),
                                      higher_is_better=self.higher_is_better.get(m, True))
        return out

    def breakdowns(self, samples: Sequence[Sample]) -> dict:
        """Optional per-group results (subjects, levels, categories): {group: {metric: MetricValue}}."""
        return {}

    def config_fingerprint(self) -> dict:
        return {"name": self.name, "version": self.version, "num_fewshot": self.num_fewshot,
                "options": self.options}


class MultipleChoiceTask(Task):
    """Score each choice by loglikelihood of ``target_delimiter + choice`` after the context."""

    output_type = "multiple_choice"

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
        return Sample(doc.id, doc.hash(), self.context(doc, ctx), [[r.logprob, r.is_greedy] for r in responses],
                      doc.gold, {"acc": float(pred == doc.gold), "acc_norm": float(pred_norm == doc.gold)},
                      extracted=pred)


class GenerationTask(Task):
    output_type = "generate"
    gen_params: ClassVar[GenParams] = GenParams()

    def params(self, doc: Doc, ctx: RunContext) -> GenParams:
        p = dict(self.gen_params.__dict__)
        p.update({k: v for k, v in ctx.gen_overrides.items() if k in p})
        if p["temperature"] and p.get("seed") is None:
            p["seed"] = derive_seed(ctx.seed, self.name, "sample", doc.id) % (2 ** 31)
        p["stop"] = tuple(p["stop"])
        return GenParams(**p)

    def requests(self, doc, ctx):
        params = self.params(doc, ctx)
        if ctx.apply_chat_template:
            msgs = tuple((m["role"], m["content"]) for m in self.messages(doc, ctx))
            return [GenerateRequest(messages=msgs, params=params)]
        return [GenerateRequest(prompt=self.prompt_text(doc, ctx), params=params)]

    def prompt_of(self, doc: Doc, ctx: RunContext):
        return self.messages(doc, ctx) if ctx.apply_chat_template else self.prompt_text(doc, ctx)

    def aggregate(self, samples, seed):
        """Adds the ``metrics`` option's extra metrics (``evaluate:NAME``, see evalkit.metrics.hf_evaluate)."""
        extra = {}
        if self.options.get("metrics"):
            from evalkit.metrics import hf_evaluate
            extra, self._metric_info = hf_evaluate.apply(self, samples, self.options["metrics"], seed)
        out = super().aggregate(samples, seed)
        out.update(extra)
        return out

    def run_extra(self, samples) -> dict:
        info = getattr(self, "_metric_info", None)
        return {"evaluate": info} if info else {}


class PerplexityTask(Task):
    output_type = "loglikelihood_rolling"

    def rolling_text(self, doc: Doc) -> str:
        return doc.query

    def requests(self, doc, ctx):
        return [RollingRequest(self.rolling_text(doc))]


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
