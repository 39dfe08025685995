"""vLLM leaves its engine's ZeroMQ socket files behind (thousands piled up in /tmp): evalkit gives a
process's engines a socket folder of their own, removed when the process exits, and leaves a path the
user set alone."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = """
import os, socket, sys
from evalkit.backends import vllm_engine
vllm_engine.private_socket_dir()
vllm_engine.private_socket_dir()                       # once per process
folder = os.environ["VLLM_RPC_BASE_PATH"]
s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(folder, "engine-socket"))   # as ZeroMQ's ipc:// does
print(folder)
"""


@pytest.fixture
def short_tmp():
    """A temp folder with a short path (a socket's path must fit 104 bytes; pytest's own are long)."""
    path = Path(tempfile.mkdtemp(prefix="evk-t-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(tmp: Path, env: dict) -> subprocess.CompletedProcess:
    full = {**{k: v for k, v in os.environ.items() if k != "VLLM_RPC_BASE_PATH"}, "PYTHONPATH": str(REPO),
            "TMPDIR": str(tmp), **env}
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=full, timeout=120)


def test_the_engine_sockets_go_to_a_folder_removed_at_exit(short_tmp):
    tmp_path = short_tmp
    p = run(tmp_path, {})
    assert p.returncode == 0, p.stderr
    folder = Path(p.stdout.strip())
    assert folder.parent == tmp_path and folder.name.startswith("evk-vllm-")
    left = [p.name for p in tmp_path.rglob("*") if p.is_socket() or p.name.startswith("evk-vllm-")]
    assert not folder.exists() and left == [], left                      # no socket file left behind


def test_a_temp_folder_too_long_for_a_socket_keeps_vllms_default(tmp_path):
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    p = subprocess.run([sys.executable, "-c", "import os; from evalkit.backends import vllm_engine; "
                        "vllm_engine.private_socket_dir(); print(os.environ.get('VLLM_RPC_BASE_PATH'))"],
                       capture_output=True, text=True, timeout=120,
                       env={**{k: v for k, v in os.environ.items() if k != "VLLM_RPC_BASE_PATH"},
                            "PYTHONPATH": str(REPO), "TMPDIR": str(deep)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "None" and list(deep.iterdir()) == []


def test_a_socket_path_the_user_set_is_theirs(short_tmp):
    tmp_path = short_tmp
    mine = tmp_path / "mine"
    mine.mkdir()
    p = run(tmp_path, {"VLLM_RPC_BASE_PATH": str(mine)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(mine) and (mine / "engine-socket").exists()   # used, and not removed


def test_the_session_engine_binds_its_sockets_in_that_folder(vllm_backend):
    vllm_backend.llm                                                     # started (the session's one engine)
    folder = Path(os.environ["VLLM_RPC_BASE_PATH"])
    assert folder.name.startswith("evk-vllm-")
    assert any(p.is_socket() for p in folder.iterdir())
