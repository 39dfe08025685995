"""#38 item 1: a causal-LM folder given as a reward model is refused by name before any scoring, also
when its weights are a ``pytorch_model.bin`` that the safetensors header check cannot read (before:
transformers initialised a random score head, and the first random draw was cached and replayed)."""
from __future__ import annotations

import os

import pytest


def _bin_causal_lm(out) -> str:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1)
    torch.manual_seed(0)
    m = LlamaForCausalLM(cfg)
    cfg.save_pretrained(out)
    torch.save(m.state_dict(), os.path.join(out, "pytorch_model.bin"))
    return str(out)


def test_bin_causal_lm_is_refused_before_scoring(tmp_path):
    from evalkit.backends.reward_catalog import make_reward_backend
    path = _bin_causal_lm(tmp_path / "clm")
    backend = make_reward_backend(f"hf:{path}")  # the header check cannot read a .bin: it passes here
    with pytest.raises(ValueError, match=r"holds no score head \(score\.weight not in its weights\)"):
        _ = backend.model
    assert backend._model is None  # the random head is never kept: no reward can come from it
