"""How much memory a vLLM engine's KV cache gets, and the one line when an engine cannot start (#38).

vLLM's CPU build reads ``gpu_memory_utilization`` (default 0.9) as the fraction of *all* RAM to
reserve, and refuses to start when less than that is free ("Available memory on node 0 ... is less
than desired CPU memory utilization", ``vllm/v1/worker/cpu_worker.py``): on a laptop or a shared CI
runner the first vLLM command fails. Its own fixed size is ``kv_cache_memory_bytes`` (what
``VLLM_CPU_KVCACHE_SPACE`` GiB sets, ``vllm/platforms/cpu.py``); with it vLLM skips that check and only
requires the size to be free when it allocates the cache.

So on CPU evalkit passes ``kv_cache_memory_bytes`` sized from the run, as vLLM's GPU worker sizes a
cache from a budget: per-token KV bytes from the model's config (2 × layers × KV heads × head dim ×
dtype bytes), times the context length (``max_model_len``, else the model's) times the sequences run
at once (``max_num_seqs``, else ``DEFAULT_SEQUENCES``), with ``HEADROOM``; at most ``FREE_SHARE`` of
the memory free now (``/proc/meminfo`` MemAvailable, and the cgroup's limit less its usage), never less
than one full sequence (vLLM's minimum to start). What differs from vLLM: vLLM sizes from a fraction of
the machine; evalkit from the run and what is free. The user's setting wins, in this order:
``kv_cache_memory_bytes`` / ``kv_cache_space`` (GiB) model args, ``gpu_memory_utilization``, then
vLLM's ``VLLM_CPU_KVCACHE_SPACE``. On a GPU evalkit keeps vLLM's behaviour (0.9 of the device).
"""
from __future__ import annotations

import json
import os
from typing import Optional

GIB = 1 << 30
MIB = 1 << 20
DEFAULT_SEQUENCES = 4  # full-context sequences the cache holds when max_num_seqs is not given
HEADROOM = 1.1         # on top of the tokens the run needs (block rounding, one partial block per sequence)
FREE_SHARE = 0.5       # at most this share of the free memory: the weights, activations and others need the rest
DTYPE_BYTES = {"float32": 4, "float": 4, "fp32": 4, "float16": 2, "half": 2, "fp16": 2, "bfloat16": 2, "bf16": 2,
               "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),  # v2
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))  # v1


