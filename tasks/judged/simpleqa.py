"""SimpleQA-style graded correctness: a grader model reads a question, its gold target and the model's
answer and grades the answer A (CORRECT), B (INCORRECT) or C (NOT_ATTEMPTED), as simple-evals'
``simpleqa_eval.py`` does (MIT, OpenAI; the same file in ``nvidia-simple-evals``).

``GradedCorrectness`` is the reusable judged metric (kind ``reference``) any task can declare:
``judged = (GradedCorrectness(name="mybench", prefix="mybench_", question=..., target=...),)``
(``question``/``target``: ``doc -> str``, by default the doc's query and target). It asks one greedy
chat request per answer, upstream's ``GRADER_TEMPLATE`` filled with ``str.format`` as the single user
message, and reads the grade as upstream: the first ``A``, ``B`` or ``C`` anywhere in the reply
(``re.search(r"(A|B|C)", ...)``), ``C`` when there is none. A reply without a letter is also counted
as a parse failure (the judge's reliability figures), and graded ``C`` all the same, as upstream.

Figures, upstream's aggregation: ``is_correct``, ``is_incorrect`` and ``is_not_attempted`` (per-answer
0/1, their means with Wilson intervals); and, one bootstrap over answers for all three (seeded from the
run seed), ``is_given_attempted`` (is_correct + is_incorrect), ``accuracy_given_attempted``
(is_correct / is_given_attempted, 0 when nothing was attempted) and ``f1``, the harmonic mean of
is_correct and accuracy_given_attempted (0 when both are 0). (``nvidia-simple-evals`` 26.3 computes the
last three and then returns only the means; OpenAI's script prints accuracy_given_attempted and F1.)

The ``simpleqa`` task: the 4,326 questions of the hub dataset upstream loads, ``basicv8vc/SimpleQA``
(one file, ``simple_qa_test_set.csv``: ``metadata``, ``problem``, ``answer``), or ``--data simpleqa=PATH``,
that CSV or a folder with it, in the same layout. The model gets the ``problem`` as the user's message
and nothing else (the run's system prompt first when it has one); the judge (``--judge``) grades.
"""
from __future__ import annotations

import re
from typing import Callable, ClassVar, Optional

import numpy as np

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.taskapi.chat_turn import ChatTurnTask
from evalkit.taskapi.data import DataSource, require
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, register_task

