"""MMLU-Pro (Wang et al. 2024, "MMLU-Pro: A More Robust and Challenging Multi-Task Language
Understanding Benchmark", NeurIPS; data: the hub dataset ``TIGER-Lab/MMLU-Pro``, MIT) as the Open
LLM Leaderboard v2 runs it (lm-eval's ``leaderboard_mmlu_pro``): 12,032 questions with up to ten
options, 5-shot from the first five questions of the validation split (whatever their category),
"question\\nA. option\\n...\\nAnswer:" and the letter after a space for each example, each option's
letter scored by loglikelihood; ``acc`` is the leaderboard's figure (``acc_norm`` beside it).
Reported over items and per category (14 of them), each with a CI.

TIGER-Lab's own evaluation (5-shot chain of thought from the same category, "The answer is (X)")
is a generation task that evalkit does not ship here; the leaderboard's variant is what this is.

Data: the hub dataset, or with ``--data mmlu_pro=DIR`` a local copy in the hub's layout
(``data/test-00000-of-00001.parquet`` and ``data/validation-...``, or ``test.jsonl`` and
``validation.jsonl``). Fields: ``question``, ``options`` (a list), ``answer`` (the letter; else
``answer_index``), ``category``. evalkit does nothing differently from lm-eval here.
"""
from __future__ import annotations

import string

from evalkit.scoring.metric import Metric
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.data import DataSource, FieldError, require
from evalkit.taskapi.task import Doc, MultipleChoiceTask, register_task

LETTERS = string.ascii_uppercase[:10]
_FILES = {s: [s, f"data/{s}-00000-of-00001"] for s in ("test", "validation")}


@register_task
class MMLUPro(MultipleChoiceTask):
    name = "mmlu_pro"
    description = "MMLU-Pro as the Open LLM Leaderboard v2 runs it: 10-option MC, 5-shot, acc; per category"
    version = "1"
    family = "mmlu_pro"
    dataset = DataSource(hub_path="TIGER-Lab/MMLU-Pro", local_files=_FILES, licence="MIT")
    eval_split = "test"
    fewshot_split = "validation"
    fewshot_sampler = "first_n"
    num_fewshot = 5
    metrics = (Metric("acc"), Metric("acc_norm"))

    def record_to_doc(self, record, index):
        options = require(record, "options", object)
        if hasattr(options, "tolist"):
            options = options.tolist()
        if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS):
            raise FieldError("options", f"should be a list of 2 to 10 options, got {options!r}"[:200])
        letters = list(LETTERS[:len(options)])
        answer = record.get("answer")
        if isinstance(answer, str) and answer in letters:
            gold = letters.index(answer)
        else:
            gold = require(record, "answer_index", object)
            gold = int(gold) if hasattr(gold, "__index__") and not isinstance(gold, bool) else gold
            if not isinstance(gold, int) or not 0 <= gold < len(options):
                raise FieldError("answer", f"should be one of {''.join(letters)} (or answer_index a valid index), "
                                           f"got {answer!r}")
        text = f"{require(record, 'question')}\n" + "".join(f"{letters[i]}. {o}\n" for i, o in enumerate(options))
        return Doc(id=str(record.get("question_id", index)), query=text + "Answer:", choices=letters, gold=gold,
                   target=letters[gold], fewshot_target=letters[gold], meta={"category": record.get("category")})

    def score(self, doc, responses, ctx):
        s = super().score(doc, responses, ctx)
        s.extra = {**(s.extra or {}), "category": doc.meta["category"]}
        return s

    def breakdowns(self, samples):
        groups: dict = {}
        for s in samples:
            groups.setdefault(s.extra.get("category"), []).append(s)
        return {f"category:{c}": {m: mean_metric([s.metrics[m] for s in rows]) for m in ("acc", "acc_norm")}
                for c, rows in sorted(groups.items(), key=lambda kv: str(kv[0]))}
