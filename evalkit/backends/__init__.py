"""Backends by prefix: ``hf:``, ``vllm:``, ``openai:`` (loaded lazily: heavy imports stay optional)."""
from __future__ import annotations

from evalkit.backends.catalog import BACKENDS, backend_class  # noqa: F401 (re-exported)
from evalkit.backends.options import DATA_PARALLEL, OPTIONS
from evalkit.util.kvargs import parse_model_args  # noqa: F401 (re-exported)


def split_spec(spec: str, flag: str = "--model") -> tuple[str, str]:
    """``PREFIX:MODEL`` checked; ``flag``: the option the user gave it with (named in the error)."""
    if ":" not in spec:
        raise ValueError(f"{flag} {spec!r}: expected PREFIX:MODEL with PREFIX one of {', '.join(BACKENDS)} "
                         f"(e.g. hf:smollm2-135m)")
    prefix, name = spec.split(":", 1)
    if prefix not in BACKENDS:
        raise ValueError(f"{flag} {spec!r}: unknown backend {prefix!r}; allowed: {', '.join(BACKENDS)}")
    if not name.strip():
        raise ValueError(f"{flag} {spec!r}: no model after {prefix}: (e.g. {prefix}:smollm2-135m)")
    return prefix, name


DATA_PARALLEL_ARGS = tuple(DATA_PARALLEL)


def make_backend(spec: str, model_args: dict | None = None, flags: tuple = ("--model", "--model-args"), **extra):
    """The backend of ``spec`` with its options, parsed and checked once (``backends/options.py``);
    ``flags``: the spec's and the options' flags as the user typed them (``--judge``, ``--judge-args``),
    named in errors."""
    prefix, name = split_spec(spec, flags[0])
    args = {**(model_args or {}), **extra}
    dp = {k: args.pop(k) for k in DATA_PARALLEL_ARGS if k in args}
    declared = OPTIONS.get(prefix)  # (a backend registered in the catalog without a declaration: as given)
    options = declared.parse(args, flags[1]) if declared else None
    if prefix != "openai" and (int(dp.get("data_parallel_size") or 1) > 1 or dp.get("ray_address")):
        from evalkit.backends.data_parallel import DataParallelBackend
        return DataParallelBackend(prefix, name, args, size=int(dp.get("data_parallel_size") or 1),
                                   ray_address=dp.get("ray_address"), cpus_per_engine=dp.get("cpus_per_engine"),
                                   gpus_per_engine=dp.get("gpus_per_engine"))
    return backend_class(prefix)(name, options) if declared else backend_class(prefix)(name, **args)


def _check_args(cls, prefix: str, args: dict, flag: str = "--model-args") -> None:
    """Whether the ``prefix`` backend takes every key of ``args`` (``cls``: its class, for the callers
    that hold it)."""
    if prefix in OPTIONS:
        OPTIONS[prefix].parse(args, flag, replicas=prefix != "openai")
