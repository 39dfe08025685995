"""The BFCL v4 multi-turn tasks: ``bfcl_multi_turn_<base|miss_func|miss_param|long_context>`` and
``bfcl_multi_turn`` (all four, with BFCL's multi-turn summary), played on evalkit's agent loop.

Each entry is an ``Episode`` as BFCL's inference runs it (``base_handler.inference_multi_turn_FC``
and ``..._prompting``): the user turns one after another; in each, the model calls functions of
BFCL's simulated APIs (a file system, a trading bot, a travel agency, ...) until it answers without
a call, at most 20 steps and one more (BFCL's ``MAXIMUM_STEP_LIMIT``, past which the entry is
force-terminated). A miss_func turn that brings functions back offers them from then on with BFCL's
"I have updated some more functions you can choose from. What about now?". The APIs are BFCL's own
classes, run in evalkit's sandbox with each entry's state kept across turns (``multi_turn_env``);
the model sees what BFCL's executor returns, errors included ("Error during execution: ...").

Scored as BFCL's ``multi_turn_checker`` scores it, in the sandbox too: per turn, the model's decoded
calls and the possible answer's calls run on fresh instances; after each turn whose answer has calls
the instances' public state must be equal and the answer's results must all be among the model's
results so far; a turn whose answer has calls but the model made none fails; an entry cut short
(steps, token or time budget) fails as force-terminated. ``accuracy`` is BFCL's verdict; the
sample keeps the decoded steps, the error type, the turn it failed in and the differences.

Task options (``--task-args``): ``tool_mode=native`` (default: the functions as native tools, as
BFCL's FC handlers send them; ``--tool-parser`` names how a local model writes calls) or
``tool_mode=prompt`` (BFCL's system prompt with the docs, calls written ``[f(a=1)]`` and read with the
``pythonic`` parser); ``max_steps=N`` model replies per user turn before the entry is cut short
(BFCL's is 21; fewer makes a slow model's run shorter, and its cut entries fail as BFCL's would).
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar, Optional

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.agent import Episode
from evalkit.taskapi.agent_task import TOOL_USE_METRICS, AgentTask
from evalkit.taskapi.data import DataSource
from evalkit.taskapi.items import Doc, Scored
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import register_task

from . import data, fc, multi_turn_data, multi_turn_env, prompt, scores
from .task import first_of_each_category

MAXIMUM_STEP_LIMIT = 20
ADDED_FUNCTIONS_FC = "I have updated some more functions you can choose from. What about now?"
ADDED_FUNCTIONS_PROMPTING = "{functions}\n" + ADDED_FUNCTIONS_FC
DESCRIPTIONS = {"multi_turn_base": "multi-turn, everything needed is given",
                "multi_turn_miss_func": "multi-turn, a needed function arrives in a later turn",
                "multi_turn_miss_param": "multi-turn, a needed parameter is missing: ask for it",
                "multi_turn_long_context": "multi-turn, with long distracting API state"}


class BFCLMultiTurnTask(AgentTask):
    categories: ClassVar[tuple] = ()
    family: ClassVar[Optional[str]] = "bfcl"
    version = "1"
    eval_split = "test"
    metrics = (Metric("accuracy"), *TOOL_USE_METRICS)
    known_options: ClassVar[tuple] = ("tool_mode", "max_steps")

    def load_docs(self, split, max_docs=None, path=None):
        where = path or self.data_path or data.default_data_dir(self.name)
        self._data_dir = str(where)
        return super().load_docs(split, max_docs, str(where))

    def record_to_doc(self, record, index):
        user = [m["content"] for m in record["question"][0] if m.get("role") == "user"]
        return Doc(id=record["id"], query=user[-1] if user else "", target=record["ground_truth"],
                   meta={k: record[k] for k in ("category", "question", "function", "missed_function",
                                                "initial_config", "involved_classes", "data_dir", "id")})

    def docs_within_limit(self, docs, limit):
        """``--limit N``: the first N entries of each multi-turn category."""
        return first_of_each_category(docs, limit)

    def native(self) -> bool:
        mode = str(self.options.get("tool_mode", "native")).strip().lower()
        if mode not in ("prompt", "native"):
            raise ValueError(f"task {self.name}: tool_mode must be 'native' or 'prompt', not {mode!r}")
        return mode == "native"

    def episode(self, doc: Doc, ctx) -> Episode:
        m = doc.meta
        native = self.native()
        turns = []
        for i, turn in enumerate(m["question"]):
            if str(i) in m["missed_function"]:
                added = m["missed_function"][str(i)]
                text = ADDED_FUNCTIONS_FC if native else ADDED_FUNCTIONS_PROMPTING.format(functions=added)
                turn = [{"role": "user", "content": text}]
            turns.append([{"role": x["role"], "content": x["content"]} for x in turn])
        if native:
            opening = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
            tools = fc.openai_tools(m["function"], m["category"], hint=False)
            added = {int(k): fc.openai_tools(v, m["category"], hint=False) for k, v in m["missed_function"].items()}
        else:  # BFCL's system prompt over the offered docs, the first turn's messages after it
            first = prompt.chat_messages(turns[0], m["function"], m["category"], ctx.system_prompt, hint=False)
            opening, turns[0] = [first[0]], first[1:]
            tools = [{"type": "function", "function": f} for f in m["function"]]
            added = {int(k): [{"type": "function", "function": f} for f in v] for k, v in m["missed_function"].items()}
        return Episode.build(opening, turns, tools, env=multi_turn_env.api_env(m), added_tools=added,
                             tool_mode="native" if native else "prompt",
                             parser=ctx.tool_parser if native else "pythonic",
                             params=GenParams(max_tokens=4096, temperature=0.0),
                             max_steps=int(self.options.get("max_steps", MAXIMUM_STEP_LIMIT + 1)))

    # ---- scoring ----
    def score_all(self, docs, responses, ctx):
        with multi_turn_env.checker() as check:
            with ThreadPoolExecutor(2) as pool:
                verdicts = list(pool.map(lambda dr: check(dr[0].meta, dr[0].target, dr[1][0]), zip(docs, responses)))
        self._verdicts = {d.id: v for d, v in zip(docs, verdicts)}
        return super().score_all(docs, responses, ctx)

    def score_transcript(self, doc, transcript) -> Scored:
        v = self._verdicts[doc.id]
        extra = {"category": doc.meta["category"], "error_type": v.get("error_type"), "error": v.get("error_message"),
                 "failed_turn": v.get("turn")}
        for key in ("differences", "missing_items"):
            if key in v:
                extra[key] = v[key]
        return Scored({"accuracy": float(v["valid"])}, extracted=v.get("decoded"), extra=extra)

    def run_extra(self, samples):
        from importlib.metadata import PackageNotFoundError, version
        try:
            bfcl_version = version("bfcl-eval")
        except PackageNotFoundError:
            bfcl_version = None
        return {"data": self.__dict__.get("_data_dir"), "bfcl_eval_version": bfcl_version,
                "prompting": "function calling (native tools)" if self.native() else
                "prompt-based: BFCL's default system prompt, calls read with the pythonic parser"}


def _category_task(category: str) -> type:
    name = f"bfcl_{category}"
    cls = type(f"BFCL_{category}", (BFCLMultiTurnTask,), {
        "name": name, "categories": (category,),
        "description": f"BFCL v4 {category}: {DESCRIPTIONS[category]} (agent loop, BFCL's multi-turn checker)",
        "dataset": DataSource(local_reader=multi_turn_data.reader((category,)), licence="Apache-2.0"), "__module__": __name__})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


for _category in multi_turn_data.MULTI_TURN:
    globals()[f"BFCL_{_category}"] = _category_task(_category)


@register_task
class BFCLMultiTurn(BFCLMultiTurnTask):
    name = "bfcl_multi_turn"
    description = "BFCL v4, the four multi-turn categories on the agent loop, and BFCL's multi-turn summary"
    categories = multi_turn_data.MULTI_TURN
    dataset = DataSource(local_reader=multi_turn_data.reader(multi_turn_data.MULTI_TURN), licence="Apache-2.0")
    metrics = (Metric("accuracy"), *TOOL_USE_METRICS,
               MetricGroup("bfcl_summary", ("multi_turn",), True, estimate=scores.summaries))

    def breakdowns(self, samples):
        per = {}
        for s in samples:
            per.setdefault(s.extra["category"], []).append(s.metrics["accuracy"])
        return {f"category:{c}": {"accuracy": mean_metric(per[c])} for c in self.categories if c in per}
