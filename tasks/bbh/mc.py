"""``bbh_mc``: the Open LLM Leaderboard v2's BIG-Bench Hard (lm-eval's ``leaderboard_bbh_<subtask>``):
24 subtasks (not dyck_languages, multistep_arithmetic_two, word_sorting, whose answers are free
text), 3-shot, each option scored by loglikelihood, acc and acc_norm (the leaderboard's figure).

The prompt is lm-eval's: the paper's task description, directly followed (no separator, as the
leaderboard's configs have it) by the three questions of the paper's prompt file with their final
answers ("Q: <question>\\nA: <answer>", the chains of thought left out) and the item's question,
joined by blank lines, ending in "A:"; the options are the leaderboard's (below), continued with a
space. acc_norm divides each option's loglikelihood by its length in characters.
"""
from __future__ import annotations

from evalkit.scoring.metric import Metric
from evalkit.scoring.subtasks import macro_group
from evalkit.taskapi.data import FieldError
from evalkit.taskapi.task import MultipleChoiceTask, Scored, register_task

from .common import BBHBase
from .data import bbh_source

_L = tuple(f"({c})" for c in "ABCDEFGHIJKLMNOPQR")
# the options of lm-eval's leaderboard/bbh_mc/<subtask>.yaml (doc_to_choice)
CHOICES = {
    "boolean_expressions": ("False", "True"), "causal_judgement": ("Yes", "No"), "date_understanding": _L[:6],
    "disambiguation_qa": _L[:3], "formal_fallacies": ("valid", "invalid"), "geometric_shapes": _L[:11],
    "hyperbaton": _L[:2], "logical_deduction_five_objects": _L[:5], "logical_deduction_seven_objects": _L[:7],
    "logical_deduction_three_objects": _L[:3], "movie_recommendation": _L[:6], "navigate": ("Yes", "No"),
    "object_counting": tuple(str(i) for i in range(19)), "penguins_in_a_table": _L[:5],
    "reasoning_about_colored_objects": _L[:18], "ruin_names": _L[:6], "salient_translation_error_detection": _L[:6],
    "snarks": _L[:2], "sports_understanding": ("yes", "no"), "temporal_sequences": _L[:4],
    "tracking_shuffled_objects_five_objects": _L[:5], "tracking_shuffled_objects_seven_objects": _L[:7],
    "tracking_shuffled_objects_three_objects": _L[:3], "web_of_lies": ("Yes", "No"),
}
MC_SUBTASKS = tuple(CHOICES)


@register_task
class BBHMC(BBHBase, MultipleChoiceTask):
    name = "bbh_mc"
    description = "BIG-Bench Hard as the Open LLM Leaderboard v2 runs it: 24 subtasks, 3-shot MC, acc_norm; micro+macro"
    version = "1"
    family = "bbh"
    dataset = bbh_source(MC_SUBTASKS)
    subtasks = MC_SUBTASKS
    eval_split = "test"
    num_fewshot = 3
    grouped_metrics = ("acc", "acc_norm")
    metrics = (Metric("acc"), Metric("acc_norm"), macro_group(grouped_metrics))

    def record_to_doc(self, record, index):
        doc = super().record_to_doc(record, index)
        if doc.meta["subtask"] not in CHOICES:
            return None  # a free-text subtask of the same folder
        choices = CHOICES[doc.meta["subtask"]]
        if not isinstance(doc.target, str):
            raise FieldError("target", f"should be str, got {type(doc.target).__name__}")
        # three items of the paper's data name the movie/band instead of the option letter
        # (movie_recommendation 163, ruin_names 99 and 144): lm-eval warns and scores them wrong
        # (gold -100); so does evalkit, and the record counts them
        doc.choices = list(choices)
        doc.gold = choices.index(doc.target) if doc.target in choices else None
        return doc

    def build_prompt_text(self, doc, ctx):
        prompt, k = self.shots(doc, ctx)
        shots = [f"Q: {q}\nA: {answer}" for q, _, answer in prompt.exemplars[:k]]
        return prompt.description + "\n\n".join([*shots, f"Q: {doc.query}\nA:"])

    def score(self, doc, responses, ctx):
        s = super().score(doc, responses, ctx)
        extra = {"subtask": doc.meta["subtask"]}
        if doc.gold is None:
            extra["target_not_an_option"] = True
        return Scored(s.metrics, extracted=doc.choices[s.extracted], target=doc.target, extra=extra)

    def run_extra(self, samples):
        bad = [s.doc_id for s in samples if s.extra.get("target_not_an_option")]
        return {"targets_not_an_option": bad} if bad else {}

    def sample_target(self, doc):
        return doc.target


def _subtask_task(subtask: str) -> type:
    cls = type(f"BBHMC_{subtask}", (BBHMC,), {
        "name": f"bbh_mc_{subtask}",
        "description": f"BIG-Bench Hard {subtask.replace('_', ' ')}, leaderboard 3-shot MC, acc_norm",
        "dataset": bbh_source((subtask,)), "subtasks": (subtask,), "__module__": __name__,
        "metrics": (Metric("acc"), Metric("acc_norm"))})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


for _subtask in MC_SUBTASKS:
    globals()[f"BBHMC_{_subtask}"] = _subtask_task(_subtask)
