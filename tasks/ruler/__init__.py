"""RULER's long-context tasks (NVIDIA/RULER); see ``task``."""
# task: niah_* and ruler_niah; synthetic_task: ruler_vt, ruler_cwe, ruler_fwe; qa_task: ruler_qa_squad,
# ruler_qa_hotpotqa; suite: ruler (all 13); grid: niah_grid
from . import grid, qa_task, suite, synthetic_task, task  # noqa: F401 (registers the tasks)
