"""Execution sandbox for model-written code (HumanEval/MBPP pass@k).

>>> from evalkit.sandbox import Sandbox, isolation_layer
>>> with Sandbox(workers=2, timeout=5) as sb:
...     sb.run("assert 1 + 1 == 2").passed
True

See ``executor.py`` (parent side, isolation layers) and ``worker.py`` (inside the sandbox).
"""

from .executor import ExecResult, Sandbox, isolation_layer

__all__ = ["ExecResult", "Sandbox", "isolation_layer"]
