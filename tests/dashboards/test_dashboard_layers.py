"""The dashboard reads records only: importing every dashboard module (and rating a battles file, and
reading samples) never imports the engine, a backend, the runner, torch or vLLM. Checked in a fresh
interpreter, so nothing imported by other tests hides a leak."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import _dashboard_records as recs

MODULES = ["data", "store", "labels", "cells", "samples", "battles", "tables", "board", "ranking", "charts", "pairs", "rowpages"]
FORBIDDEN = ("evalkit.run.engine", "evalkit.backends", "evalkit.run.runner", "torch", "vllm")
ROOT = Path(__file__).resolve().parents[2]


def test_dashboard_imports_neither_engine_nor_backends(tmp_path):
    pytest.importorskip("altair")
    battles = recs.need("chatbot_arena", "arena_hard_battles.jsonl")
    code = "\n".join([
        "import sys",
        *[f"import evalkit.dashboards.{m}" for m in MODULES],
        "from evalkit.dashboards.store import ResultsStore",
        f"s = ResultsStore({str(tmp_path)!r}, [{str(battles)!r}], rating_rounds=3)",
        "s.refresh(); assert len(s.cells()) == 5, s.errors",
        "from evalkit.dashboards import labels; labels.task_family('gsm8k'); labels.is_redacted('gpqa_diamond')",
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm') or m.startswith({FORBIDDEN!r}))",
        "print('LEAKED', bad) if bad else print('CLEAN')",
    ])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("CLEAN"), r.stdout


def test_judges_keep_their_public_names():
    from evalkit.arena import summary
    from evalkit.judges import arena

    assert arena.rate is summary.rate and callable(arena.arena_record)
