"""RULER's ``ruler_vt`` (variable tracking), ``ruler_cwe`` (common-words extraction) and ``ruler_fwe``
(frequent-words extraction) as lm-eval names them (``lm_eval/tasks/ruler/vt.yaml``, ``cwe.yaml``,
``fwe.yaml``): generated at run time from the run seed and the model's tokenizer at the asked lengths
(``synthetic``), prompted with RULER's template and answer prefix, greedy with RULER's budgets
(30 / 120 / 50 new tokens), scored with ``string_match_all``; per-length scores with CIs and the
effective context length as for the needle tasks (``task.RulerNIAH``).

What differs from lm-eval: prompts are sized with the evaluated model's tokenizer without special
tokens; with evalkit's default ``seeding=item`` each sample draws from its own streams (seeded from the
run seed, task, length and index) instead of lm-eval's global ``random`` / ``numpy.random`` / cwe's
module-level ``Random(42)``; ``seeding=sequential`` shares one set of streams seeded with the run seed.
"""
from __future__ import annotations

from typing import ClassVar

from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.task import register_task

from . import synthetic
from .synthetic import Draws
from .task import RulerNIAH


#: RULER's tokens_to_generate of each kind
BUDGETS = {"vt": 30, "cwe": 120, "fwe": 50}


def generate_kind(task, kind: str, variant: str, length: int, ctx) -> list[dict]:
    """The samples of one of RULER's vt / cwe / fwe at one length, seeded from the run seed, the task's
    name, the variant and the length (``seeding=item``), or one set of streams (``seeding=sequential``)."""
    count = lambda text: len(ctx.tokenize(text))  # noqa: E731
    n = task.sample_count()
    base = derive_seed(ctx.seed, task.name, variant, length)
    sequential = task.options.get("seeding", "item") == "sequential"
    if sequential:
        stream = Draws.seeded(ctx.seed)
        size, per = stream, (lambda i: stream)
    else:
        size, per = Draws.seeded(base), (lambda i: Draws.seeded(derive_seed(base, i)))
    if kind == "vt":
        return synthetic.vt_dataset(count, max_seq_length=length, num_samples=n,
                                    icl_draws=size if sequential else Draws.seeded(derive_seed(base, "icl")),
                                    size_draws=size, sample_draws=per)
    gen = synthetic.cwe_generate if kind == "cwe" else synthetic.fwe_generate
    return gen(count, max_seq_length=length, num_samples=n, size_draws=size, sample_draws=per)


class RulerSynthetic(RulerNIAH):
    kind: ClassVar[str] = ""
    tokens_to_generate: ClassVar[int] = 0

    def generate(self, variant: str, length: int, ctx) -> list[dict]:
        try:
            return generate_kind(self, self.kind, variant, length, ctx)
        except ValueError as e:  # RULER's own words, with the task and the option that sets the length
            if "no sample fits" not in str(e):
                raise
            raise ValueError(f"task {self.name}: {e} (lengths={length}): ask a longer length with --task-args "
                             f"{self.name}:lengths=N") from None

    def budget(self, variant: str) -> int:
        return self.tokens_to_generate


def _task(name: str, kind: str, budget: int, what: str) -> type:
    cls = type(f"Ruler_{kind}", (RulerSynthetic,), {
        "name": name, "kind": kind, "variants": (name,), "tokens_to_generate": budget, "__module__": __name__,
        "description": f"RULER {what}: generated at the model's lengths, string_match_all, per-length scores "
                       f"and effective length"})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


Ruler_vt = _task("ruler_vt", "vt", BUDGETS["vt"], "variable tracking (multi-hop chains of VAR X = VAR Y)")
Ruler_cwe = _task("ruler_cwe", "cwe", BUDGETS["cwe"], "common-words extraction (the 10 most frequent words)")
Ruler_fwe = _task("ruler_fwe", "fwe", BUDGETS["fwe"], "frequent-words extraction (the 3 most frequent coded words)")
