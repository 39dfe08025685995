"""RULER's synthetic long-context tasks (NVIDIA/RULER); see ``task``."""
# task: niah_* and ruler_niah; synthetic_task: ruler_vt, ruler_cwe, ruler_fwe; grid: niah_grid
from . import grid, synthetic_task, task  # noqa: F401 (registers the tasks)
