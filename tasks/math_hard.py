"""``math_hard``: MATH level 5 as the Open LLM Leaderboard v2 runs it (lm-eval's
``leaderboard_math_hard``, ``lm_eval/tasks/leaderboard/math``, frozen for the leaderboard).

The 1,324 level-5 problems of the MATH test set (the leaderboard's seven subject subtasks, averaged
by size), the minerva 4-shot prompt ("Problem:\\n...\\n\\nSolution:", lm-eval's
``list_fewshot_samples``), greedy, up to 1,024 tokens, until "Problem:". Scored both ways the
leaderboard scores (``process_results``):

* ``exact_match``: math-verify on the whole completion against the gold solution (the leaderboard's
  v3 ``exact_match``, evalkit's ``math_verify`` judge);
* ``exact_match_original``: the minerva rule on the "Final Answer: The final answer is ... I hope it
  is correct." line (the leaderboard's ``exact_match_original``, evalkit's minerva ``exact_match``).

What differs from lm-eval: nothing in prompts or scoring (checked item by item against lm-eval's
leaderboard code in tests/tasks/test_math_hard.py); math-verify runs in evalkit's judge workers
with a timeout per item, as for ``math``. The data is the MATH test set (local copy or the hub's
``EleutherAI/hendrycks_math``) filtered to level 5, as the leaderboard's ``process_docs`` filters.
"""
from __future__ import annotations

from dataclasses import replace

from evalkit.scoring.metric import Metric
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.task import Doc, Scored, first_of_each_group, register_task

from .hendrycks_math import MINERVA_FEWSHOT, MINERVA_PARAMS, HendrycksMath

LEADERBOARD_PARAMS = replace(MINERVA_PARAMS, max_tokens=1024)
#: the leaderboard's frozen copy of minerva's four examples (``list_fewshot_samples``) differs from
#: lm-eval's minerva_math (evalkit's ``math``) in three places: a stray "}" after the first problem
#: and two LaTeX line ends "\\\\" written "\\" (a lost escape); the leaderboard's prompt has them
LEADERBOARD_FEWSHOT = [
    (MINERVA_FEWSHOT[0][0] + "}", MINERVA_FEWSHOT[0][1]),
    MINERVA_FEWSHOT[1],
    (MINERVA_FEWSHOT[2][0], MINERVA_FEWSHOT[2][1].replace("30n&=480\\\\\n", "30n&=480\\\n")),
    (MINERVA_FEWSHOT[3][0].replace("6x-4y&=a,\\\\\n", "6x-4y&=a,\\\n"), MINERVA_FEWSHOT[3][1]),
]
RENAMED = {"exact_match": "math_verify", "exact_match_original": "exact_match"}  # leaderboard name -> evalkit's


@register_task
class MathHard(HendrycksMath):
    name = "math_hard"
    description = ("MATH level 5 (1,324), the Open LLM Leaderboard v2's math_hard: minerva 4-shot, "
                   "exact_match (math-verify) and exact_match_original (minerva)")
    metrics = (Metric("exact_match"), Metric("exact_match_original"))

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **{**options, "prompt": options.get("prompt", "minerva")})
        if self.prompt_style != "minerva":
            raise ValueError(f"task {self.name}: the leaderboard's prompt is minerva's 4-shot; "
                             f"for the chat prompt use math or math500")

    def fewshot_pool(self):
        return [Doc(id=f"leaderboard-minerva-{i}", query=p, fewshot_target=s) for i, (p, s) in enumerate(LEADERBOARD_FEWSHOT)]

    def load_docs(self, split, max_docs=None, path=None):
        docs = [d for d in super().load_docs(split, None, path) if d.meta["level"] == 5]
        return docs[:max_docs] if max_docs is not None else docs

    def docs_within_limit(self, docs, limit):
        """``--limit N``: the first N problems of each subject, as lm-eval's group takes its subtasks'."""
        return first_of_each_group(docs, limit, lambda d: d.meta["subject"])

    def params(self, doc, ctx):
        p = super().params(doc, ctx)
        over = ctx.gen_overrides.get("max_tokens")
        return replace(p, max_tokens=int(over) if over is not None else LEADERBOARD_PARAMS.max_tokens)

    def score_batch(self, docs, texts, ctx):
        out = []
        for s in super().score_batch(docs, texts, ctx):
            metrics = {lb: s.metrics[ours] for lb, ours in RENAMED.items()}
            out.append(Scored(metrics, extracted=s.extracted, extra=s.extra))
        return out

    def breakdowns(self, samples):
        subjects = sorted({s.extra["subject"] for s in samples})
        return {f"subject:{g}": {m: mean_metric([s.metrics[m] for s in samples if s.extra["subject"] == g])
                                 for m in RENAMED} for g in subjects}
