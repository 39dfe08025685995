"""The regression gate's CI script (``gate.sh``), shipped in the package so any CI can run it:
``evalkit ci-gate`` (GitLab, Jenkins, ...) and ``.github/actions/gate`` run the same file."""
from __future__ import annotations

from pathlib import Path

GATE_SCRIPT = Path(__file__).with_name("gate.sh")
