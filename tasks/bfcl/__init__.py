"""BFCL v4 (the Berkeley Function-Calling Leaderboard): its single-turn categories and its
multi-turn categories.

``data`` reads BFCL's released files (the ``bfcl-eval`` package's data folder or ``--data``),
``prompt`` builds BFCL's system prompt, ``fc`` its native tools, ``decode``/``decode_tree`` turn an
answer into calls as BFCL decodes it (Python with ``ast``; Java and JavaScript with tree-sitter),
``convert`` and ``checker`` are BFCL's AST checker, ``verdict`` is one item's evaluation, ``scores``
BFCL's leaderboard summaries, and ``task`` registers ``bfcl_<category>`` and ``bfcl_single_turn``.
Multi-turn: ``multi_turn_data`` reads the entries and their APIs' docs, ``multi_turn_env`` runs
BFCL's APIs and multi-turn checker (``multi_turn_runtime``, sandbox-side) in evalkit's sandbox, and
``multi_turn`` registers ``bfcl_multi_turn_<category>`` and ``bfcl_multi_turn`` on the agent loop.
tests/tasks/test_bfcl_checker.py and test_bfcl_multi_turn.py run BFCL's own checkers beside ours.
"""
from . import multi_turn, task  # noqa: F401 (registers the tasks)
