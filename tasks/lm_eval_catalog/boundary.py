"""The one place where lm-eval's ``Instance`` meets evalkit's requests and responses.

lm-eval request kind      evalkit request                          lm-eval response
========================  =======================================  ==========================
``loglikelihood``         ``LoglikelihoodRequest(ctx, cont)``      ``(logprob, is_greedy)``
``loglikelihood_rolling`` ``RollingRequest(text)``                 ``logprob``
``generate_until``        ``GenerateRequest(prompt, GenParams)``   ``str`` (``until`` cut off)
========================  =======================================  ==========================

``repeats`` (lm-eval sends a request K times): a generation asks for ``n = K`` completions in one
request (seeded per doc when sampling); a loglikelihood is asked once and its answer repeated, as
the K identical answers lm-eval would get. ``generate_until``'s ``gen_kwargs`` are lm-eval's
generation keys (``until``, ``max_gen_toks``, ``do_sample``, ``temperature``, ...), translated by
``evalkit.lm_eval_io.gen_kwargs``; the run's ``--gen-kwargs`` override them, as lm-eval's do.
"""
from __future__ import annotations

from typing import Optional

from evalkit.lm_eval_io.gen_kwargs import to_evalkit_gen
from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest
from evalkit.util.errors import ConfigError

#: lm-eval's HF model default for ``max_gen_toks``
DEFAULT_MAX_GEN_TOKS = 256


def gen_params(gen_kwargs: dict, repeats: int, overrides: dict, seed_parts: tuple, where: str) -> GenParams:
    try:
        mapped, _ = to_evalkit_gen(dict(gen_kwargs or {}), strict=True)
    except ConfigError as e:
        raise ConfigError(f"{where}: generation_kwargs: {e}") from None
    p = {"max_tokens": DEFAULT_MAX_GEN_TOKS, "temperature": 0.0, "n": max(1, int(repeats or 1))}
    p.update({k: v for k, v in mapped.items() if k in GenParams.__dataclass_fields__})
    p.update({k: v for k, v in overrides.items() if k in GenParams.__dataclass_fields__})
    p["stop"] = tuple(s for s in (p.get("stop") or ()) if s)
    if p["temperature"] and p.get("seed") is None:
        p["seed"] = derive_seed(*seed_parts) % (2 ** 31)
    return GenParams(**p)


def to_request(inst, overrides: dict, seed_parts: tuple, where: str):
    """The evalkit request answering one lm-eval ``Instance``."""
    args = inst.args
    if any(isinstance(a, dict) and ("visual" in a or "audio" in a) for a in args):
        raise ConfigError(f"{where}: multimodal lm-eval tasks (images, audio) are not supported by evalkit")
    kind = inst.request_type
    if kind == "loglikelihood":
        return LoglikelihoodRequest(args[0], args[1])
    if kind == "loglikelihood_rolling":
        return RollingRequest(args[0])
    if kind == "generate_until":
        ctx, gen = args[0], args[1]
        if not isinstance(ctx, str):
            raise ConfigError(f"{where}: a generate_until context that is not text ({type(ctx).__name__})")
        return GenerateRequest(prompt=ctx, params=gen_params(gen, inst.repeats, overrides, seed_parts, where))
    raise ConfigError(f"{where}: lm-eval request type {kind!r} is not supported")


def to_lm_eval(kind: str, response, repeats: Optional[int]) -> list:
    """An evalkit response as the ``resps`` list lm-eval keeps on the instance (one per repeat)."""
    k = max(1, int(repeats or 1))
    if kind == "loglikelihood":
        return [(float(response.logprob), bool(response.is_greedy))] * k
    if kind == "loglikelihood_rolling":
        return [float(response)] * k
    return [c.text for c in response][:k]


def from_record(kind: str, recorded) -> object:
    """A response as the samples file keeps it, back in evalkit's form (``evalkit rescore``)."""
    from evalkit.taskapi.requests import Completion, LoglikelihoodResult
    if kind == "loglikelihood":
        return LoglikelihoodResult(float(recorded[0]), bool(recorded[1]))
    if kind == "loglikelihood_rolling":
        return float(recorded)
    return [Completion(t, "stop") for t in recorded]
