"""One foreign task -> one task of an evalkit record (kind ``import``), the steps every importer takes.

1. ``Pairing.open``: when the foreign task maps to an evalkit task and its files are not evalkit's own
   export, read that task's evaluation docs (else a note: rows keep the foreign ids).
2. The format turns each foreign sample into a row; a sample paired with a doc counts whether the
   prompts agree (``Pairing.paired``), one that is no doc of the task counts as missed.
3. ``Pairing.check``: missed docs are an error naming the fix, or (``--allow-mismatch``) a note, and
   the task is imported under its foreign name.
4. ``task_entry``: the record's entry of the rows, the metrics (an export's own figures win), and
   the format's details under its key.
"""
from __future__ import annotations

from typing import Any, Optional

from evalkit.records import TaskEntry, hashes, samples_filename
from evalkit.taskapi import registry
from evalkit.taskapi.items import RunContext
from evalkit.util.errors import EvalkitError


def evalkit_docs(ek_task: str, data_path: Optional[str]):
    """(task instance, its evaluation docs) or (None, reason)."""
    try:
        task = registry.get_task_class(ek_task)(data_path=data_path)
        return task, task.eval_docs()
    except (EvalkitError, ValueError, OSError, ImportError, KeyError) as e:
        return None, f"{type(e).__name__}: {e}"


def contradiction(what: str, fix: str, kept: str, allow: bool, notes: list) -> None:
    """Files that contradict themselves: an error naming the fix, or (``--allow-mismatch``) a note."""
    if not allow:
        raise EvalkitError(f"{what}; {fix}")
    notes.append(f"{what}; {kept}")


class Pairing:
    """A foreign task's docs against an evalkit task's: ``task`` and ``docs`` when they are paired
    (``None`` and ``[]`` otherwise), ``data_path`` the data read, ``own`` whether the files are
    evalkit's own export (they carry evalkit's identities, nothing is looked up), and the counts."""

    def __init__(self, data_path: Optional[str], own: bool, ctx: RunContext):
        self.data_path, self.own, self.ctx = data_path, own, ctx
        self.task: Any = None
        self.docs: list = []
        self.unreadable: Optional[str] = None  # why the evalkit task's data could not be read
        self.same_prompt = 0
        self.missed = 0

    @classmethod
    def open(cls, ek_task: Optional[str], data_path: Optional[str], own: bool, ctx: RunContext) -> "Pairing":
        pairing = cls(data_path, own, ctx)
        if ek_task and not own:
            task, docs = evalkit_docs(ek_task, data_path)
            if task is None:
                pairing.unreadable = docs
            else:
                pairing.task, pairing.docs = task, docs
        return pairing

    def unreadable_note(self, foreign: str, ek_task: str, ids: str) -> str:
        return (f"{foreign}: evalkit task {ek_task}'s data could not be read ({self.unreadable}); rows keep "
                f"{ids} and will not pair with evalkit runs")

    def paired(self, doc, prompt) -> None:
        """A foreign sample is ``doc``: count whether evalkit's prompt for it is the foreign one."""
        try:
            self.same_prompt += self.task.prompt_of(doc, self.ctx) == prompt
        except (EvalkitError, ValueError, OSError, KeyError, IndexError):
            pass

    def check(self, what: str, foreign: str, kept: str, allow: bool, notes: list) -> bool:
        """Whether docs were missed: an error, or (``allow``) a note and the task is unpaired (imported as
        ``foreign``, e.g. "lm-eval's gsm8k"; ``kept`` says which ids the rows keep)."""
        if not self.missed:
            return False
        contradiction(what, f"check --task-map and --data, or pass --allow-mismatch to import it as {foreign}",
                      f"imported as {foreign}{kept}", allow, notes)
        self.task = None
        return True

    def version(self, name: str, foreign_version):
        """The paired evalkit task's version, else the foreign one."""
        cls = registry.all_tasks().get(name) if self.task is not None else None
        return cls.version if cls is not None else foreign_version

    def data_source(self) -> Optional[str]:
        """The evalkit data the rows are paired with (``None``: the foreign data source)."""
        return self.data_path if self.task is not None or self.own else None


def task_entry(pairing: Pairing, name: str, rows: list, metrics: dict, own_metrics, key: str, info: dict,
               **fields) -> TaskEntry:
    """The record's entry: ``metrics`` (or, in an export, its own figures with their kinds and CIs), the
    format's ``info`` under ``key`` and ``fields`` (version, description, config, data_source, ...)."""
    if pairing.own and isinstance(own_metrics, dict):
        metrics = {k: v for k, v in own_metrics.items() if isinstance(v, dict)}
    if pairing.task is not None:
        info["prompts_identical_to_evalkit"] = pairing.same_prompt
    return TaskEntry(dataset_fingerprint=hashes.dataset_fingerprint(rows), prompt_hash=hashes.prompt_hash(rows),
                     metrics=metrics, samples_file=samples_filename(name), extra={key: info}, **fields)
