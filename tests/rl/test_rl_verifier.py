"""evalkit.rl's verifier gives the evaluation metric's value, and nothing for degenerate answers.

Every gold solution of the shared data (GSM8K test, MATH-500, HumanEval, MBPP canonical) is scored
twice: as the runner scores a completion (task docs loaded from the data files, ``score_all``) and
as a reward (the exported gold record rebuilt by the verifier). They must agree item by item, and
a copy with the final number changed must earn 0.
"""
from __future__ import annotations

import json
import re

import pytest

from tests.conftest import shared
from evalkit.taskapi.requests import Completion
from evalkit.rl import Verifier
from evalkit.rl.export import iter_items
from evalkit.rl.guards import strip_think
from evalkit.taskapi.task import RunContext


def eval_metric(task, docs, texts, metric, chat=False):
    """The evaluation's value: the runner's call (one generate request answered by one completion)."""
    samples = task.score_all(docs, [[[Completion(t, "stop")]] for t in texts],
                             RunContext(num_fewshot=0, apply_chat_template=chat))
    return [s.metrics[metric] for s in samples]


def items(task, data, limit=None):
    out = list(iter_items(task, str(data), limit=limit))
    return out[0][0], [d for _, d, _ in out], [r for _, _, r in out]


def bump_last_number(text: str) -> str:
    nums = list(re.finditer(r"-?\d+", text))
    m = nums[-1]
    return text[:m.start()] + str(int(m.group()) + 1) + text[m.end():]


def test_gsm8k_gold_solutions_and_perturbed_copies():
    task, docs, records = items("gsm8k", shared("gsm8k"))
    assert len(docs) == 1319
    gold_texts = [r["answer"] for r in records]
    wrong = [bump_last_number(t) for t in gold_texts]
    ver = Verifier("gsm8k")
    for texts in (gold_texts, wrong):
        metric = eval_metric(task, docs, texts, "exact_match_numeric")
        rewards = ver.rewards(records, texts)
        assert rewards == metric
    assert sum(eval_metric(task, docs, gold_texts, "exact_match_numeric")) == 1319
    assert sum(ver.rewards(records, wrong)) == 0
    # plain-answer golds (what verl's own GSM8K data holds) give the same rewards
    plain = [r["answer"].split("####")[-1].strip() for r in records]
    assert ver.rewards(plain, gold_texts) == [1.0] * 1319


@pytest.mark.slow  # the eval side runs judge_one (math-verify + minerva's sympy check): ~3 minutes loaded
def test_math500_gold_solutions_and_perturbed_copies():
    task, docs, records = items("math500", shared("math", "MATH-500", "test.jsonl"))
    assert len(docs) == 500
    sols = [r["solution"] for r in records]
    ver = Verifier("math500")
    metric = eval_metric(task, docs, sols, "math_verify")
    verdicts = ver.verify_batch(records, sols)
    assert [v.reward for v in verdicts] == metric
    assert sum(metric) >= 490, [v.reason for v in verdicts if v.reward != 1.0][:10]
    # integer answers boxed with the wrong number
    idx = [i for i, r in enumerate(records) if re.fullmatch(r"-?\d+", r["answer"].strip())]
    assert len(idx) > 200
    wrong = [sols[i].replace("\\boxed{" + records[i]["answer"].strip() + "}",
                             "\\boxed{" + str(int(records[i]["answer"]) + 1) + "}") for i in idx]
    keep = [k for k, w in enumerate(wrong) if w != sols[idx[k]]]
    sub_docs, sub_rec = [docs[idx[k]] for k in keep], [records[idx[k]] for k in keep]
    sub_wrong = [wrong[k] for k in keep]
    assert ver.rewards(sub_rec, sub_wrong) == eval_metric(task, sub_docs, sub_wrong, "math_verify")
    assert sum(ver.rewards(sub_rec, sub_wrong)) == 0


@pytest.mark.parametrize("name,folder,n", [("humaneval", "humaneval", 164), ("mbpp", "mbpp", 500)])
def test_code_canonical_solutions(name, folder, n):
    task, docs, records = items(name, shared(folder))
    assert len(docs) == n
    texts = [task.canonical_prediction(d) for d in docs]
    with Verifier(name) as ver:
        rewards = ver.rewards(records, texts)
        assert rewards == eval_metric(task, docs, texts, "pass@1")
        assert sum(rewards) == n
        broken = ["    import os\n    os._exit(0)\n" if name == "humaneval" else "import os\nos._exit(0)\n"
                  for _ in docs[:20]]
        assert ver.rewards(records[:20], broken) == [0.0] * 20


# ---- adversarial completions never earn a reward -------------------------------------------

