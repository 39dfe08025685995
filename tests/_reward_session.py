"""The deterministic reward-model fixture and one vLLM reward engine per test session.

The fixture is SmolLM2-135M with a yes/no score head (``tests/fixtures/reward_model.py``), built once per
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
        from fixtures.reward_model import build
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
    """Shut the shared reward engine down (safe to call twice); a later call on it starts it again."""
    b = _STATE.get("vllm")
    if b is not None:
        b.close()


def tiny_qwen2_rm(out, arch: str = "Qwen2ForRewardModel") -> str:
    """A tiny RANDOM ``Qwen2ForRewardModel`` (one label) or ``Qwen2ForProcessRewardModel`` (two
    labels, vLLM's STEP pooler by default) (2 layers, hidden 128, head_dim 64 as vLLM's CPU
    attention needs, SmolLM2's tokenizer) for loader coverage: vLLM's architecture with its two-layer
    score head (``score.0``, ReLU, ``score.2``). Random weights, seeded: only for checking the loader and the numerics against a plain
    transformers ``Qwen2Model`` + the same head (``tiny_qwen2_reference``), never for scores."""
    from pathlib import Path
    out = Path(out)
    if (out / "model.safetensors").exists():
        return str(out)
    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer, Qwen2Config, Qwen2Model
    from evalkit.backends import model_dirs as models
    tok = AutoTokenizer.from_pretrained(models.prepare("smollm2-135m"))
    labels = 2 if arch == "Qwen2ForProcessRewardModel" else 1
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                      tie_word_embeddings=False, architectures=[arch], num_labels=labels,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, torch_dtype="float32")
    torch.manual_seed(17)
    body = Qwen2Model(cfg)
    sd = {f"model.{k}": v.contiguous() for k, v in body.state_dict().items()}
    g = torch.Generator().manual_seed(18)
    sd["score.0.weight"] = torch.randn(128, 128, generator=g) * 0.2
    sd["score.0.bias"] = torch.randn(128, generator=g) * 0.1
    sd["score.2.weight"] = torch.randn(labels, 128, generator=g) * 0.2
    sd["score.2.bias"] = torch.randn(labels, generator=g) * 0.1
    out.mkdir(parents=True, exist_ok=True)
    cfg.save_pretrained(out)
    tok.save_pretrained(out)
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    return str(out)


def tiny_qwen2_reference(path: str, ids_list, all_labels: bool = False):
    """Per-token rewards of the tiny Qwen2 (process) reward model from transformers' ``Qwen2Model`` +
    the head vLLM defines (``score.0``, ReLU, ``score.2``; ``qwen2_rm.py``): label 0 per token, or
    with ``all_labels`` a (tokens, labels) matrix."""
    import torch
    from safetensors.torch import load_file
    from transformers import Qwen2Config, Qwen2Model
    sd = load_file(f"{path}/model.safetensors")
    body = Qwen2Model(Qwen2Config.from_pretrained(path))
    body.load_state_dict({k[len("model."):]: v for k, v in sd.items() if k.startswith("model.")})
    body.eval()
    out = []
    with torch.inference_mode():
        for ids in ids_list:
            h = body(input_ids=torch.tensor([ids])).last_hidden_state[0]
            z = torch.relu(h @ sd["score.0.weight"].T + sd["score.0.bias"])
            logits = z @ sd["score.2.weight"].T + sd["score.2.bias"]
            out.append(logits if all_labels else logits[:, 0])
    return out
