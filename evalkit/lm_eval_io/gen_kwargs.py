"""lm-eval's ``--gen_kwargs`` keys translated to evalkit's generation overrides.

lm-eval passes its keys to the model (``max_gen_toks``, ``until``, ``do_sample``, ``temperature``,
``top_p``, ``top_k``, ``min_p``, ``repetition_penalty``, ``seed``...). evalkit's generation settings
are ``max_tokens``, ``temperature``, ``top_p``, ``n``, ``seed``, ``stop``; keys that change sampling
in ways evalkit's backends do not implement are refused with a message naming the key, never
silently dropped (a run would otherwise claim settings it did not use).
"""
from __future__ import annotations

from evalkit.errors import ConfigError

RENAMED = {"max_gen_toks": "max_tokens", "max_new_tokens": "max_tokens", "max_tokens": "max_tokens",
           "temperature": "temperature", "top_p": "top_p", "seed": "seed", "n": "n", "until": "stop",
           "stop": "stop"}
#: keys whose neutral value is accepted (it changes nothing); any other value is refused
NEUTRAL = {"top_k": (0, -1, None), "min_p": (0, 0.0, None), "repetition_penalty": (1, 1.0, None),
           "num_beams": (1, None)}
UNSUPPORTED_WHY = {
    "top_k": "evalkit samples from the full distribution (top_k=0); no backend applies a top-k cut",
    "min_p": "evalkit's backends do not apply min-p sampling",
    "repetition_penalty": "evalkit's backends do not apply a repetition penalty (it would change every score)",
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
        from evalkit.kvargs import parse_model_args
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
