"""Backends over models that are already loaded (a notebook, a training loop): a transformers
model and tokenizer, or a vLLM ``LLM``.

The response cache is keyed by the backend's identity, so an in-memory model's identity must say
exactly which weights answered: for a transformers model it is a hash of its state dict (every
tensor's name, dtype, shape and bytes), its config and its tokenizer, never ``id()`` (a model
trained one more step is another model; the same weights loaded twice are the same one). A vLLM
``LLM`` holds its weights in its engine (often another process), so its identity is the content
of the model folder the engine loaded (config, tokenizer, weight files hashed) and the resolved
engine settings.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Optional

from evalkit.backends.hf import CPU_TOKEN_BUDGET, HFBackend
from evalkit.backends.logprobs import CPU_CHUNK_ELEMS, GPU_CHUNK_ELEMS
from evalkit.backends.options import HFOptions, prefill_chunk_option
from evalkit.backends.tokenization import chat_template_options


def state_dict_digest(model) -> str:
    """sha256 over every tensor of the state dict: name, dtype, shape and bytes."""
    import torch
    h = hashlib.sha256()
    with torch.no_grad():
        for name, t in sorted(model.state_dict().items()):
            t = t.detach()
            h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
            flat = t.contiguous().reshape(-1).cpu()
            h.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return h.hexdigest()


def config_digest(config) -> str:
    d = config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))
    d.pop("_name_or_path", None)  # where it was read from is not what it is
    d.pop("transformers_version", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()


def tokenizer_digest(tokenizer) -> str:
    parts = {"vocab": sorted(tokenizer.get_vocab().items()), "chat_template": getattr(tokenizer, "chat_template", None),
             "special": {k: str(v) for k, v in sorted(getattr(tokenizer, "special_tokens_map", {}).items())},
             "class": type(tokenizer).__name__}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


#: HFOptions about loading a model, which a model already in memory does not take
NOT_IN_MEMORY = ("revision", "dtype", "device", "trust_remote_code")


class LoadedHFBackend(HFBackend):
    """The hf backend on a model and tokenizer the caller already holds (nothing read from disk).
    ``chat_template``, ``chat_template_kwargs`` and ``reasoning_effort`` (gpt-oss: low, medium, high,
    rendered by a harmony template as ``Reasoning: low``) shape chat prompts as on ``HFBackend``, and
    enter the identity (so the cache key) only when given."""

    def __init__(self, model, tokenizer, name: Optional[str] = None, options: Optional[HFOptions] = None,
                 **kwargs):
        """``options`` (or the same as keyword arguments): the ``HFOptions`` that apply to a model
        already loaded (not where or how to load it)."""
        loading = sorted(set(kwargs) & set(NOT_IN_MEMORY))
        if loading:
            raise ValueError(f"a model held in memory: {', '.join(loading)} apply only to loading one "
                             f"(--model hf:...)")
        o = self.options = HFOptions.of(options, kwargs)
        import torch
        self.chat_template, self.chat_template_kwargs, template_identity = chat_template_options(
            o.chat_template, o.chat_template_kwargs, o.reasoning_effort)
        threads = o.threads if o.threads not in (None, "auto") else os.environ.get("EVALKIT_TORCH_THREADS")
        if threads:
            torch.set_num_threads(int(threads))
        self.torch = torch
        path = str(getattr(model.config, "_name_or_path", "") or "")
        self.spec = name or (os.path.basename(path.rstrip("/")) if path else type(model).__name__)
        self.source = "in-memory"
        first = next(iter(model.parameters()), None)
        self.device = first.device if first is not None else torch.device("cpu")
        self.dtype_name = str(first.dtype).replace("torch.", "") if first is not None else "float32"
        self._load_args = ("", None, None, False)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._tokenizer, self._config, self._model = tokenizer, model.config, model
        self.add_bos_token = bool(o.add_bos_token)
        self.share_prefix = o.share_prefix
        self._max_length = int(o.max_length) if o.max_length else None
        self.max_gen_toks = int(o.max_gen_toks)
        self.batch_size = o.batch_size
        self.token_budget = int(o.token_budget or (CPU_TOKEN_BUDGET if self.device.type == "cpu" else 262144))
        self.chunk_size = int(o.chunk_size or (64 if self.device.type == "cpu" else 512))
        self.chunk_elems = CPU_CHUNK_ELEMS if self.device.type == "cpu" else GPU_CHUNK_ELEMS
        self._prefill_chunk = prefill_chunk_option(o.prefill_chunk)
        self._oom_budget = None
        self._split = None
        self.stats = Counter()
        self._identity = {
            "backend": "hf", "model": self.spec, "source": "in-memory", "revision": None, "dtype": self.dtype_name,
            "max_length": self.max_length, "add_bos_token": self.add_bos_token,
            "content": {"state_dict": state_dict_digest(model)[:32], "config": config_digest(model.config)[:16],
                        "tokenizer": tokenizer_digest(tokenizer)[:16], "class": type(model).__name__},
            **template_identity,
        }

    @property
    def display_name(self) -> str:
        return self.spec

    def _context_window(self) -> int:
        for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
            if hasattr(self._config, attr):
                return int(getattr(self._config, attr))
        tml = getattr(self._tokenizer, "model_max_length", None)
        return int(tml) if tml and int(tml) < 10 ** 12 else 2048

    def close(self):  # the caller owns the model
        pass


def vllm_backend_from_llm(llm, name: Optional[str] = None, max_length: Optional[int] = None,
                          add_bos_token: bool = False, chunk_size: Optional[int] = None):
    """The vllm backend over an ``LLM`` the caller started (the engine is theirs: close leaves it)."""
    from evalkit.backends import model_dirs as models
    from evalkit.backends.vllm import VLLMBackend
    from evalkit.backends.vllm_engine import platform_kind
    cfg = llm.llm_engine.vllm_config.model_config
    folder = str(cfg.model)
    b = VLLMBackend.__new__(VLLMBackend)
    b.spec = name or folder
    b.source = folder
    b.adapter_paths = {}
    b.engine_args = {"model": folder}
    b._on_cpu = platform_kind() == "cpu"
    b._llm, b._engine_owner, b._owner = llm, None, False
    b.model_max_len = int(cfg.max_model_len)
    b._max_length = int(max_length) if max_length else b.model_max_len - 2
    b.add_bos_token = bool(add_bos_token)
    b.chunk_size = int(chunk_size or 4096)
    b.progress = False
    b.stats = Counter()
    b._lora = None
    content = models.directory_identity(folder, hash_weights=True) if os.path.isdir(folder) else \
        {"hub": folder, "revision": getattr(cfg, "revision", None)}
    b._identity = {"backend": "vllm", "model": b.spec, "source": folder, "revision": getattr(cfg, "revision", None),
                   "dtype": str(cfg.dtype).replace("torch.", ""), "max_length": b._max_length,
                   "add_bos_token": b.add_bos_token, "quantization": getattr(cfg, "quantization", None),
                   "content": content}
    return b
