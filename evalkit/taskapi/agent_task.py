"""``AgentTask``: the task shape for tool use. A task says how a doc becomes an ``Episode``
(``episode``) and how a played ``Transcript`` scores (``score_transcript``); the run's agent loop
plays the episodes. Each sample keeps the whole transcript as its response, and the figures every
agent task reports beside its own (``TOOL_USE_METRICS``, from ``tool_use_figures``):

* ``turns``: model turns used; ``tool_calls``: calls made; ``tokens``: completion tokens used;
* ``invalid_call_format``: replies whose call could not be read (bad JSON, not literals) and calls
  whose arguments are not a JSON object;
* ``unknown_function``: calls to a function the episode did not offer;
* ``wrong_arg_type``: arguments whose JSON type is not the schema's, or a required one missing;
* ``tool_errors``: calls that ran and failed (an exception, or the sandbox stopped them).
"""
from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Sequence

from evalkit.scoring.metric import Metric
from evalkit.taskapi.agent import Episode, Transcript
from evalkit.taskapi.items import Doc, RunContext, Sample, Scored
from evalkit.taskapi.task import Task, run_params

TOOL_USE_METRICS = (Metric("turns", higher_is_better=False), Metric("tool_calls", higher_is_better=False),
                    Metric("tokens", higher_is_better=False), Metric("invalid_call_format", higher_is_better=False),
                    Metric("unknown_function", higher_is_better=False), Metric("wrong_arg_type", higher_is_better=False),
                    Metric("tool_errors", higher_is_better=False))

_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
               "array": (list,), "object": (dict,), "null": (type(None),)}


def type_problems(arguments: dict, schema: dict) -> list[str]:
    """Arguments whose JSON type differs from the function schema's (top level), and missing required ones."""
    props = (schema or {}).get("properties") or {}
    out = [f"{k}: missing" for k in (schema or {}).get("required") or [] if k not in arguments]
    for k, v in arguments.items():
        want = (props.get(k) or {}).get("type")
        kinds = want if isinstance(want, list) else [want] if want else []
        ok = [t for k_ in kinds for t in _JSON_TYPES.get(k_, (object,))]
        if ok and (not isinstance(v, tuple(ok)) or (isinstance(v, bool) and bool not in ok)):
            out.append(f"{k}: {type(v).__name__} is not {want}")
    return out


def tool_use_figures(t: Transcript, tools: list) -> dict:
    schemas = {(x.get("function") or x).get("name"): (x.get("function") or x).get("parameters") or {} for x in tools}
    calls = t.calls()
    results = [r for turn in t.turns for r in turn["results"]]
    unknown = sum(c["name"] not in schemas for c in calls)
    return {"turns": len(t.turns), "tool_calls": len(calls), "tokens": t.tokens,
            "invalid_call_format": sum(bool(turn.get("parse_error")) for turn in t.turns)
            + sum("raw_arguments" in c for c in calls),
            "unknown_function": unknown,
            "wrong_arg_type": sum(bool(type_problems(c["arguments"], schemas[c["name"]])) for c in calls
                                  if c["name"] in schemas and "raw_arguments" not in c),
            "tool_errors": sum("error" in r for r in results) - unknown - sum("raw_arguments" in c for c in calls)}


class AgentTask(Task):
    output_type: ClassVar[str] = "agent"

    def episode(self, doc: Doc, ctx: RunContext) -> Episode:
        raise NotImplementedError

    def score_transcript(self, doc: Doc, transcript: Transcript) -> Scored:
        raise NotImplementedError

    def requests(self, doc, ctx):
        """The doc's episode, its generation parameters with the run's overrides (``--gen-kwargs``)."""
        ep = self.episode(doc, ctx)
        return [replace(ep, params=run_params(ep.params, ctx, self.name, doc.id))]

    def prompt_of(self, doc, ctx):
        """What the model reads first: the opening messages and the first user turn, or the agent's
        opening line when a simulated user answers it (``--write-out``)."""
        ep = self.episode(doc, ctx)
        if ep.user_sim is not None:  # the agent opens; the simulated user speaks next
            return ep.opening() + [{"role": "assistant", "content": ep.user_sim.first_message}]
        return ep.opening() + ep.turn_messages(0)

    def score_all(self, docs: Sequence[Doc], responses: Sequence[list], ctx: RunContext) -> list[Sample]:
        out = []
        for doc, (t,) in zip(docs, responses):
            ep = self.requests(doc, ctx)[0]
            s = self.score_transcript(doc, t)
            tools = ep.tools_at(len(ep.user_turns))
            s.metrics = {**s.metrics, **tool_use_figures(t, tools)}
            s.extra = {**(s.extra or {}), "stop_reason": t.stop_reason, "seconds": round(t.seconds, 3)}
            s.responses = [t.to_json()]
            s.prompt = ep.opening()
            out.append(self.as_sample(doc, [t], s, ctx))
        return out