def mem_available_bytes(meminfo: str = "/proc/meminfo") -> Optional[int]:
    """MemAvailable of /proc/meminfo (None where there is none)."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def mem_total_bytes(meminfo: str = "/proc/meminfo") -> Optional[int]:
    """MemTotal of /proc/meminfo (what vLLM's CPU worker multiplies ``gpu_memory_utilization`` by)."""
    try:
        with open(meminfo, encoding="ascii") as f:
            return next(int(x.split()[1]) * 1024 for x in f if x.startswith("MemTotal:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def one_sequence_short(model_dir: str, max_model_len, dtype: str, size: int):
    """(context length, tokens the cache holds) when ``size`` bytes cannot hold one sequence, else None."""
    cfg = model_text_config(model_dir) if model_dir and os.path.isdir(model_dir) else None
    per_token = kv_bytes_per_token(cfg, dtype) if cfg else None
    if not per_token:
        return None
    tokens = int(max_model_len or cfg.get("max_position_embeddings") or 0)
    return (tokens, size // per_token) if tokens and size // per_token < tokens else None


def cgroup_free_bytes(files=CGROUP_FILES) -> Optional[int]:
    """The cgroup's memory limit less its usage (None: no limit, or no cgroup files)."""
    for limit_file, usage_file in files:
        try:
            with open(limit_file, encoding="ascii") as f:
                limit = f.read().strip()
            with open(usage_file, encoding="ascii") as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or not limit.isdigit() or int(limit) >= 1 << 60:  # v1 writes a huge number for "none"
            return None
        return max(0, int(limit) - usage)
    return None


def free_memory_bytes() -> Optional[int]:
    """What this process can still allocate: the smaller of MemAvailable and the cgroup's room."""
    known = [x for x in (mem_available_bytes(), cgroup_free_bytes()) if x is not None]
    return min(known) if known else None


def model_text_config(model_dir: str) -> Optional[dict]:
    try:
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError):
        return None
    return (cfg.get("text_config") or cfg) if isinstance(cfg, dict) else None


def kv_bytes_per_token(cfg: dict, dtype: str) -> Optional[int]:
    """2 (K and V) × layers × KV heads × head dim × bytes of the cache dtype (``auto``: the config's)."""
    try:
        layers, heads = int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"])
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    if dtype in (None, "auto"):
        dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "float32")
    return 2 * layers * kv_heads * head_dim * DTYPE_BYTES.get(str(dtype).replace("torch.", ""), 4)


def kv_cache_size(per_token: int, tokens: int, sequences: int, free: Optional[int]) -> int:
    """The arithmetic: ``tokens × sequences × per_token × HEADROOM``, at most ``FREE_SHARE`` of ``free``,
    never less than one sequence with headroom; rounded up to whole MiB."""
    need = int(per_token * tokens * HEADROOM)
    want = int(per_token * tokens * max(1, sequences) * HEADROOM)
    size = max(need, min(want, int(free * FREE_SHARE)) if free else want)
    return -(-size // MIB) * MIB


def cpu_kv_cache_bytes(model_dir: str, max_model_len: Optional[int], dtype: str,
                       max_num_seqs: Optional[int] = None) -> Optional[int]:
    """``kv_cache_size`` for this model and run; None when the model's config cannot tell (vLLM decides)."""
    cfg = model_text_config(model_dir)
    per_token = kv_bytes_per_token(cfg, dtype) if cfg else None
    if not per_token:
        return None
    tokens = int(max_model_len or cfg.get("max_position_embeddings") or 4096)
    return kv_cache_size(per_token, tokens, int(max_num_seqs or DEFAULT_SEQUENCES), free_memory_bytes())


def kv_cache_plan(on_cpu: bool, model_dir: str, max_model_len, dtype: str, gpu_memory_utilization=None,
                  kv_cache_memory_bytes=None, kv_cache_space=None, max_num_seqs=None) -> dict:
    """``{"args": engine args for the cache, "set_by": who chose, "bytes": the size or None}``.
    A user's size over the free memory is refused here, before any weights load."""
    if kv_cache_space is not None:
        if not isinstance(kv_cache_space, (int, float)) or isinstance(kv_cache_space, bool) or not kv_cache_space > 0:
            raise ValueError(f"--model-args kv_cache_space={kv_cache_space!r}: expected a size in GiB > 0")
    given = (f"kv_cache_memory_bytes={kv_cache_memory_bytes}" if kv_cache_memory_bytes
             else f"kv_cache_space={kv_cache_space}" if kv_cache_space is not None else "")
    if kv_cache_memory_bytes or kv_cache_space is not None:
        size = int(kv_cache_memory_bytes or kv_cache_space * GIB)
        free = free_memory_bytes() if on_cpu else None
        if free is not None and size > free:  # vLLM would say so only after loading the model
            raise ValueError(f"{given}: {size / GIB:.1f} GiB of KV cache, but {free / GIB:.1f} "
                             f"GiB of memory is available; lower --model-args kv_cache_space=GiB (or "
                             f"kv_cache_memory_bytes=N), or leave both out: evalkit sizes it on CPU")
        short = one_sequence_short(model_dir, max_model_len, dtype, size)
        if short:
            raise ValueError(f"{given}: {size / GIB:.2f} GiB of KV cache holds {short[1]} tokens, "
                             f"less than one sequence of max_model_len={short[0]}; raise --model-args "
                             f"kv_cache_space=GiB or lower max_model_len=N")
        return {"args": {"kv_cache_memory_bytes": size}, "set_by": "user", "bytes": size}
    if gpu_memory_utilization is not None and on_cpu:  # vLLM's CPU worker refuses this, after a long start-up
        total, free = mem_total_bytes(), mem_available_bytes()
        want = float(gpu_memory_utilization) * total if total else 0
        if free is not None and want > free:
            raise ValueError(f"gpu_memory_utilization={gpu_memory_utilization}: on CPU vLLM reserves that share of all "
                             f"RAM ({want / GIB:.1f} GiB), but {free / GIB:.1f} GiB is available; lower --model-args "
                             f"gpu_memory_utilization=F below {free / total:.2f}, or leave it out (evalkit then sizes "
                             f"the KV cache from the run), or set kv_cache_space=GiB")
    if gpu_memory_utilization is not None:
        return {"args": {"gpu_memory_utilization": float(gpu_memory_utilization)}, "set_by": "user", "bytes": None,
                "gpu_memory_utilization": float(gpu_memory_utilization)}
    if not on_cpu:
        return {"args": {"gpu_memory_utilization": 0.9}, "set_by": "vllm default", "bytes": None,
                "gpu_memory_utilization": 0.9}
    env = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
    if env:
        try:
            size = int(float(env) * GIB)
        except ValueError:
            size = None
        return {"args": {}, "set_by": "VLLM_CPU_KVCACHE_SPACE", "bytes": size}
    size = cpu_kv_cache_bytes(model_dir, max_model_len, dtype, max_num_seqs) if os.path.isdir(model_dir) else None
    if not size:
        return {"args": {}, "set_by": "vllm default", "bytes": None}
    return {"args": {"kv_cache_memory_bytes": size}, "set_by": "evalkit (run and free memory)", "bytes": size}


def kv_cache_args(on_cpu: bool, model_dir: str, max_model_len, dtype: str, gpu_memory_utilization,
                  kv_cache_memory_bytes, kv_cache_space=None, max_num_seqs=None) -> dict:
    """The engine args of ``kv_cache_plan``."""
    return kv_cache_plan(on_cpu, model_dir, max_model_len, dtype, gpu_memory_utilization, kv_cache_memory_bytes,
                         kv_cache_space, max_num_seqs)["args"]


def engine_start_error(e: BaseException, engine_args: dict) -> ValueError:
    """One line for an engine that could not start: vLLM's own first line (the cause), the sizes, and
    the settings that fix it. vLLM's traceback stays behind ``raise ... from e`` (``--verbose``)."""
    kv = engine_args.get("kv_cache_memory_bytes")
    free = free_memory_bytes()
    sizes = (f"; KV cache {kv / GIB:.2f} GiB" if kv else "") + (f", {free / GIB:.1f} GiB available" if free else "")
    cause = e
    while cause.__cause__ is not None and not str(cause).strip():
        cause = cause.__cause__
    first = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:300]
    if "See root cause above" in first:  # the cause was logged by vLLM's engine process above
        first += " (vLLM's log above names the cause)"
    return ValueError(f"the vLLM engine for {engine_args.get('model')} could not start ({type(cause).__name__}: "
                      f"{first}{sizes}); lower --model-args max_model_len=N, set kv_cache_space=GiB (on CPU) or "
                      f"gpu_memory_utilization=F (on a GPU; on CPU it is the share of all RAM); "
                      f"--verbose shows vLLM's traceback")
