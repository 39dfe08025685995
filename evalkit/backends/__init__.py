"""Backends by prefix: ``hf:``, ``vllm:``, ``openai:`` (loaded lazily: heavy imports stay optional)."""
from __future__ import annotations

import importlib
import inspect

BACKENDS = {
    "hf": ("evalkit.backends.hf", "HFBackend"),
    "vllm": ("evalkit.backends.vllm", "VLLMBackend"),
    "openai": ("evalkit.backends.openai", "OpenAIBackend"),
}


def parse_model_args(text: str | None, flag: str = "--model-args") -> dict:
    """``k=v,k2=v2`` with ints, floats, booleans and ``none`` typed (``flag`` names the option in errors)."""
    out = {}
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"{flag}: {part!r} is not key=value")
        k, v = part.split("=", 1)
        out[k.strip()] = _coerce(v.strip())
    return out


def _coerce(v: str):
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


def split_spec(spec: str) -> tuple[str, str]:
    if ":" not in spec:
        raise ValueError(f"--model {spec!r}: expected PREFIX:MODEL with PREFIX one of {', '.join(BACKENDS)} "
                         f"(e.g. hf:smollm2-135m)")
    prefix, name = spec.split(":", 1)
    if prefix not in BACKENDS:
        raise ValueError(f"--model {spec!r}: unknown backend {prefix!r}; allowed: {', '.join(BACKENDS)}")
    return prefix, name


def backend_class(prefix: str):
    mod, cls = BACKENDS[prefix]
    return getattr(importlib.import_module(mod), cls)


DATA_PARALLEL_ARGS = ("data_parallel_size", "ray_address", "cpus_per_engine", "gpus_per_engine")


def make_backend(spec: str, model_args: dict | None = None, **extra):
    prefix, name = split_spec(spec)
    cls = backend_class(prefix)
    args = {**(model_args or {}), **extra}
    dp = {k: args.pop(k) for k in DATA_PARALLEL_ARGS if k in args}
    if prefix != "openai" and (int(dp.get("data_parallel_size") or 1) > 1 or dp.get("ray_address")):
        _check_args(cls, prefix, args)
        from evalkit.backends.data_parallel import DataParallelBackend
        return DataParallelBackend(prefix, name, args, size=int(dp.get("data_parallel_size") or 1),
                                   ray_address=dp.get("ray_address"), cpus_per_engine=dp.get("cpus_per_engine"),
                                   gpus_per_engine=dp.get("gpus_per_engine"))
    _check_args(cls, prefix, args)
    return cls(name, **args)


def _check_args(cls, prefix: str, args: dict) -> None:
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        unknown = [k for k in args if k not in params]
        if unknown:
            allowed = [p for p in params if p not in ("self", "model")]
            raise ValueError(f"--model-args: {prefix} backend does not take {', '.join(unknown)}; "
                             f"allowed: {', '.join(allowed + list(DATA_PARALLEL_ARGS))}")
