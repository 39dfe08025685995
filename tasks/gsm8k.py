"""GSM8K grade-school math, in lm-eval's format by default, and the 8-shot chain-of-thought variant.

``gsm8k``: 5-shot from the first train examples, "Question: ...\\nAnswer: <worked solution> #### N",
greedy until "Question:". ``gsm8k_cot``: the 8 exemplars of Wei et al. (2022), "Q: ...\\nA: ... The
answer is N.". Both report lm-eval's strict and flexible exact match and a numeric match that treats
``1,072.00`` and ``1072`` as equal.
"""
from __future__ import annotations

import re

from evalkit.scoring.answers import FLEXIBLE_NUMBER, INVALID, lm_eval_exact_match, numbers_equal, regex_extract
from evalkit.scoring.metric import Metric
from evalkit.taskapi.data import DataSource, require
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, GenerationTask, Scored, register_task

GSM8K_DATA = DataSource(hub_path="openai/gsm8k", hub_name="main",
                        local_files={"test": ["test.jsonl"], "train": ["train.jsonl"]}, data_dir="gsm8k")

# Wei et al. 2022, "Chain-of-Thought Prompting Elicits Reasoning in Large Language Models", Table 20.
COT_EXEMPLARS = [
    ("There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they are done, "
     "there will be 21 trees. How many trees did the grove workers plant today?",
     "There are 15 trees originally. Then there were 21 trees after some more were planted. So there must have "
     "been 21 - 15 = 6. The answer is 6."),
    ("If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?",
     "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5."),
    ("Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left in total?",
     "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. After eating 35, "
     "they had 74 - 35 = 39. The answer is 39."),
    ("Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many lollipops did "
     "Jason give to Denny?",
     "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny 20 - 12 = 8. "
     "The answer is 8."),
    ("Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys does he have now?",
     "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more toys. 5 + 4 = 9. "
     "The answer is 9."),
    ("There were nine computers in the server room. Five more computers were installed each day, from monday to "
     "thursday. How many computers are now in the server room?",
     "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 = 20 computers "
     "were added. 9 + 20 is 29. The answer is 29."),
    ("Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. How many golf "
     "balls did he have at the end of wednesday?",
     "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After losing 2 more, he "
     "had 35 - 2 = 33 golf balls. The answer is 33."),
    ("Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
     "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 - 15 dollars "
     "left. 23 - 15 is 8. The answer is 8."),
]


def final_answer(solution: str) -> str:
    return solution.split("####")[-1].strip()


@register_task
class GSM8K(GenerationTask):
    name = "gsm8k"
    vote_kind = "number"  # maj@K over repeats votes on the strict, else flexible number
    description = "GSM8K math word problems, lm-eval format: 5-shot, strict/flexible/numeric exact match"
    version = "1"
    dataset = GSM8K_DATA
    eval_split = "test"
    fewshot_split = "train"
    num_fewshot = 5
    fewshot_sampler = "first_n"
    gen_params = GenParams(max_tokens=256, temperature=0.0, stop=("Question:", "</s>", "<|im_end|>"))
    strict_pattern = re.compile(r"#### (\-?[0-9\.\,]+)")
    metrics = (Metric("exact_match_strict"), Metric("exact_match_flexible"), Metric("exact_match_numeric"))
    #: with --repeats: avg@K, pass@k, maj@K of the numeric match (as best-of-N's verdict)
    repeat_metric = "exact_match_numeric"

    def record_to_doc(self, record, index):
        q, a = require(record, "question"), require(record, "answer")
        return Doc(id=str(index), query=f"Question: {q}\nAnswer:", target=a, fewshot_target=a)

    def score_text(self, doc, text):
        strict = regex_extract(text, self.strict_pattern)
        flexible = regex_extract(text, FLEXIBLE_NUMBER, group_select=-1)
        gold = final_answer(doc.target)
        numeric_pred = strict if strict != INVALID else flexible
        metrics = {
            "exact_match_strict": lm_eval_exact_match(strict, doc.target),
            "exact_match_flexible": lm_eval_exact_match(flexible, doc.target),
            "exact_match_numeric": numbers_equal(numeric_pred, gold),
        }
        return Scored(metrics, extracted={"strict": strict, "flexible": flexible}, target=gold)


@register_task
class GSM8KCoT(GSM8K):
    name = "gsm8k_cot"
    description = "GSM8K with the 8 chain-of-thought exemplars of Wei et al.; 'The answer is N' extraction"
    fewshot_split = None
    num_fewshot = 8
    gen_params = GenParams(max_tokens=256, temperature=0.0, stop=("Q:", "</s>", "<|im_end|>"))
    strict_pattern = re.compile(r"The answer is (\-?[0-9\.\,]+).")

    def record_to_doc(self, record, index):
        q, a = require(record, "question"), require(record, "answer")
        return Doc(id=str(index), query=f"Q: {q}\nA:", target=a)

    def fewshot_pool(self):
        return [Doc(id=f"cot-{i}", query=f"Q: {q}\nA:", fewshot_target=a) for i, (q, a) in enumerate(COT_EXEMPLARS)]
