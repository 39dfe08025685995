"""IFEval (Zhou et al. 2023): the task (``task``), its 25 instruction checkers (``checkers``) and
the text measures they use (``text``)."""
from . import task  # noqa: F401 (registers ifeval)
