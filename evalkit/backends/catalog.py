"""Which module and class serve each ``--model`` prefix (imported only when used)."""
from __future__ import annotations

import importlib

BACKENDS = {
    "hf": ("evalkit.backends.hf", "HFBackend"),
    "vllm": ("evalkit.backends.vllm", "VLLMBackend"),
    "openai": ("evalkit.backends.openai", "OpenAIBackend"),
}


def backend_class(prefix: str):
    mod, cls = BACKENDS[prefix]
    return getattr(importlib.import_module(mod), cls)
