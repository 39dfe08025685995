"""evalkit: an LLM evaluation harness with honest statistics.

The public API a task author needs lives here; see ``evalkit.taskapi.task`` for the plugin contract.
"""

from evalkit.version import __version__  # noqa: E402
from evalkit import _moved  # noqa: E402

_moved.install()  # evalkit.task, evalkit.runner, ... from before the folders

from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest  # noqa: E402
from evalkit.taskapi.task import Doc, Sample, Task, register_task  # noqa: E402



def evaluate(model, tasks, limit=None, **options):
    """Evaluate ``model`` (a spec string such as ``"hf:smollm2-135m"``, a loaded transformers model
    with ``tokenizer=``, a vLLM ``LLM`` or an evalkit backend) on ``tasks``; returns the run record.
    Options are ``evalkit run``'s by their Python names; see ``evalkit.api`` (imported on first call,
    so ``import evalkit`` stays light)."""
    from evalkit.api import evaluate as _evaluate
    return _evaluate(model, tasks, limit, **options)


__all__ = [
    "Doc", "GenParams", "GenerateRequest", "LoglikelihoodRequest", "RollingRequest", "Sample",
    "Task", "evaluate", "register_task", "__version__",
]