def test_gsm8k_adversarial():
    ver = Verifier("gsm8k")
    spam = " ".join(f"#### {i}" for i in range(1, 100))
    assert ver.rewards([str(g) for g in range(1, 100)], [spam] * 99) == [0.0] * 99
    million = " ".join(str(i) for i in range(200_000))[:1_000_000]
    v = ver.verify("199999", million + " 199999")
    assert v.reward == 0.0 and v.reason.startswith("too long")
    # the bare metric would have rewarded both (what the guards are for)
    bare = Verifier("gsm8k", use_guards=False)
    assert bare.verify("1", spam).reward == 1.0
    assert bare.verify("199999", million + " 199999").reward == 1.0


def test_answer_only_inside_thinking_trace():
    trace = "<think>16 - 3 - 4 = 9 eggs, 9 * 2 = 18 so #### 18</think>I am not sure."
    assert Verifier("gsm8k", strip_think=True).verify("18", trace).reward == 0.0
    assert Verifier("gsm8k").verify("18", trace).reward == 1.0  # unstripped the trace's answer counts
    assert Verifier("gsm8k", strip_think=True).verify("18", "<think>9*2</think>#### 18").reward == 1.0
    assert strip_think("opened in the prompt #### 3 </think> #### 4") == "#### 4"
    # a trace that never closes leaves no answer: the evaluation never scores it, the reward is 0
    assert strip_think("answer #### 4 <think> #### 5") == ""
    assert Verifier("gsm8k", strip_think=True).verify("4", "answer #### 4 <think> #### 5").reward == 0.0
    from evalkit.scoring.thinking import separate
    for text in ("<think>a #### 1</think> #### 2", "<think>a</think> X <think>b</think> #### 3", "#### 7"):
        assert strip_think(text) == separate(text).answer     # one splitter for reward and metric
    m = Verifier("math", strip_think=True)
    assert m.verify("18", "<think>\\boxed{18}</think> no idea").reward == 0.0
    assert m.verify("18", "<think>hmm</think> so \\boxed{18}").reward == 1.0


def test_math_and_letter_adversarial():
    m = Verifier("math")
    spam = " ".join(f"\\boxed{{{i}}}" for i in range(1, 100))
    assert m.rewards([str(i) for i in (1, 50, 99)], [spam] * 3) == [0.0] * 3
    assert m.verify("7", "\\boxed{7}" * 200_000).reward == 0.0
    mm = Verifier("mmlu")
    assert mm.rewards(list("ABCD"), ["Answer: A\nAnswer: B\nAnswer: C\nAnswer: D"] * 4) == [0.0] * 4
    assert mm.verify("C", "Reasoning...\nAnswer: C").reward == 1.0


def test_unusable_gold_is_none():
    ver = Verifier("gsm8k")
    assert ver.verify(None, "#### 3").reward is None
    assert ver.verify("{not json", "#### 3").reward is None
    assert Verifier("humaneval").verify("42", "return 1").reward is None
    assert json.loads(json.dumps(ver.certificate()))["verifier_hash"].startswith("evk-")


def test_plain_golds_from_other_datasets():
    m = Verifier("math")
    assert m.verify("Since $x=2$, we get $\\boxed{\\frac{1}{2}}$.", "so \\boxed{0.5}").reward == 1.0  # a solution
    assert m.verify("\\frac{1}{2}", "so \\boxed{1/2}").reward == 1.0                                  # an answer
    g = Verifier("gsm8k")
    assert g.verify("He pays 3*4=12.\n#### 1,072", "The total is $1072.00").reward == 1.0


def test_multiple_choice_records_follow_the_prompt():
    """GPQA's prompt shows a seeded permutation: the rewarded letter is where the right answer is shown."""
    from evalkit.taskapi import registry
    rec = {"Question": "Which is a made-up test item?", "Correct Answer": "this one", "Incorrect Answer 1": "no",
           "Incorrect Answer 2": "nope", "Incorrect Answer 3": "never", "Record ID": "synthetic-1"}
    task = registry.get_task_class("gpqa_diamond_cot")()
    shown = task.permuted(task.record_to_doc(rec, 0), RunContext(seed=1234), 0)
    letter = "ABCD"[shown.gold]
    assert "this one" in task.prompt_text(shown, RunContext(seed=1234)).split(f"{letter}) ")[1].splitlines()[0]
    ver = Verifier("gpqa_diamond", seed=1234)
    assert [ver.verify(rec, f"...\nAnswer: {x}").reward for x in "ABCD"] == [float(x == letter) for x in "ABCD"]
    mm = Verifier("mmlu")
    mrec = {"subject": "anatomy", "question": "q?", "choices": ["a", "b", "c", "d"], "answer": 2}
    assert [mm.verify(mrec, f"Answer: {x}").reward for x in "ABCD"] == [0.0, 0.0, 1.0, 0.0]
