"""evalkit: an LLM evaluation harness with honest statistics.

The public API a task author needs lives here; see ``evalkit.task`` for the plugin contract.
"""

__version__ = "0.1.0"

from evalkit.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest  # noqa: E402
from evalkit.task import Doc, Sample, Task, register_task  # noqa: E402

__all__ = [
    "Doc", "GenParams", "GenerateRequest", "LoglikelihoodRequest", "RollingRequest", "Sample",
    "Task", "register_task", "__version__",
]
