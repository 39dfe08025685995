"""BFCL v4 (the Berkeley Function-Calling Leaderboard), its single-turn categories, prompt-based.

``data`` reads BFCL's released files (the ``bfcl-eval`` package's data folder or ``--data``),
``prompt`` builds BFCL's system prompt, ``decode``/``decode_tree`` turn an answer into calls as
BFCL decodes it (Python with ``ast``; Java and JavaScript with tree-sitter), ``convert`` and
``checker`` are BFCL's AST checker, ``verdict`` is one item's evaluation, ``scores`` BFCL's
leaderboard summaries, and ``task`` registers ``bfcl_<category>`` and ``bfcl_single_turn``.
tests/tasks/test_bfcl_checker.py runs BFCL's own checker beside ours: the verdicts are the same.
"""
from . import task  # noqa: F401 (registers the tasks)
