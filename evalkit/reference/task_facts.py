"""What the task catalog says of one task, read from its declaration: metrics with their direction,
where its data comes from (hub, ``--data``, ``--data-root``) and under which licence, its default
settings (few-shot, generation) and how ``--limit`` takes its documents. Nothing here is invented: a
field a task does not declare reads "not declared"."""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass

from evalkit.run.validation import ALWAYS_ALLOWED, task_option_names
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Task

NOT_DECLARED = "not declared"
OWN_RULE = "the task's own rule: "


@dataclass(frozen=True)
class TaskFacts:
    name: str
    description: str
    output_type: str
    metrics: str
    hub: str
    local: str
    folder: str
    licence: str
    fewshot: str
    generation: str
    limit: str
    options: str

    def shared(self) -> tuple:
        """What a variant (a subtask) must share with its parent to be listed in the parent's table."""
        return self.output_type, self.licence, self.fewshot, self.generation, self.limit


def code(text: str) -> str:
    return f"`{text}`"


def metrics_of(cls) -> str:
    """Each declared metric as ``name`` ↑/↓ (corpus-level ones marked), and the repeat figures a task
    that samples several completions per problem by default reports."""
    out = []
    for m in cls().declared_metrics():
        arrow = "↑" if m["higher_is_better"] else "↓"
        out.append(f"{code(m['name'])} {arrow}" + (" (corpus)" if m["level"] == "corpus" else ""))
    params = getattr(cls, "gen_params", None)
    repeats = (f"; with its {params.n} samples per problem also avg@{params.n}, pass@k, pass^k and "
               f"maj@{params.n} ↑") if isinstance(params, GenParams) and params.n > 1 else ""
    return (", ".join(out) or NOT_DECLARED) + repeats


def hub_of(cls) -> str:
    ds = cls.dataset
    if not ds.hub_path:
        return "none"
    split = ds.hub_splits.get(cls.eval_split, cls.eval_split)
    config = f", config {code(ds.hub_name)}" if ds.hub_name else ""
    return f"{code(ds.hub_path)}{config}, split {code(split)}"


def local_of(cls) -> str:
    """What ``--data TASK=PATH`` takes: the file names it looks for in a folder, or the reader."""
    ds = cls.dataset
    if ds.local_reader is not None:
        fn = getattr(ds.local_reader, "func", ds.local_reader)  # a functools.partial
        return f"a file or folder in the original format (read by {code(fn.__module__ + '.' + fn.__qualname__)})"
    if "load_docs" in _overrides(cls) or "eval_docs" in _overrides(cls):
        return "a file or folder (read by the task's own loader)"
    files = ds.local_files.get(cls.eval_split, [cls.eval_split])
    return ("a file (.jsonl, .json, .csv, .tsv or .parquet, optionally .gz), or a folder holding "
            + " or ".join(code(f) for f in files))


def _overrides(cls) -> set:
    """The data hooks of ``Task`` that ``cls`` (or a class or mixin it inherits) overrides."""
    return {k for k in ("load_docs", "eval_docs", "docs_within_limit") if getattr(cls, k) is not getattr(Task, k)}


def fewshot_of(cls) -> str:
    if not cls.num_fewshot:
        return "0-shot"
    split = f" from split {code(cls.fewshot_split)}" if cls.fewshot_split else ""
    return f"{cls.num_fewshot}-shot{split} ({cls.fewshot_sampler.replace('_', ' ')})"


def generation_of(cls) -> str:
    """The task's generation parameters (``gen_params``), the ones that differ from ``GenParams()``."""
    params = getattr(cls, "gen_params", None)
    if cls.output_type not in ("generate", "agent") or not isinstance(params, GenParams):
        return "none (no generation)" if cls.output_type not in ("generate", "agent") else "the task's own"
    base = GenParams()
    shown = ["max_tokens=%d" % params.max_tokens]
    for key in ("temperature", "top_p", "n", "top_k", "min_p", "repetition_penalty", "seed"):
        if getattr(params, key) != getattr(base, key):
            shown.append(f"{key}={getattr(params, key)}")
    if params.stop:
        shown.append("stop=" + json.dumps(list(params.stop), ensure_ascii=False))
    return code(", ".join(shown)) + (" (greedy)" if params.greedy else "")


def limit_of(cls) -> str:
    """How ``--limit N`` takes the task's docs: the first N, or the override's own first sentence."""
    if "docs_within_limit" not in _overrides(cls):
        return "the first N docs (a fraction below 1: that share of the docs, rounded up)"
    doc = inspect.cleandoc(cls.docs_within_limit.__doc__ or "")  # its own, not the one it overrides
    if not doc:
        return OWN_RULE + "see its `docs_within_limit`"
    return OWN_RULE + " ".join(doc.split("\n\n")[0].split()).removeprefix("``--limit N``: ")


def options_of(cls) -> str:
    names = task_option_names(cls)
    if names is None:
        return NOT_DECLARED
    names = sorted(names - ALWAYS_ALLOWED)
    return ", ".join(code(n) for n in names) or "none"


def facts(name: str, cls) -> TaskFacts:
    ds = cls.dataset
    return TaskFacts(
        name=name, description=" ".join((cls.description or NOT_DECLARED).split()), output_type=cls.output_type,
        metrics=metrics_of(cls), hub=hub_of(cls), local=local_of(cls),
        folder=code(getattr(ds, "data_dir", None) or name), licence=getattr(ds, "licence", None) or NOT_DECLARED,
        fewshot=fewshot_of(cls), generation=generation_of(cls), limit=limit_of(cls), options=options_of(cls))
