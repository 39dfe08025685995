"""lm-eval's ``--gen_kwargs`` keys translated to evalkit's generation overrides.

lm-eval passes its keys to the model: ``max_gen_toks`` (evalkit ``max_tokens``), ``until``
(``stop``), ``do_sample`` (false: greedy, temperature 0; true without a temperature: 1.0, the
transformers default), ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``repetition_penalty`` and
``seed`` (the same names). A key evalkit's backends do not implement (``num_beams`` > 1, ...) is
refused with a message naming it, never silently dropped (the run would claim settings it did not use).
"""
from __future__ import annotations

from evalkit.util.errors import ConfigError

RENAMED = {"max_gen_toks": "max_tokens", "max_new_tokens": "max_tokens", "max_tokens": "max_tokens",
           "temperature": "temperature", "top_p": "top_p", "seed": "seed", "n": "n", "until": "stop",
           "stop": "stop", "top_k": "top_k", "min_p": "min_p", "repetition_penalty": "repetition_penalty"}
#: keys whose neutral value is accepted (it changes nothing); any other value is refused
NEUTRAL = {"num_beams": (1, None), "early_stopping": (False, None)}
UNSUPPORTED_WHY = {
    "num_beams": "evalkit decodes greedily or samples; it has no beam search",
}


def _stops(v) -> list:
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v]
    raise ConfigError(f"--gen_kwargs until={v!r}: expected a string or a list of strings")


def to_evalkit_gen(gen, strict: bool = False) -> tuple[dict, list]:
    """(evalkit gen overrides, notes). ``strict``: a key evalkit cannot honour raises ConfigError
    (the command line); otherwise it becomes a note (importing a finished lm-eval run)."""
    if isinstance(gen, str):
        from evalkit.util.kvargs import parse_model_args
        gen = parse_model_args(gen, "--gen_kwargs")
    out, notes = {}, []
    do_sample = gen.get("do_sample")
    if isinstance(do_sample, str):
        do_sample = do_sample.strip().lower() == "true"
    for key, value in gen.items():
        if key == "do_sample":
            continue
        if key in RENAMED:
            out[RENAMED[key]] = _stops(value) if RENAMED[key] == "stop" else value
        elif key in NEUTRAL and value in NEUTRAL[key]:
            notes.append(f"{key}={value} changes nothing; accepted")
        else:
            why = UNSUPPORTED_WHY.get(key, "evalkit has no such generation setting")
            msg = f"--gen_kwargs {key}={value}: {why}"
            if strict:
                raise ConfigError(msg)
            notes.append(msg + " (recorded, not replayable)")
    if do_sample is False:
        if out.get("temperature") not in (None, 0, 0.0):
            notes.append("do_sample=false: greedy decoding (temperature set to 0, as lm-eval's hf model does)")
        out["temperature"] = 0.0
    elif do_sample is True and "temperature" not in out:
        out["temperature"] = 1.0  # transformers' default when sampling
    return out, notes