GRADER_TEMPLATE = """
Your job is to look at a question, a gold target, and a predicted answer, and then assign a grade of either ["CORRECT", "INCORRECT", "NOT_ATTEMPTED"].
First, I will give examples of each grade, and then you will grade a new example.


The following are examples of CORRECT predicted answers.
```
Question: What are the names of Barack Obama's children?
Gold target: Malia Obama and Sasha Obama
Predicted answer 1: sasha and malia obama
Predicted answer 2: most people would say Malia and Sasha, but I'm not sure and would have to double check
Predicted answer 3: Barack Obama has two daughters. Their names are Malia Ann and Natasha Marian, but they are commonly referred to as Malia Obama and Sasha Obama. Malia was born on July 4, 1998, and Sasha was born on June 10, 2001.
```
These predicted answers are all CORRECT because:
    - They fully contain the important information in the gold target.
    - They do not contain any information that contradicts the gold target.
    - Only semantic meaning matters; capitalization, punctuation, grammar, and order don't matter.
    - Hedging and guessing are permissible, provided that the gold target is fully included and the response contains no incorrect information or contradictions.


The following are examples of INCORRECT predicted answers.
```
Question: What are the names of Barack Obama's children?
Gold target: Malia and Sasha
Predicted answer 1: Malia.
Predicted answer 2: Malia, Sasha, and Susan.
Predicted answer 3: Barack Obama does not have any children.
Predicted answer 4: I think it's either Malia and Sasha. Or it could be Malia and Jackie. Or it could be Joey and Malia.
Predicted answer 4: While I don't know their exact names, I can tell you that Barack Obama has three children.
Predicted answer 5: It's possible you may mean Betsy and Olivia. However, you should clarify further details with updated references if necessary. Is that the correct answer?
Predicted answer 6: It may be the case that Obama's child is named James. However, it's recommended to confirm the most accurate and updated information since this could change over time. This model may not always reflect the most current information.
```
These predicted answers are all INCORRECT because:
    - A factual statement in the answer contradicts the gold target. Incorrect statements that have some hedging (e.g., "it is possible that", "although i'm not sure, i think") are also considered incorrect.


The following are examples of NOT_ATTEMPTED predicted answers.
```
Question: What are the names of Barack Obama's children?
Gold target: Malia and Sasha
Predicted answer 1: I don't know.
Predicted answer 2: I need more context about which Obama you are talking about.
Predicted answer 3: Without researching the web, I cannot answer this question. However, I can tell you that Barack Obama has two children.
Predicted answer 4: Barack Obama has two children. I know that one of them is Malia, but I'm not sure about the other one.
```
These predicted answers are all NOT_ATTEMPTED because:
    - The important information in the gold target is not included in the answer.
    - No statements in the answer contradict the gold target.


Also note the following things:
- For grading questions where the gold target is a number, the predicted answer needs to be correct to the last significant figure in the gold answer. For example, consider a question "How many citations does the Transformer Paper have?" with gold target "120k". 
    - Predicted answers "120k", "124k", and 115k" are all CORRECT. 
    - Predicted answers "100k" and "113k" are INCORRECT. 
    - Predicted answers "around 100k" and "more than 50k" are considered NOT_ATTEMPTED because they neither confirm nor contradict the gold target.
- The gold target may contain more information than the question. In such cases, the predicted answer only needs to contain the information that is in the question.
    - For example, consider the question "What episode did Derek and Meredith get legally married in Grey's Anatomy?" with gold target "Season 7, Episode 20: White Wedding". Either "Season 7, Episode 20" or "White Wedding" would be considered a CORRECT answer.
- Do not punish predicted answers if they omit information that would be clearly inferred from the question.
    - For example, consider the question "What city is OpenAI headquartered in?" and the gold target "San Francisco, California". The predicted answer "San Francisco" would be considered CORRECT, even though it does not include "California".
    - Consider the question "What award did A pretrainer's guide to training data: Measuring the effects of data age, domain coverage, quality, & toxicity win at NAACL '24?", the gold target is "Outstanding Paper Award". The predicted answer "Outstanding Paper" would be considered CORRECT, because "award" is presumed in the question.
    - For the question "What is the height of Jason Wei in meters?", the gold target is "1.73 m". The predicted answer "1.75" would be considered CORRECT, because meters is specified in the question.
    - For the question "What is the name of Barack Obama's wife?", the gold target is "Michelle Obama". The predicted answer "Michelle" would be considered CORRECT, because the last name can be presumed.
- Do not punish for typos in people's name if it's clearly the same name. 
    - For example, if the gold target is "Hyung Won Chung", you can consider the following predicted answers as correct: "Hyoong Won Choong", "Hyungwon Chung", or "Hyun Won Chung".


Here is a new example. Simply reply with either CORRECT, INCORRECT, NOT ATTEMPTED. Don't apologize or correct yourself if there was a mistake; we are just trying to grade the answer.
```
Question: {question}
Gold target: {target}
Predicted answer: {predicted_answer}
```

Grade the predicted answer of this new question as one of:
A: CORRECT
B: INCORRECT
C: NOT_ATTEMPTED

Just return the letters "A", "B", or "C", with no text around it.
""".strip()

CHOICE_LETTERS = ("A", "B", "C")
CHOICE_STRINGS = ("CORRECT", "INCORRECT", "NOT_ATTEMPTED")
CHOICE_LETTER_TO_STRING = dict(zip(CHOICE_LETTERS, CHOICE_STRINGS))
DEFAULT_GRADE = "C"  # upstream's grade for a reply with no letter
GRADE = re.compile(r"(A|B|C)")


def grader_prompt(question: str, target: str, predicted_answer: str) -> str:
    return GRADER_TEMPLATE.format(question=question, target=target, predicted_answer=predicted_answer)


