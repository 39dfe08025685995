r"""``mmath``: MMATH (Luo et al. 2025, arXiv:2505.19126), 374 competition problems (AIME 2024/2025,
CNMO, MATH-500) in ten languages, as NVIDIA's ``nvidia-mmath`` runs it (a fork of RUCAIBox/MMATH).

Tasks: ``mmath`` (every language, or those of ``--task-args mmath:langs=en+zh+ja``) and ``mmath_<lang>``
for each language (``mmath_en`` ... ``mmath_vi``, the reference's evaluation names).

Recipe (the reference's defaults, ``core_evals/mmath/framework.yml``): the question followed by a
newline and "Please reason step by step, and put your final answer within \boxed{}." in the
question's language (``data.PROMPTS``), one user turn (the reference sends it to a chat endpoint;
``chat=false`` sends the bare text), temperature 0.6, top_p 0.95, 32,768 new tokens, 4 samples per
problem (the reference's ``n_samples``; ``--repeats K`` changes it). ``--limit N`` takes the first N
problems of each language, as the reference's ``--limit`` does per language.

Scoring (``answers``): the reference's extraction (last ``\boxed{}``, else the last number after
"answer is" and the like), then math-verify on ``$answer$`` against the gold answer, run in evalkit's
math-equivalence workers. ``accuracy`` is the mean over every problem of every language (with K
samples: avg@K, with pass@k and maj@K beside it); ``accuracy_<lang>`` is the reference's figure for a
language (the mean of its four sources' accuracies) and ``accuracy_macro`` their mean (``figures``);
``lcr=true`` adds the language consistency rates (``figures``; needs fastText's identifier).

What differs from the reference: (1) its client asks the endpoint for ``n=4`` choices but scores only
the first (LangChain's ``batch`` returns one message per prompt), so its accuracy is one sample's;
evalkit scores all K, each sample its own seeded request; (2) math-verify is the installed version
(the reference pins 0.7.0), with evalkit's per-item timeout; (3) a reasoning trace in the text is
removed before extraction (``--keep-thinking`` scores the raw text, as the reference does); (4) the
reference's bookkeeping keys items by position and counts them by ``gid`` (the same in its data);
evalkit keys docs by ``<lang>/<gid>``; (5) figures come with confidence intervals.
"""
from __future__ import annotations

import functools
from collections import Counter
from typing import ClassVar, Optional

from evalkit.scoring.math_equivalence import judge_many, judge_math_verify
from evalkit.scoring.metric import Metric
from evalkit.taskapi.chat_turn import ChatTurnTask, flag
from evalkit.taskapi.data import DataSource
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, Scored, first_of_each_group, register_task
from evalkit.tasks.mmath import answers, data, figures

GEN_PARAMS = GenParams(max_tokens=32768, temperature=0.6, top_p=0.95, n=4)


class MMathBase(ChatTurnTask):
    version = "1"
    family = "mmath"
    eval_split = "test"
    num_fewshot = 0
    gen_params = GEN_PARAMS
    repeat_metric = "accuracy"
    votes = True  # maj@K over the extracted answers (as strings)
    known_options: ClassVar[tuple] = ("chat", "langs", "lcr")
    #: the languages a per-language task is fixed to (None: ``mmath``, every language or ``langs``)
    fixed_langs: ClassVar[Optional[tuple]] = None

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.langs = self._langs(options.get("langs"))
        self.lcr = flag(options.get("lcr"), default=False)
        self.dataset = DataSource(local_reader=functools.partial(_read, langs=self.langs))
        lcr = (Metric("lcr_think"), Metric("lcr_answer")) if self.lcr else ()
        self.metrics = (Metric("accuracy"), figures.language_group(self.langs), *lcr)

    def _langs(self, option) -> tuple:
        if self.fixed_langs is None:
            return data.parse_langs(self.name, option)
        if option is not None and data.parse_langs(self.name, option) != self.fixed_langs:
            raise ValueError(f"task {self.name}: is MMATH in {'+'.join(self.fixed_langs)} only; "
                             f"use mmath with langs={option} for other languages")
        return self.fixed_langs

    # ---- data ----
    def load_docs(self, split, max_docs=None, path=None):
        where = path or self.data_path or data.default_dir(self.name)
        return super().load_docs(split, max_docs, str(where))

    def record_to_doc(self, record, index):
        f = data.record_fields(record)
        return Doc(id=f"{f['lang']}/{f['gid']}", query=f["question"], target=f["answer"],
                   meta={"lang": f["lang"], "gid": f["gid"], "source": f["source"], "source_id": f["source_id"]})

    def docs_within_limit(self, docs, limit):
        """``--limit N``: the first N problems of each language (checked before any model loads)."""
        if self.lcr:
            figures.require_lid(self.name)
        return first_of_each_group(docs, limit, lambda d: d.meta["lang"])

    # ---- prompt ----
    def doc_to_text(self, doc):
        return data.prompt(doc.meta["lang"], doc.query)

    def build_prompt_text(self, doc, ctx):
        return self.doc_to_text(doc)

    # ---- scoring ----
    def score_batch(self, docs, texts, ctx):
        """Extract in-process, then check every answer in evalkit's math-verify workers at once."""
        outs = [t[0] if t else "" for t in texts]
        extracted = [answers.extract(text) for text in outs]
        items = [answers.judge_item(doc.target, ext) for doc, ext in zip(docs, extracted)]
        todo = [i for i, item in enumerate(items) if item is not None]
        verdicts = dict(zip(todo, judge_many([items[i] for i in todo], fn=judge_math_verify) if todo else []))
        scored = []
        for i, (doc, text, ext) in enumerate(zip(docs, outs, extracted)):
            v = verdicts.get(i, {"math_verify": 0.0, "status": "no answer"})
            metrics = {"accuracy": float(v["math_verify"])}
            if self.lcr:
                metrics.update(figures.consistency(text, doc.meta["lang"]))
            scored.append(Scored(metrics, extracted=ext,
                                 extra={"lang": doc.meta["lang"], "source": doc.meta["source"],
                                        "gid": doc.meta["gid"], "judge_status": v["status"]}))
        return scored

    def breakdowns(self, samples):
        names = ("accuracy", "lcr_think", "lcr_answer") if self.lcr else ("accuracy",)
        return figures.breakdowns(samples, names)

    def run_extra(self, samples):
        extra = dict(super().run_extra(samples))
        extra["judge_status"] = dict(Counter(s.extra.get("judge_status") for s in samples))
        extra["languages"] = list(self.langs)
        return extra

    def config_fingerprint(self):
        return {**super().config_fingerprint(), "langs": list(self.langs), "lcr": self.lcr}


def _read(path, split, langs):
    return data.read_langs(path, langs)


@register_task
class MMath(MMathBase):
    name = "mmath"
    description = ("MMATH: 374 competition problems (AIME, CNMO, MATH-500) in 10 languages; \\boxed{} answer, "
                   "math-verify; accuracy overall and per language (langs=en+zh+...)")


def _language_task(lang: str) -> type:
    cls = type(f"MMath_{lang}", (MMathBase,), {
        "name": f"mmath_{lang}", "fixed_langs": (lang,), "__module__": __name__,
        "description": f"MMATH in {data.LANG_NAMES[lang]} (374 problems): \\boxed{{}} answer, math-verify"})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


LANGUAGE_TASKS = {lang: _language_task(lang) for lang in data.LANGS}
