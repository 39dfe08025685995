"""Run records: ``results/<run-id>/run.json`` plus one ``samples_<task>.jsonl`` per task.

A record is self-describing (config, model identity, versions, data and prompt hashes, metrics
with CIs, every sample). Its shape is defined here, once, by the dataclasses ``Run``, ``ModelInfo``
and ``TaskEntry`` (the JSON Schema shipped in ``evalkit/records/run.schema.json`` is generated from
them, see ``evalkit.records.schema``); ``new_run`` is the one builder that stamps schema version, run
id, creation time, package versions and git sha. Every writer (evaluation, rescoring, merge,
MT-Bench, arena) builds a ``Run`` and every reader gets one from ``load_run``.

Records of schema 1 (before ``kind`` existed) load unchanged: the JSON shape is the same, ``kind``
is inferred. Keys a record holds that the dataclasses do not name are kept in ``other`` and
written back, so a record read and written again loses nothing.

A record is written into a temporary folder and renamed into place, so a run killed while writing
never leaves a half-written record.
"""
from evalkit.records.record import (  # noqa: F401
    KINDS, SCHEMA_VERSION, ModelInfo, RecordError, Run, RunRecord, TaskEntry, atomic_write_text, iter_runs,
    load_run, migrate, new_run, samples_filename, update_run_json, write_run,
)
from evalkit.records.values import MetricValue, SampleRow  # noqa: F401
from evalkit.records.redact import scrub  # noqa: F401
