"""The deterministic reward-model fixture and one vLLM reward engine per test session.

The fixture is SmolLM2-135M with a yes/no score head (``evalkit.reward_fixture``), built once per
machine into the models cache. ITS SCORES ARE NOISE: tests use it to prove plumbing and numerics
(transformers and vLLM agree, batching and padding change nothing, caching and resume work), never
reward-model quality.
"""
from __future__ import annotations

import atexit
import os

_STATE: dict = {}


def fixture_dir() -> str:
    if "dir" not in _STATE:
        from evalkit.reward_fixture import build
        _STATE["dir"] = str(build())
    return _STATE["dir"]


def shared_vllm_reward():
    """The session's VLLMRewardBackend over the fixture (engine start 60-120 s on 2 cores)."""
    if "vllm" not in _STATE:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        from evalkit.backends.reward_vllm import VLLMRewardBackend
        _STATE["vllm"] = VLLMRewardBackend(fixture_dir(), dtype="float32")
        atexit.register(release)
    return _STATE["vllm"]


def release() -> None:
    b = _STATE.pop("vllm", None)
    if b is not None:
        b.close()
