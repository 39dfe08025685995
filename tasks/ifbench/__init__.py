"""IFBench (AI2, 2025): 58 out-of-distribution verifiable constraints, checked by evalkit's own checkers."""
