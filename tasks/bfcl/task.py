"""The BFCL v4 single-turn tasks: ``bfcl_<category>`` for each category, ``bfcl_single_turn`` for all.

Each item is prompted as BFCL prompts a prompt-based model (``prompt``: its system prompt with the
function docs, then the question's messages; ``--apply-chat-template`` renders them with the
model's template as BFCL does, without it they are joined as ``User:``/``Assistant:`` text),
generated greedily, decoded and checked as BFCL's checker does (``verdict``). Reported: ``accuracy``
(BFCL's verdict) with its CI, and for categories checked against possible answers
``invalid_format``, ``unknown_function`` and ``wrong_arg_type``; every sample keeps the decoded
calls (``extracted``) and BFCL's error type (``extra.error_type``).

``bfcl_single_turn`` holds all 13 categories (``--limit N``: the first N of each), reports each
category as a breakdown and BFCL's leaderboard summaries (``scores``: non-live and live AST,
irrelevance and relevance detection), each with its interval.

Task options (``--task-args``): ``tool_mode=native`` prompts as BFCL prompts function-calling
models (``fc``: the question's messages, the docs as native tools, the reply's tool calls as the
answer; ``--tool-parser`` names how the model writes them); ``underscore_to_dot=true`` expects
dotted function names with underscores, as BFCL does for models whose API forbids dots (on in
native mode, whose tool names have underscores for dots; prompt-based models keep the dots).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import ClassVar, Optional, Sequence

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.data import DataSource, FieldError
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, GenerationTask, Scored, first_of_each_group, register_task

from evalkit.taskapi.agent import canonical_json
from evalkit.taskapi.requests import ToolChatRequest

from . import data, fc, prompt, scores
from .verdict import judge, judge_calls, json_safe

AST_METRICS = (Metric("accuracy"), Metric("invalid_format", higher_is_better=False),
               Metric("unknown_function", higher_is_better=False), Metric("wrong_arg_type", higher_is_better=False))
DESCRIPTIONS = {
    "simple_python": "one Python function, one call", "simple_java": "one Java method, one call",
    "simple_javascript": "one JavaScript function, one call", "multiple": "several functions, call the right one",
    "parallel": "one function, several calls", "parallel_multiple": "several functions, several calls",
    "irrelevance": "no function fits: make no call", "live_simple": "user-contributed, one function, one call",
    "live_multiple": "user-contributed, several functions, one call",
    "live_parallel": "user-contributed, several calls", "live_parallel_multiple": "user-contributed, several "
    "functions and calls", "live_irrelevance": "user-contributed, no function fits",
    "live_relevance": "user-contributed, some call is expected"}


class BFCLTask(GenerationTask):
    """One or more BFCL v4 single-turn categories, prompt-based."""

    categories: ClassVar[tuple] = ()
    family: ClassVar[Optional[str]] = "bfcl"
    version = "1"
    eval_split = "test"
    num_fewshot = 0
    #: BFCL asks for up to 4,096 new tokens (less where the context ends first); greedy
    gen_params = GenParams(max_tokens=4096, temperature=0.0)
    #: without a chat template the next turn would begin here
    plain_stop: ClassVar[tuple] = ("\nUser:",)
    known_options: ClassVar[tuple] = ("underscore_to_dot", "tool_mode")

    def load_docs(self, split, max_docs=None, path=None):
        where = path or self.data_path or data.default_data_dir(self.name)
        self._data_dir = str(where)
        return super().load_docs(split, max_docs, str(where))

    def eval_docs(self):
        """The docs, after making sure the answers can be decoded (Java and JavaScript answers need
        tree-sitter): a missing package fails here, before any model loads."""
        from . import decode_tree
        for language in sorted({data.language_of(c) for c in self.categories} - {"python"}):
            decode_tree.parser(language)
        return super().eval_docs()

    def record_to_doc(self, record, index):
        for name, problem in (("question", data.question_problem(record.get("question"))),
                              ("function", data.function_problem(record.get("function")))):
            if problem:
                raise FieldError(name, problem)
        category = record["category"]
        question = record["question"][0]
        user = [m["content"] for m in question if m["role"] == "user"]
        return Doc(id=record["id"], query=user[-1] if user else "", target=record.get("ground_truth"),
                   meta={"category": category, "question": question, "functions": record["function"]})

    def docs_within_limit(self, docs: Sequence[Doc], limit) -> list[Doc]:
        """``--limit N``: the first N entries of each BFCL category."""
        return first_of_each_category(docs, limit)

    # ---- prompts ----
    def messages(self, doc, ctx):
        return prompt.chat_messages(doc.meta["question"], doc.meta["functions"], doc.meta["category"],
                                    ctx.system_prompt)

    def build_prompt_text(self, doc, ctx):
        return prompt.plain_text(self.messages(doc, ctx))

    def params(self, doc, ctx):
        p = super().params(doc, ctx)
        if not ctx.apply_chat_template and "stop" not in ctx.gen_overrides:
            p = replace(p, stop=tuple(p.stop) + self.plain_stop)
        return p

    def run_extra(self, samples):
        from importlib.metadata import PackageNotFoundError, version
        try:
            bfcl_version = version("bfcl-eval")
        except PackageNotFoundError:
            bfcl_version = None
        prompting = ("function calling: the docs as native tools, the reply's tool calls as the answer" if self.native()
                     else "prompt-based: BFCL's default system prompt, answers decoded as BFCL decodes them")
        return {"data": self.__dict__.get("_data_dir"), "bfcl_eval_version": bfcl_version, "prompting": prompting}

    def native(self) -> bool:
        mode = str(self.options.get("tool_mode", "prompt")).strip().lower()
        if mode not in ("prompt", "native"):
            raise ValueError(f"task {self.name}: tool_mode must be 'prompt' or 'native', not {mode!r}")
        return mode == "native"

    def requests(self, doc, ctx):
        if not self.native():
            return super().requests(doc, ctx)
        question = [{"role": m["role"], "content": m["content"]} for m in doc.meta["question"]]
        if ctx.system_prompt:
            question.insert(0, {"role": "system", "content": ctx.system_prompt})
        tools = fc.openai_tools(doc.meta["functions"], doc.meta["category"])
        return [ToolChatRequest(canonical_json(question), canonical_json(tools), self.params(doc, ctx), ctx.tool_parser)]

    # ---- scoring ----
    def underscore_to_dot(self) -> bool:
        value = self.options.get("underscore_to_dot", self.native())
        return value.strip().lower() in ("1", "true", "yes") if isinstance(value, str) else bool(value)

    def score_all(self, docs, responses, ctx):
        if not self.native():
            return super().score_all(docs, responses, ctx)
        out = []
        for doc, r in zip(docs, responses):
            comp = r[0][0]
            calls, problem = fc.answer_of(comp.tool_calls)
            v = judge_calls(doc.meta["category"], doc.meta["functions"], doc.target, calls, problem,
                            self.underscore_to_dot())
            s = Scored(v.metrics, extracted=json_safe(v.calls), responses=[comp.text],
                       extra={"category": doc.meta["category"], "error_type": v.error_type, "error": v.message,
                              "tool_calls": comp.tool_calls, "tool_parse_error": comp.tool_error})
            out.append(self.sample_of(doc, r, [comp.text], s, ctx))
        return out

    def score_text(self, doc, text):
        v = judge(doc.meta["category"], doc.meta["functions"], doc.target, text, self.underscore_to_dot())
        return Scored(v.metrics, extracted=json_safe(v.calls),
                      extra={"category": doc.meta["category"], "error_type": v.error_type, "error": v.message})


def first_of_each_category(docs: Sequence[Doc], limit) -> list[Doc]:
    """The first ``limit`` docs of each category (a fraction below 1: of each category's)."""
    return first_of_each_group(docs, limit, lambda d: d.meta["category"])


def _metrics_of(category: str) -> tuple:
    return AST_METRICS if data.kind_of(category) == "ast" else (Metric("accuracy"),)


def _category_task(category: str) -> type:
    name = f"bfcl_{category}"
    cls = type(f"BFCL_{category}", (BFCLTask,), {
        "name": name, "categories": (category,), "metrics": _metrics_of(category),
        "description": f"BFCL v4 {category}: {DESCRIPTIONS[category]} (prompt-based, BFCL's AST checker)",
        "dataset": DataSource(local_reader=data.reader((category,)), licence="Apache-2.0"), "__module__": __name__})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


for _category in data.CATEGORIES:
    globals()[f"BFCL_{_category}"] = _category_task(_category)


@register_task
class BFCLSingleTurn(BFCLTask):
    name = "bfcl_single_turn"
    description = ("BFCL v4, all 13 single-turn categories (prompt-based): per-category accuracy and BFCL's "
                   "non-live/live/irrelevance/relevance summaries")
    categories = data.CATEGORIES
    dataset = DataSource(local_reader=data.reader(data.CATEGORIES), licence="Apache-2.0")
    metrics = (Metric("accuracy"), *(Metric(m.name, False, required=False) for m in AST_METRICS[1:]),
               MetricGroup("bfcl_summary", scores.SUMMARIES, True, estimate=scores.summaries))

    def breakdowns(self, samples):
        out = {}
        per = defaultdict(list)
        for s in samples:
            per[s.extra["category"]].append(s)
        for category in self.categories:
            rows = per.get(category)
            if rows:
                out[f"category:{category}"] = {
                    m.name: mean_metric([s.metrics[m.name] for s in rows], m.higher_is_better)
                    for m in _metrics_of(category)}
        return out

    def run_extra(self, samples):
        summary = scores.summaries(samples)
        return {**super().run_extra(samples), "bfcl_overall": scores.overall_with_missing_as_zero(summary),
                "not_evaluated": ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                                  "multi_turn_long_context", "web_search", "memory", "format_sensitivity"],
                "multi_turn": "the bfcl_multi_turn task"}
