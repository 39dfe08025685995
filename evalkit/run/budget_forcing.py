"""Test-time scaling from one trace (``--thinking-budgets 256,512,1024``): accuracy against thinking
budget in one run, by budget forcing as in s1 (Muennighoff et al. 2025, "s1: Simple test-time
scaling", §3.1): the trace is cut at B tokens, closed with the end-of-thinking marker, and the
model writes its answer from there.

How a run goes (the answer phase of ``evalkit.run.runner``, for every generation request):

1. **trace**: the request as the task made it, with ``max_tokens`` = the largest budget and the
   end-of-thinking marker (``</think>``, or ``--model-args think_end=``) as its only stop; generated
   once, cached like any request.
2. **forced answers**: for each budget B, the prompt as text (the chat template rendered by the
   backend for chat requests) + the trace's first B tokens (by the model's tokenizer; the whole trace
   when it ended before B) + the marker; generated with the task's stops, sampling and seed, and
   ``--forced-answer-tokens`` new tokens (default ``ANSWER_TOKENS``). A trace that ended before B gives
   the same request for every budget from its length up, so it is generated (and cached) once: a
   rerun with other budgets under the same largest one generates only the new forced answers.
3. each budget's completion (trace cut + marker + answer) is scored by the task as usual (the trace
   split off by ``evalkit.scoring.thinking``); the record's task entry is the largest budget's, and
   ``thinking_budget:B`` breakdowns give every metric per budget with its CI, beside
   ``extra.thinking_budgets`` (the budgets, the share of traces cut at each, the mean trace tokens
   used); each sample row keeps its per-budget metrics, extracted answer and trace length.

Greedy decoding makes this equal to separate runs: a run with the single budget B generates the
same first B trace tokens, so its forced-answer requests are the very requests this run made (the
test runs both and finds them cached). A model that answered without opening a trace (no
``<think>`` in the prompt or its text) is scored on that text at every budget (``no_trace``).
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Callable, Optional

from evalkit.scoring.thinking import ThinkingConfig, prompt_opens_trace
from evalkit.taskapi.requests import Completion, GenerateRequest

log = logging.getLogger(__name__)

ANSWER_TOKENS = 256


@dataclass(frozen=True)
class BudgetForcing:
    budgets: tuple          # ascending, distinct, >= 1
    answer_tokens: int = ANSWER_TOKENS

    @classmethod
    def parse(cls, budgets, answer_tokens=None, flag: str = "--thinking-budgets") -> "BudgetForcing":
        """From ``"256,512"`` or a list of ints; a one-line error naming ``flag`` otherwise."""
        items = str(budgets).replace("+", ",").split(",") if isinstance(budgets, str) else list(budgets or [])
        try:
            values = sorted({int(str(b).strip()) for b in items if str(b).strip()})
        except ValueError:
            raise ValueError(f"{flag} {budgets!r}: expected token counts such as 256,512,1024") from None
        if not values or values[0] < 1:
            raise ValueError(f"{flag} {budgets!r}: expected one or more token counts >= 1")
        tokens = ANSWER_TOKENS if answer_tokens is None else int(answer_tokens)
        if tokens < 1:
            raise ValueError(f"--forced-answer-tokens {answer_tokens!r}: expected a token count >= 1")
        return cls(tuple(values), tokens)

    def to_record(self) -> dict:
        return {"budgets": list(self.budgets), "answer_tokens": self.answer_tokens}

    @property
    def largest(self) -> int:
        return self.budgets[-1]


@dataclass
class Trace:
    """One request's trace: its text, token count, the prompt as text, whether the model thought at
    all and whether the trace ended before the largest budget."""

    text: str
    tokens: int
    prefix: str
    thought: bool
    ended: bool

    def cut_at(self, budget: int, largest: int) -> bool:
        return self.tokens > budget or (not self.ended and budget >= largest)


def trace_request(req: GenerateRequest, f: BudgetForcing, cfg: ThinkingConfig) -> GenerateRequest:
    if req.params.n != 1:
        raise ValueError("--thinking-budgets: one completion per problem (no --repeats / n > 1)")
    return dataclasses.replace(req, params=dataclasses.replace(req.params, max_tokens=f.largest, stop=(cfg.end,)))


def prompt_text(req: GenerateRequest, render_chat: Optional[Callable]) -> str:
    if req.prompt is not None:
        return req.prompt
    if render_chat is None:
        raise ValueError("--thinking-budgets needs the prompt as text: a backend that renders its chat "
                         "template (hf, vllm) or a text prompt")
    return render_chat(req.message_dicts())


def cut(text: str, budget: int, encode: Callable, decode: Callable) -> tuple[str, int]:
    """(the first ``budget`` tokens of ``text`` as text, their count)."""
    ids = encode(text)
    if len(ids) <= budget:
        return text, len(ids)
    return decode(ids[:budget]), budget


def forced_request(req: GenerateRequest, trace: Trace, budget: int, f: BudgetForcing, cfg: ThinkingConfig,
                   encode: Callable, decode: Callable) -> tuple[GenerateRequest, str, int]:
    """(the forced-answer request at ``budget``, the trace text it continues, its tokens)."""
    text, used = cut(trace.text, budget, encode, decode)
    params = dataclasses.replace(req.params, max_tokens=f.answer_tokens)
    return GenerateRequest(prompt=trace.prefix + text + cfg.end, params=params), text, used


def answer(p, engine, f: BudgetForcing, cfg: ThinkingConfig, tokenizer) -> tuple[dict, dict]:
    """({budget: answers by the plan's request keys}, {budget: {request key: trace info}}).
    ``engine`` answers every request (``evalkit.run.engine.Engine``); ``tokenizer`` has ``encode``
    (no special tokens) and ``decode``."""
    requests = p.all_requests()
    if any(r.kind == "episode" for r in requests):
        raise ValueError("--thinking-budgets does not apply to agent tasks")
    gens = [r for r in requests if isinstance(r, GenerateRequest)]
    context = getattr(p.ctx, "max_length", None)
    if context and f.largest + f.answer_tokens >= context:
        raise ValueError(f"--thinking-budgets {f.largest}: the largest budget and the {f.answer_tokens} answer tokens "
                         f"do not fit the model's context of {context:,} tokens (before any prompt); give budgets "
                         f"under {context - f.answer_tokens:,}")
    answers = engine.run([r for r in requests if not isinstance(r, GenerateRequest)]
                         + [trace_request(r, f, cfg) for r in gens])
    encode = lambda s: tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
    decode = lambda ids: tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
    traces, forced, info = {}, {}, {b: {} for b in f.budgets}
    for r in gens:
        comp = answers[trace_request(r, f, cfg).key()][0]
        prefix = prompt_text(r, p.ctx.render_chat)
        thought = prompt_opens_trace(prefix, cfg) or cfg.start in comp.text
        traces[r.key()] = trace = Trace(comp.text, len(encode(comp.text)), prefix, thought, comp.finish_reason != "length")
        if not thought:
            continue
        for b in f.budgets:
            req, text, used = forced_request(r, trace, b, f, cfg, encode, decode)
            forced[(r.key(), b)] = (req, text)
            info[b][r.key()] = {"trace_tokens": used, "cut": trace.cut_at(b, f.largest)}
    if gens and not any(t.thought for t in traces.values()):
        log.warning("--thinking-budgets: no answer of the %d opened a thinking trace (%s): every budget gives the "
                    "same answers and the curve is flat; use a reasoning model, or its thinking chat template "
                    "(--chat-template-kwargs, --reasoning-effort)", len(gens), cfg.start)
    done = engine.run([req for req, _ in forced.values()])
    out = {}
    for b in f.budgets:
        per = {k: v for k, v in answers.items()}
        for r in gens:
            trace = traces[r.key()]
            if not trace.thought:
                per[r.key()] = [Completion(trace.text, "stop")]
                info[b][r.key()] = {"trace_tokens": 0, "cut": False, "no_trace": True}
                continue
            req, text = forced[(r.key(), b)]
            a = done[req.key()][0]
            per[r.key()] = [Completion(text + cfg.end + a.text, a.finish_reason)]
        out[b] = per
    return out, info


def tokenizer_of(backend):
    tok = backend.text_tokenizer() if hasattr(backend, "text_tokenizer") else getattr(backend, "tokenizer", None)
    if tok is None or not hasattr(tok, "decode"):
        raise ValueError(f"--thinking-budgets needs the model's tokenizer to cut traces; backend {backend.name} has none")
    return tok


def _generate_key(reqs: list) -> Optional[str]:
    return next((r.key() for r in reqs if isinstance(r, GenerateRequest)), None)


def annotate_samples(samples: list, by_budget: dict, keys: list, info: dict) -> None:
    """Each of ``samples`` (the largest budget's) gets ``extra.thinking_budgets``: per budget its
    metrics, extracted answer, scored responses (what ``evalkit score`` rescores per budget), trace
    tokens used and whether the trace was cut there. ``by_budget``: {budget: samples aligned with
    ``samples``}; ``keys``: each sample's key into ``info`` ({budget: {key: trace info}}), None to skip."""
    for j, (sample, key) in enumerate(zip(samples, keys)):
        if key is None:
            continue
        per = {}
        for b, scored in by_budget.items():
            s = scored[j]
            per[str(b)] = {"metrics": dict(s.metrics), "extracted": s.extracted, "responses": s.responses,
                           **info[b].get(key, {})}
        sample.extra["thinking_budgets"] = per


def attach_entry(task, entry, by_budget: dict, keys: list, info: dict, f: BudgetForcing, seed) -> None:
    """The scaling curve in one generation task's entry: ``thinking_budget:B`` breakdowns (every
    metric with its CI) and ``extra.thinking_budgets`` (cut share, mean trace tokens, no-trace count)."""
    keys = [k for k in keys if k is not None]
    summary = {}
    for b, samples in sorted(by_budget.items()):
        metrics = task.aggregate(samples, seed)
        entry.breakdowns[f"thinking_budget:{b}"] = {k: v.to_dict() for k, v in metrics.items()}
        rows = [info[b].get(k, {}) for k in keys]
        n = max(1, len(rows))
        summary[str(b)] = {"cut_share": sum(bool(r.get("cut")) for r in rows) / n,
                           "mean_trace_tokens": sum(r.get("trace_tokens", 0) for r in rows) / n,
                           "no_trace": sum(bool(r.get("no_trace")) for r in rows)}
    entry.extra["thinking_budgets"] = {**f.to_record(), "per_budget": summary}


def annotate(p, scored_by: dict, info: dict) -> None:
    """``annotate_samples`` for every generation task of the plan ``p``."""
    largest = max(scored_by)
    for i, tr in enumerate(p.task_runs):
        if tr.task.output_type == "generate":
            annotate_samples(scored_by[largest][i].samples, {b: sc[i].samples for b, sc in scored_by.items()},
                             [_generate_key(reqs) for reqs in tr.requests], info)


def attach(p, entries: dict, scored_by: dict, info: dict, f: BudgetForcing) -> None:
    """``attach_entry`` for every generation task of the plan ``p``."""
    for i, tr in enumerate(p.task_runs):
        if tr.task.output_type == "generate":
            attach_entry(tr.task, entries[tr.task.name], {b: sc[i].samples for b, sc in scored_by.items()},
                         [_generate_key(reqs) for reqs in tr.requests], info, f, p.config.seed)


def run_answers(p, backend, cache, progress) -> tuple[dict, dict, dict]:
    """({budget: answers}, {budget: trace info}, engine counters) for the plan ``p``."""
    from evalkit.run.engine import Engine
    f = BudgetForcing.parse(**p.config.budget_forcing)
    cfg = ThinkingConfig.from_options(p.config.thinking)
    engine = Engine(backend, cache, progress=progress)
    answers, info = answer(p, engine, f, cfg, tokenizer_of(backend))
    return answers, info, dict(engine.stats)


def curve_lines(run) -> list:
    """``--thinking-budgets`` curves in words, one line per generation task: its first metric at each
    budget with the CI and the share of traces cut there."""
    out = []
    for name, entry in run.tasks.items():
        info = (entry.extra or {}).get("thinking_budgets")
        if not info or not entry.metrics:
            continue
        metric = next(iter(entry.metrics))
        parts = []
        for b in info["budgets"]:
            v = entry.breakdowns.get(f"thinking_budget:{b}", {}).get(metric)
            if v is None:
                continue
            ci = f" [{v['ci_low']:.3f}, {v['ci_high']:.3f}]" if v.get("ci_low") is not None else ""
            parts.append(f"{b}: {v['value']:.3f}{ci} ({info['per_budget'][str(b)]['cut_share']:.0%} cut)")
        out.append(f"{name} {metric} by thinking budget: " + "; ".join(parts))
    return out
