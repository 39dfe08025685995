"""IFBench (AI2, 2025): 58 out-of-distribution verifiable constraints, checked by evalkit's own checkers.

The task (``task``), its data (``data``), the checker registry and verdicts (``checkers``), the
checkers by family (``checks_count``, ``checks_words``, ``checks_format``, ``checks_custom``) and
the text measures they use (``text``)."""
from . import task  # noqa: F401 (registers ifbench)
