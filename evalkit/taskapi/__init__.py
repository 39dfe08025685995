"""The task API: what a task author imports, in one place.

``Task`` and its three ready-made shapes (``MultipleChoiceTask``, ``GenerationTask``,
``PerplexityTask``), the typed items (``Doc`` in, ``Scored`` values out; the framework builds the
``Sample``), ``DataSource``/``require`` for data, ``Metric`` for what a task reports, ``GenParams`` for
generation, ``register_task``. The modules: ``task`` (the contract), ``prompts`` (few-shot and prompt
hooks), ``items``, ``data`` (hub and local loading with provenance), ``registry`` (finding tasks),
``requests`` (the request kinds every backend answers).
"""
from evalkit.scoring.metric import Metric
from evalkit.taskapi.data import DataError, DataSource, require
from evalkit.taskapi.items import Doc, RunContext, Sample, Scored
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import GenerationTask, MultipleChoiceTask, PerplexityTask, Task, register_task

__all__ = ["DataError", "DataSource", "Doc", "GenParams", "GenerationTask", "Metric", "MultipleChoiceTask",
           "PerplexityTask", "RunContext", "Sample", "Scored", "Task", "register_task", "require"]
