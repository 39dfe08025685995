"""RULER's synthetic long-context tasks (NVIDIA/RULER); see ``task``."""
from . import task  # noqa: F401 (registers niah_* and ruler_niah)
