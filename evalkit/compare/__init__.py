"""Regression gate: paired comparison of a candidate run against a baseline run.

``align`` pairs the two runs' samples (refusing runs whose data or prompts differ unless told),
``paired`` holds the paired tests (exact McNemar, Tango's score test, sign-flip permutation, paired
cluster bootstrap), ``multiplicity`` Holm / Benjamini–Hochberg, ``power`` minimum detectable
differences, ``analysis`` the verdicts and exit code, ``report`` text / Markdown / JSON.
"""
from evalkit.compare.align import NotComparable, align_runs
from evalkit.compare.analysis import (IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED, CompareOptions, Comparison,
                                      compare_runs)
from evalkit.compare.report import render

__all__ = ["NotComparable", "align_runs", "CompareOptions", "Comparison", "compare_runs", "render",
           "IMPROVED", "INCONCLUSIVE", "NO_CHANGE", "REGRESSED"]
