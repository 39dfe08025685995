"""Reward-model backends by prefix: ``--reward-model hf:PATH`` (transformers, the reference),
``--reward-model vllm:PATH`` (vLLM offline pooling) or ``--reward-model vllm-server:URL`` (a running
vLLM pooling server). ``hf-reward:`` and ``vllm-reward:`` are accepted as the same. Options come as
``--reward-args K=V,...`` (``--model-args`` in ``evalkit reward``, ``--judge-args`` for a judge).
Secrets are never options: the server backend reads its key from the variable ``api_key_env`` names."""
from __future__ import annotations

import importlib
import inspect

from evalkit.records.redact import redact_url

REWARD_BACKENDS = {
    "hf": ("evalkit.backends.reward_hf", "HFRewardBackend"),
    "vllm": ("evalkit.backends.reward_vllm", "VLLMRewardBackend"),
    "vllm-server": ("evalkit.backends.reward_vllm_server", "VLLMServerRewardBackend"),
}
SECRET_ARGS = ("api_key", "key", "token", "password")


def shown_spec(spec: str) -> str:
    """The spec as error messages show it: a server URL's credentials redacted."""
    prefix, sep, name = str(spec).partition(":")
    if sep and "://" in name:  # vllm-server:http://user:key@host
        return prefix + sep + redact_url(name)
    return redact_url(str(spec))


def split_reward_spec(spec: str, flag: str = "--reward-model") -> tuple[str, str]:
    prefix, _, name = str(spec).partition(":")
    prefix = prefix.removesuffix("-reward")
    if not name or prefix not in REWARD_BACKENDS:
        raise ValueError(f"{flag} {shown_spec(spec)!r}: expected hf:PATH or vllm:PATH (a local reward model "
                         f"folder) or vllm-server:URL (a running vLLM pooling server)")
    return prefix, name


def make_reward_backend(spec: str, args: dict | None = None, flag: str = "--reward-model"):
    prefix, name = split_reward_spec(spec, flag)
    mod, cls_name = REWARD_BACKENDS[prefix]
    cls = getattr(importlib.import_module(mod), cls_name)
    args = dict(args or {})
    secret = sorted(k for k in args if k in SECRET_ARGS)
    if secret:
        raise ValueError(f"{flag} {shown_spec(spec)}: never pass a secret as {secret[0]}=; put it in an environment "
                         f"variable and name it with api_key_env=NAME")
    allowed = set()
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__:
            allowed |= {p for p in inspect.signature(klass.__init__).parameters if p not in ("self", "model", "kw")}
    unknown = sorted(k for k in args if k not in allowed)
    if unknown:
        raise ValueError(f"{flag} {shown_spec(spec)}: {prefix} reward backend does not take {', '.join(unknown)}; "
                         f"allowed: {', '.join(sorted(allowed))}")
    backend = cls(name, **args)
    backend.check_kind(backend.per_step())  # impossible settings (step_agg on a sequence pooler) fail before any load
    backend.record_spec, backend.record_args = getattr(backend, "shown_spec", spec), args  # what the run record names
    return backend