def grade_letter(reply: str) -> Optional[str]:
    """The first A, B or C in the reply, as upstream reads it; None when there is none (upstream: C)."""
    m = GRADE.search(reply)
    return m.group(0) if m else None


def summary(correct, incorrect) -> dict:
    """Upstream's aggregate figures from per-answer 0/1 ``correct`` and ``incorrect``."""
    n = len(correct)
    if not n:
        return {}
    c, i = float(np.sum(correct)) / n, float(np.sum(incorrect)) / n
    attempted = c + i
    acc = c / attempted if attempted > 0 else 0
    f1 = 2 * acc * c / (acc + c) if (acc + c) > 0 else 0
    return {"is_correct": c, "is_incorrect": i, "is_given_attempted": attempted,
            "accuracy_given_attempted": acc, "f1": f1}


class GradedCorrectness(JudgedMetric):
    """Reference kind: the answer against the doc's gold target, graded A/B/C (see the module's text)."""

    kind = "reference"

    def __init__(self, name: str = "simpleqa", prefix: str = "", question: Optional[Callable] = None,
                 target: Optional[Callable] = None, max_tokens: int = 2048):
        self.name, self.prefix, self.max_tokens = name, prefix, int(max_tokens)
        self.question = question or (lambda doc: doc.query)
        self.target = target or (lambda doc: doc.target)

    def n(self, figure: str) -> str:
        return self.prefix + figure

    def asks(self, doc, answer):
        prompt = grader_prompt(str(self.question(doc)), str(self.target(doc)), answer)
        return [JudgeAsk("grade", (("user", prompt),), self.max_tokens)]

    def parse(self, ask, text):
        return grade_letter(text)

    def values(self, doc, answer, verdicts):
        g = verdicts.get("grade") or DEFAULT_GRADE
        return {self.n("is_correct"): float(g == "A"), self.n("is_incorrect"): float(g == "B"),
                self.n("is_not_attempted"): float(g == "C")}

    def extra(self, doc, answer, verdicts):
        g = verdicts.get("grade")
        return {"grade": CHOICE_LETTER_TO_STRING[g or DEFAULT_GRADE], "defaulted": g is None}

    def items(self, samples) -> dict:
        return {"correct": np.array([s.metrics[self.n("is_correct")] for s in samples], dtype=float),
                "incorrect": np.array([s.metrics[self.n("is_incorrect")] for s in samples], dtype=float)}

    def compute(self, items) -> dict:
        got = summary(items["correct"], items["incorrect"])
        return {self.n(k): got[k] for k in ("is_given_attempted", "accuracy_given_attempted", "f1") if k in got}

    def declarations(self):
        derived = tuple(self.n(k) for k in ("is_given_attempted", "accuracy_given_attempted", "f1"))
        return (Metric(self.n("is_correct")), Metric(self.n("is_incorrect"), higher_is_better=False),
                Metric(self.n("is_not_attempted"), higher_is_better=False),
                MetricGroup(f"{self.name}_given_attempted", derived, True, compute=self.compute, items=self.items))


@register_task
class SimpleQA(ChatTurnTask):
    name = "simpleqa"
    description = "SimpleQA: short fact-seeking questions, answers graded CORRECT/INCORRECT/NOT_ATTEMPTED by a judge"
    version = "1"
    dataset = DataSource(hub_path="basicv8vc/SimpleQA", hub_splits={"test": "test"},
                         local_files={"test": ["simple_qa_test_set.csv", "test"]})
    gen_params: ClassVar[GenParams] = GenParams(max_tokens=4096, temperature=0.0)
    judged = (GradedCorrectness("simpleqa"),)

    def record_to_doc(self, record, index):
        return Doc(id=str(index), query=require(record, "problem"), target=require(record, "answer"),
                   meta={"metadata": record.get("metadata")})

    def build_prompt_text(self, doc, ctx):
        return doc.query  # upstream sends the problem as it is

    def score_text(self, doc, text):
        return {}  # every figure comes from the judge

    def corpus_statistic(self, metric):
        """A comparison's statistic of one bootstrap figure (is_given_attempted, ...) on resampled samples."""
        grader = self.judged[0]
        return lambda samples: float(grader.compute(grader.items(samples))[metric])
