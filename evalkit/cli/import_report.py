"""What `evalkit import` prints for each imported file: its notes, where the record went, and per
task its size, figures and how many prompts equal evalkit's (lm-eval and Inspect imports alike)."""
from __future__ import annotations

import math
import sys


def print_imported(source, path, run, notes, origin: str, extra_key: str, size=lambda info, entry: "") -> None:
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    print(f"imported {source} -> {path}")
    for name, entry in run.tasks.items():
        info = entry.extra[extra_key]
        same = info.get("prompts_identical_to_evalkit")
        paired = f"; prompts identical to evalkit's: {same}/{entry.n_docs}" if same is not None else ""
        shown = ", ".join(f"{m} {v.value:.4f}" for m, v in entry.metrics.items() if math.isfinite(v.value))
        print(f"  {name} ({origin} {info['task']}): {entry.n_docs} samples{size(info, entry)}; {shown}{paired}")
