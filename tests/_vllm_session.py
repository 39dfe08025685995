"""One vLLM engine per test session, shared by test_vllm_backend.py and test_parity.py.

Engine start-up takes 40-85 s on a 2-core CPU, so every vLLM test reuses one engine (with two tiny
LoRA adapters made with peft loaded, so the LoRA tests need no second engine). Both test modules
call ``shared_vllm_backend``; the first call builds it and it is shut down at interpreter exit.
"""
from __future__ import annotations

import atexit
import os
from pathlib import Path

KV_GIB = "1"  # VLLM_CPU_KVCACHE_SPACE: 1 GiB holds ~23k fp32 tokens of the tiny model
_STATE: dict = {}


def make_tiny_lora(base_dir: str, out: Path, seed: int, rank: int = 8) -> str:
    """A small random LoRA adapter (q_proj, v_proj) for the tiny model, saved with peft."""
    if (out / "adapter_config.json").exists():
        return str(out)
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    torch.manual_seed(seed)
    cfg = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["q_proj", "v_proj"], init_lora_weights=False,
                     lora_dropout=0.0)
    peft_model = get_peft_model(model, cfg)
    with torch.no_grad():  # random A and B (init_lora_weights=False), scaled to a visible but sane change
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                p.mul_(0.3)
    peft_model.save_pretrained(str(out))
    return str(out)


def shared_vllm_backend(base_dir: str, work_dir: Path):
    """The session's VLLMBackend over the tiny model, with LoRA adapters ``a`` and ``b``."""
    if "backend" in _STATE:
        return _STATE["backend"]
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", KV_GIB)
    from evalkit.backends.vllm import VLLMBackend

    try:
        import peft  # noqa: F401 - only needed to make the test adapters
        adapters = {name: make_tiny_lora(base_dir, Path(work_dir) / f"lora_{name}", seed)
                    for name, seed in (("a", 1), ("b", 2))}
    except ImportError:
        adapters = {}  # LoRA tests skip
    backend = VLLMBackend(base_dir, dtype="float32", lora=adapters, progress=False)
    _STATE["backend"] = backend
    atexit.register(release)  # if no fixture teardown ran (e.g. an interrupted session)
    return backend


def release() -> None:
    """Shut the shared engine down (after its last test, and at session end; safe to call twice).
    The backend stays: a later call on it starts its engine again."""
    backend = _STATE.get("backend")
    if backend is not None:
        backend.close()
