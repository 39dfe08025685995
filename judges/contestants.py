"""Who is judged: models evalkit runs (with optional sampling overrides) or imported answer files.

A model spec may carry generation overrides after ``@``: ``hf:smollm2-135m@temperature=0.7@seed=1``
is the tiny model sampling at 0.7 with its own seed, a distinct contestant named
``smollm2-135m@temperature=0.7@seed=1`` (``@name=hot`` renames it). Overrides: ``temperature``
(replaces MT-Bench's per-category temperature), ``top_p``, ``max_tokens``, ``seed``. Variants of
one model share one loaded backend (``BackendPool``), and the judge shares it too when it is the
same model.

Imported answers are FastChat ``model_answer`` JSONL files (``{"question_id", "model_id",
"choices": [{"turns": [...]}]}``); the contestant is named after the file, as FastChat names it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from evalkit.backends import split_spec
from evalkit.taskapi.data import DataError, read_records
from evalkit.run.engine import Engine
from evalkit.run.roles import ModelRole
from evalkit.records.provenance import file_sha256 as file_digest  # noqa: F401 (importable here)

OVERRIDES = {"temperature": float, "top_p": float, "max_tokens": int, "seed": int, "name": str}


@dataclass
class Contestant:
    name: str
    spec: Optional[str] = None           # backend spec without overrides; None for imported answers
    gen: dict = field(default_factory=dict)
    answers_file: Optional[str] = None

    @property
    def imported(self) -> bool:
        return self.answers_file is not None

    def describe(self) -> dict:
        if self.imported:
            return {"name": self.name, "answers_file": self.answers_file,
                    "answers_sha256": file_digest(self.answers_file)}
        return {"name": self.name, "spec": self.spec, "gen_overrides": self.gen}


def parse_model(text: str) -> Contestant:
    """``PREFIX:MODEL[@key=value...]`` -> Contestant."""
    base, *parts = text.strip().split("@")
    prefix, model = split_spec(base)
    gen = {}
    for part in parts:
        if "=" not in part:
            raise ValueError(f"model {text!r}: override {part!r} is not key=value")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in OVERRIDES:
            raise ValueError(f"model {text!r}: unknown override {k!r}; allowed: {', '.join(OVERRIDES)}")
        try:
            gen[k] = OVERRIDES[k](v)
        except ValueError:
            raise ValueError(f"model {text!r}: {k}={v!r} is not a {OVERRIDES[k].__name__}") from None
    name = gen.pop("name", None)
    if name is None:
        shown = os.path.basename(model.rstrip("/")) if os.path.isdir(model) else model
        name = "@".join([shown] + [p.strip() for p in parts])
    return Contestant(name=name, spec=base, gen=gen)


def parse_models(items) -> list[Contestant]:
    """Comma lists and repeated flags of model specs."""
    out = [parse_model(x) for item in items for x in item.split(",") if x.strip()]
    return out


def imported(path: str) -> Contestant:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"--answers {path}: no such file")
    name = p.name[:-len(".jsonl")] if p.name.endswith(".jsonl") else p.stem
    return Contestant(name=name, answers_file=str(p))


def check_unique(contestants: list[Contestant]) -> None:
    seen = set()
    for c in contestants:
        if c.name in seen:
            raise ValueError(f"two contestants are named {c.name!r}; add @name=... to tell them apart")
        seen.add(c.name)


def load_answers(path: str, ids: Optional[set] = None) -> dict[str, list[str]]:
    """FastChat model_answer JSONL -> {question id: [turn answers]} (first choice), checked."""
    out = {}
    for rec in read_records(path):
        d = rec.data
        if "question_id" not in d:
            raise DataError(f"{rec.where}: field 'question_id' is missing")
        choices = d.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        turns = first.get("turns") if isinstance(first, dict) else None
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise DataError(f"{rec.where}: field 'choices[0].turns' should be a list of strings")
        out[str(d["question_id"])] = turns
    if ids is not None:
        missing = sorted(set(ids) - set(out), key=lambda x: (len(x), x))
        if missing:
            raise DataError(f"{path}: no answers for question(s) {', '.join(missing[:10])}"
                            f"{' ...' if len(missing) > 10 else ''}")
    return out


class BackendPool:
    """One backend (and engine) per model spec, shared by all its variants and by the judge."""

    def __init__(self, cache, model_args: Optional[dict] = None, progress=False):
        self.cache = cache
        self.model_args = model_args or {}
        self.progress = progress
        self._backends: dict = {}

    def backend(self, spec: str, model_args: Optional[dict] = None):
        args = self.model_args if model_args is None else model_args
        key = (spec, tuple(sorted((k, repr(v)) for k, v in args.items())))
        if key not in self._backends:  # a contestant is the model role (--model, --model-args)
            self._backends[key] = ModelRole.of("model", spec, args).make()
        return self._backends[key]

    def engine(self, spec: str) -> Engine:
        return Engine(self.backend(spec), self.cache, progress=self.progress)

    def close(self) -> None:
        for b in self._backends.values():
            b.close()
        self._backends.clear()
