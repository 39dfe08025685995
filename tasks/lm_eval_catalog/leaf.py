"""One lm-eval leaf task driven by evalkit: its docs, its prompts built exactly as lm-eval builds them,
its requests, and its scoring by lm-eval's own filters and ``process_results``.

Few-shot contexts come from lm-eval's ``fewshot_context`` with lm-eval's sampler, seeded as lm-eval
seeds it (``--seed``, default 1234, lm-eval's ``fewshot_random_seed``). lm-eval's random sampler
draws from one generator doc after doc, so the contexts are built in doc order from the first doc
on, whatever the shard or limit: doc *i* gets the examples it gets in lm-eval.

Scoring runs lm-eval's code on lm-eval's objects: responses go onto the ``Instance``s, the task's
filter ensembles run over all instances at once (``apply_filters``), then ``process_results`` per
doc and filter. Metric names are lm-eval's ``metric`` for the ``none`` filter and
``metric,filter`` otherwise (as ``evalkit import-lm-eval`` names them).
"""
from __future__ import annotations

import json
from typing import Optional

from evalkit.util.errors import ConfigError

from . import boundary

OUTPUT_TYPES = {"multiple_choice": "multiple_choice", "loglikelihood": "loglikelihood",
                "generate_until": "generate", "loglikelihood_rolling": "perplexity"}


def metric_key(metric: str, filt: str) -> str:
    return metric if filt in ("none", "", None) else f"{metric},{filt}"


def prompt_hash(prompt) -> str:
    """lm-eval's ``prompt_hash`` of a doc (its first request's first argument), for its samples files."""
    import hashlib
    return hashlib.sha256(str(prompt).encode("utf-8")).hexdigest()


def json_safe(obj):
    """A doc as the samples file can hold it (lm-eval docs may hold bytes, dates, numpy values)."""
    return json.loads(json.dumps(obj, default=str, ensure_ascii=False))


class TaskHookError(ConfigError):
    """A task's own code (``process_docs``, a filter, ``process_results``) raised; names task and doc."""


class Leaf:
    def __init__(self, task, name: str):
        self.task, self.name = task, name
        self.output_type = task.OUTPUT_TYPE
        self._docs: Optional[list] = None
        self._contexts: list = []
        self._setup: Optional[tuple] = None
        self.instances: dict[int, list] = {}

    # ---- data ----
    def docs(self) -> list:
        if self._docs is None:
            try:
                self._docs = list(self.task.eval_docs)
            except ConfigError:
                raise
            except Exception as e:  # noqa: BLE001 (process_docs is the task's own code)
                raise TaskHookError(f"lm-eval task {self.name}: reading its docs failed in the task's "
                                    f"process_docs: {type(e).__name__}: {e}") from e
        return self._docs

    # ---- prompts, in doc order ----
    def _configure(self, rc) -> None:
        setup = (rc.num_fewshot, rc.seed, rc.apply_chat_template, rc.system_prompt, rc.fewshot_as_multiturn)
        if setup == self._setup:
            return
        default = self.task.get_config("num_fewshot")
        if rc.num_fewshot is not None and default != 0:
            self.task.set_config(key="num_fewshot", value=rc.num_fewshot)
        elif default is None:
            self.task.set_config(key="num_fewshot", value=0)
        self.task.set_fewshot_seed(seed=rc.seed)
        self._setup, self._contexts, self.instances = setup, [], {}

    def num_fewshot(self) -> int:
        return int(self.task.get_config("num_fewshot") or 0)

    def _chat_template(self, rc):
        if not rc.apply_chat_template:
            return None
        if rc.render_chat is None:
            raise ConfigError(f"lm-eval task {self.name}: --apply-chat-template needs a backend with a chat template")

        def render(messages, add_generation_prompt=True):
            if not add_generation_prompt:
                raise ConfigError(f"lm-eval task {self.name}: a gen_prefix under a chat template (continuing the "
                                  "assistant's message) is not supported yet")
            return rc.render_chat(messages)
        return render

    def context(self, i: int, rc):
        self._configure(rc)
        docs = self.docs()
        chat = self._chat_template(rc)
        while len(self._contexts) <= i:
            doc = docs[len(self._contexts)]
            self._contexts.append(self._hook("building the prompt", len(self._contexts), lambda: self.task.fewshot_context(
                doc, num_fewshot=self.num_fewshot(), system_instruction=rc.system_prompt,
                apply_chat_template=bool(rc.apply_chat_template),
                fewshot_as_multiturn=bool(rc.apply_chat_template) and rc.fewshot_as_multiturn is not False,
                chat_template=chat, gen_prefix=self.task.doc_to_prefix(doc))))
        return self._contexts[i]

    def requests(self, i: int, rc) -> list:
        ctx = self.context(i, rc)
        doc = self.docs()[i]
        insts = self._hook("building its requests", i, lambda: self.task.construct_requests(
            doc=doc, ctx=ctx, metadata=(self.name, i, self.task.config.repeats),
            apply_chat_template=bool(rc.apply_chat_template), chat_template=self._chat_template(rc)))
        insts = insts if isinstance(insts, list) else [insts]
        self.instances[i] = insts
        where = f"lm-eval task {self.name}, doc {i}"
        return [boundary.to_request(inst, rc.gen_overrides, (rc.seed, self.name, "sample", i), where)
                for inst in insts]

    # ---- scoring ----
    def filter_names(self) -> list[str]:
        return [f.name for f in getattr(self.task, "_filters", [])] or ["none"]

    def score(self, ids: list[int], responses: list[list], rc) -> list[dict]:
        """Per doc: {"metrics": {filter: {metric: value}}, "filtered": {filter: [...]}, "resps": [...]}."""
        insts = []
        for i, resp in zip(ids, responses):
            if i not in self.instances:
                self.requests(i, rc)
            for inst, r in zip(self.instances[i], resp):
                inst.resps = boundary.to_lm_eval(inst.request_type, r, inst.repeats)
                inst.filtered_resps = {}
                insts.append(inst)
        self.task._instances = insts
        self._hook("applying its filters", None, self.task.apply_filters)
        out = []
        for i in ids:
            reqs = sorted(self.instances[i], key=lambda x: x.idx)
            doc = self.docs()[i]
            per_filter = {}
            for f in reqs[0].filtered_resps:
                per_filter[f] = self._hook("process_results", i, lambda: self.task.process_results(
                    doc, [r.filtered_resps[f] for r in reqs]))
            out.append({"metrics": per_filter, "filtered": {f: json_safe([r.filtered_resps[f] for r in reqs])
                                                            for f in per_filter},
                        "resps": json_safe([r.resps for r in reqs]), "prompt_hash": prompt_hash(reqs[0].arguments[0]),
                        "continuations": [r.args[1] for r in reqs if r.request_type == "loglikelihood"]})
        return out

    def _hook(self, what: str, i: Optional[int], fn):
        try:
            return fn()
        except ConfigError:
            raise
        except Exception as e:  # noqa: BLE001 (the task's own Python: name it, keep the traceback)
            at = f", doc {i}" if i is not None else ""
            raise TaskHookError(f"lm-eval task {self.name}{at}: {what} raised {type(e).__name__}: {e} "
                                f"(traceback with --verbose)") from e

    # ---- what it reports ----
    def aggregations(self) -> dict:
        return dict(self.task.aggregation() or {})

    def directions(self) -> dict:
        return {k: bool(v) if v is not None else True for k, v in (self.task.higher_is_better() or {}).items()}

    def target(self, i: int):
        return json_safe(self._hook("doc_to_target", i, lambda: self.task.doc_to_target(self.docs()[i])))
