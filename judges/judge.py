"""Running a judge model: prompts go through the engine and its cache, verdicts are parsed, failures
are retried a bounded number of times and then counted, never dropped.

A judge is any backend evalkit runs (``hf:``, ``vllm:``, ``openai:``). Each judgment is one chat
(the template's system prompt, then the filled-in user prompt) generated greedily, as FastChat asks
GPT-4 at temperature 0. The engine caches it under the judge's identity and the prompt, so a
rerun re-judges nothing.

When the text has no verdict (``parsing``), the judgment is retried up to ``retries`` times with
seeded sampling (a greedy retry would repeat itself). What still fails is a *parse failure*, and
counted as one. Then, where the backend can score text (``loglikelihood`` over the chat-rendered
prompt: hf, vllm, and openai servers with a tokenizer), the verdict is *constrained*: the judge's
own text is continued with ``Final verdict: [[`` (``Rating: [[``) and the allowed verdict
(``A``/``B``/``C``, ``1``..``10``) with the highest log-probability is taken. That is
guided decoding restricted to the verdict slot, works on every such backend, and is recorded as
``source="constrained"`` so the parse-failure figures stay what they are.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional, Sequence

from evalkit.run.engine import Engine
from evalkit.taskapi.judged import JudgeAsk
from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest
from evalkit.scoring.stats import derive_seed
from evalkit.scoring.thinking import separate

from .parsing import parse
from .templates import JudgeTemplate

log = logging.getLogger(__name__)

# the text that opens the verdict slot after the judge's own words
CONSTRAIN_PREFIX = {"[[rating]]": "\n\nRating: [[", "[[A]]": "\n\nFinal verdict: [["}
SOURCES = ("parsed", "retry", "constrained", "failed")


@dataclass
class JudgeCall:
    """One thing to judge: a template and the values for its placeholders (``meta`` is the caller's,
    ``tag`` names it within its doc, as the judge layer's asks are named)."""

    template: JudgeTemplate
    values: dict
    meta: dict = field(default_factory=dict)
    tag: str = ""

    def prompt(self) -> str:
        return self.template.render(**self.values)

    def ask(self, max_tokens: int) -> JudgeAsk:
        """The judge layer's ask: the template's system message and the filled-in prompt."""
        return JudgeAsk(self.tag, self.template.messages(self.prompt()), int(max_tokens))


@dataclass
class Judgment:
    template: str
    template_version: str
    user_prompt: str
    outputs: list = field(default_factory=list)  # every attempt's text, the greedy one first
    errors: list = field(default_factory=list)   # the parse error of each failed attempt
    value: object = None                          # rating (float) or "A"/"B"/"C"; None: unresolved
    source: str = "failed"                        # parsed | retry | constrained | failed
    constrained: Optional[dict] = None            # verdict -> log-probability, when constrained
    meta: dict = field(default_factory=dict)

    @property
    def parse_failed(self) -> bool:
        """No verdict in the judge's text after every retry (whether or not constraining found one)."""
        return self.source in ("constrained", "failed")

    def to_dict(self) -> dict:
        return {"template": self.template, "template_version": self.template_version, "value": self.value,
                "source": self.source, "attempts": len(self.outputs), "errors": self.errors,
                "outputs": self.outputs, "constrained": self.constrained, "user_prompt": self.user_prompt}


def judge_name(spec: str, backend) -> str:
    prefix = spec.split(":", 1)[0]
    return f"{prefix}:{backend.display_name}"


class Judge:
    def __init__(self, backend, cache, spec: str, max_tokens: int = 512, retries: int = 2,
                 retry_temperature: float = 0.7, constrain: str = "auto", seed: int = 1234, progress=False):
        if constrain not in ("auto", "on", "off"):
            raise ValueError(f"--constrain {constrain!r}: expected auto, on or off")
        if retries < 0:
            raise ValueError("--judge-retries must be >= 0")
        self.backend = backend
        self.engine = Engine(backend, cache, progress=progress)
        self.spec = spec
        self.name = judge_name(spec, backend)
        self.max_tokens = int(max_tokens)
        self.retries = int(retries)
        self.retry_temperature = float(retry_temperature)
        self.seed = seed
        self.constrain_mode = constrain
        self.constrain_error: Optional[str] = None
        self._can_constrain: Optional[bool] = None

    # ---- capability ------------------------------------------------------------------------------
    def can_constrain(self) -> bool:
        if self.constrain_mode == "off":
            return False
        if self._can_constrain is None:
            try:
                self.backend.apply_chat_template([{"role": "user", "content": "ping"}])
                self._can_constrain = True
            except Exception as e:  # no tokenizer / chat template on this backend
                self._can_constrain = False
                self.constrain_error = f"backend cannot render the judge's chat as text: {e}"
                if self.constrain_mode == "on":
                    raise ValueError(f"--constrain on: {self.constrain_error}") from None
        return self._can_constrain

    def describe(self) -> dict:
        return {"spec": self.spec, "name": self.name, "backend": self.backend.name,
                "identity": self.backend.identity(), "identity_hash": self.backend.identity_hash(),
                "max_tokens": self.max_tokens, "temperature": 0.0, "retries": self.retries,
                "retry_temperature": self.retry_temperature, "constrain": self.constrain_mode,
                "constrain_available": self.can_constrain(), "constrain_error": self.constrain_error}

    # ---- judging ---------------------------------------------------------------------------------
    def run(self, calls: Sequence[JudgeCall]) -> list[Judgment]:
        """Judge every call: one greedy pass, then retries for the failures, then constraining."""
        asks = [c.ask(self.max_tokens) for c in calls]
        messages = [a.messages for a in asks]
        out = [Judgment(c.template.name, c.template.version, a.messages[-1][1], meta=dict(c.meta))
               for c, a in zip(calls, asks)]
        first = [a.request() for a in asks]  # greedy, as every judged metric's ask
        todo = list(range(len(calls)))
        for attempt in range(self.retries + 1):
            if not todo:
                break
            if attempt == 0:
                reqs = {i: first[i] for i in todo}
            else:
                reqs = {i: GenerateRequest(messages=messages[i], params=GenParams(
                    max_tokens=self.max_tokens, temperature=self.retry_temperature,
                    seed=derive_seed(self.seed, "judge-retry", first[i].key(), attempt) % (2 ** 31)))
                    for i in todo}
            answers = self.engine.run(list(reqs.values()))
            for i, req in reqs.items():
                text = answers[req.key()][0].text
                j = out[i]
                j.outputs.append(text)
                c0 = answers[req.key()][0]  # a reasoning judge's verdict is after its trace
                parsed = parse(calls[i].template.output_format, separate(
                    text, finish_reason=c0.finish_reason, field_trace=c0.trace, field_open=c0.trace_open).answer)
                if parsed.ok:
                    j.value, j.source = parsed.value, "parsed" if attempt == 0 else "retry"
                else:
                    j.errors.append(parsed.error)
            todo = [i for i in todo if out[i].value is None]
        if todo and self.can_constrain():
            self._constrain([out[i] for i in todo], [messages[i] for i in todo],
                            [calls[i].template.output_format for i in todo])
        return out

    def _constrain(self, judgments: list, messages: list, formats: list) -> None:
        """Score the allowed verdicts after the judge's text. Verdicts are one token each (one
        forward pass over the context); ratings read 1-9 from the next-token distribution and split
        "1" from "10" with a second position (``1]]`` vs ``10``), so each costs two positions, not ten
        sequences. Backends that tokenize differently still score the same strings, only slower."""
        try:
            plans = []
            for j, msgs, fmt in zip(judgments, messages, formats):
                ctx = self.backend.apply_chat_template([{"role": r, "content": c} for r, c in msgs])
                ctx += j.outputs[0].rstrip() + CONSTRAIN_PREFIX[fmt]
                if fmt == "[[A]]":
                    reqs = {v: [LoglikelihoodRequest(ctx, v)] for v in ("A", "B", "C")}
                else:
                    reqs = {float(d): [LoglikelihoodRequest(ctx, str(d))] for d in range(2, 10)}
                    one = LoglikelihoodRequest(ctx, "1")
                    reqs[1.0] = [one, LoglikelihoodRequest(ctx + "1", "]]")]
                    reqs[10.0] = [one, LoglikelihoodRequest(ctx + "1", "0")]
                plans.append(reqs)
            answers = self.engine.run([r for reqs in plans for rs in reqs.values() for r in rs])
        except Exception as e:  # e.g. an API that cannot score prompts
            self.constrain_error = f"{type(e).__name__}: {e}"
            log.warning("judge %s: constraining the verdict failed (%s); %d judgments stay unresolved",
                        self.name, self.constrain_error, len(judgments))
            return
        for j, reqs in zip(judgments, plans):
            lps = {v: sum(answers[r.key()].logprob for r in rs) for v, rs in reqs.items()}
            j.value, j.source = max(lps, key=lambda v: lps[v]), "constrained"
            j.constrained = {str(v): round(lp, 4) for v, lp in sorted(lps.items())}
