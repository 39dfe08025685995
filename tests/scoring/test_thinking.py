"""Trace/answer separation on the forms reasoning models really produce (evalkit.scoring.thinking), the
cached JSON of completions with traces (old entries still load), and the budget figures."""
from __future__ import annotations

import pytest

from evalkit.scoring import budgets
from evalkit.run import traces
from evalkit.taskapi.requests import Completion, GenerateRequest, response_from_json, response_to_json
from evalkit.scoring.thinking import ThinkingConfig, prompt_opens_trace, separate
from evalkit.tasks.gsm8k import GSM8K

# DeepSeek-R1 / Qwen3 style: the trace tries a wrong total before the final answer
R1 = ("<think>\nOkay, so Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4, so 16 - 3 = 13... "
      "wait, #### 13 is not it, I forgot the muffins. 16 - 3 - 4 = 9. She sells 9 at $2, so 9 * 2 = 18.\n"
      "</think>\n\nJanet sells 9 eggs at $2 each.\n#### 18")
# DeepSeek-R1's template prefills "<think>\n": the completion starts inside the trace
R1_PREFILLED = R1[len("<think>\n"):]
# Qwen3 with enable_thinking=False: the template writes an empty trace into the prompt
QWEN_NO_THINK_PROMPT = "<|im_start|>assistant\n<think>\n\n</think>\n\n"


def test_closed_trace_with_a_wrong_answer_inside():
    s = separate(R1)
    assert s.status == "closed" and s.source == "markers"
    assert "#### 13" in s.trace and "#### 13" not in s.answer
    assert s.answer == "Janet sells 9 eggs at $2 each.\n#### 18" and s.raw == R1
    gsm = GSM8K()
    from evalkit.taskapi.task import Doc
    doc = Doc("0", "q", target="... #### 18")
    assert gsm.score_text(doc, s.answer).metrics["exact_match_strict"] == 1.0
    assert gsm.score_text(doc, R1).metrics["exact_match_strict"] == 0.0  # the old behaviour: the first ####


def test_prefilled_opening_marker_inferred_and_declared():
    s = separate(R1_PREFILLED)
    assert s.status == "closed" and s.answer.endswith("#### 18") and "#### 13" in s.trace
    assert any("without an opening" in n for n in s.notes)
    declared = separate(R1_PREFILLED, prefilled=True)
    assert declared.answer == s.answer and not any("without an opening" in n for n in declared.notes)
    assert prompt_opens_trace("<|Assistant|><think>\n", ThinkingConfig()) is True
    assert prompt_opens_trace(QWEN_NO_THINK_PROMPT, ThinkingConfig()) is False
    assert prompt_opens_trace("Question: 2+2?\nAnswer:", ThinkingConfig()) is False


@pytest.mark.parametrize("finish,why", [("length", "cut by max_tokens"), ("stop", "stopped while thinking")])
def test_unterminated_trace_is_never_an_answer(finish, why):
    text = "<think>\nLet me compute 16 - 3 - 4 = 9 so maybe #### 9 and then 9 * 2"
    s = separate(text, finish_reason=finish)
    assert s.status == "unclosed" and s.answer == "" and "#### 9" in s.trace
    assert any(why in n for n in s.notes)
    # a prefilled prompt whose completion never reached </think>
    p = separate("Let me compute #### 9", finish_reason=finish, prefilled=True)
    assert p.status == "unclosed" and p.answer == ""
    # without the prefill hint such text is a plain answer (a model that does not think)
    assert separate("Let me compute #### 9").status == "none"


def test_other_markers_configurable():
    cfg = ThinkingConfig.from_options({"think_start": "<|channel|>analysis<|message|>", "think_end": "<|end|>"})
    text = "<|channel|>analysis<|message|>2+2 is 5? no, #### 4<|end|>#### 4"
    s = separate(text, cfg)
    assert s.status == "closed" and s.answer == "#### 4"
    # default markers do not apply; without them the text reads as a harmony transcript with no final channel
    assert (separate(text).status, separate(text).source) == ("unclosed", "harmony")
    for bad in ({"think_start": ""}, {"think_start": "x", "think_end": "x"}, {"bogus": 1},
                {"think_prefilled": "maybe"}):
        with pytest.raises(ValueError):
            ThinkingConfig.from_options(bad)


@pytest.mark.parametrize("text,answer,note", [
    ("<think>a</think><think>b #### 3</think>#### 5", "#### 5", "repeated"),
    ("<think>outer <think>inner #### 2</think> more</think> #### 6", "#### 6", "nested"),
    ("#### 1 first guess</think>#### 7", "#### 7", "without an opening"),
    ("<think>only a trace #### 4</think>", "", "empty answer"),
    ("<think></think>", "", "empty answer"),
    ("<think>x</think> #### 8 <think>second thoughts", "#### 8", "never closed"),
    ("<think>x</think><think>second thoughts", "", "never closed"),
])
def test_bad_forms_are_counted_and_explained(text, answer, note):
    s = separate(text)
    assert s.answer == answer
    assert any(note in n for n in s.notes), s.notes
    assert s.status in ("closed", "unclosed")


def test_server_reasoning_field():
    s = separate("#### 18", field_trace="16 - 3 = 13, so #### 13? no: 18")
    assert (s.status, s.source, s.answer) == ("closed", "field", "#### 18") and "#### 13" in s.trace
    cut = separate("", finish_reason="length", field_trace="16 - 3 = 13 ...")
    assert cut.status == "unclosed" and cut.answer == ""
    empty = separate("", field_trace="done thinking")
    assert empty.status == "closed" and any("empty answer" in n for n in empty.notes)
    both = separate("<think>more</think>#### 2", field_trace="first")
    assert both.answer == "#### 2" and "more" in both.trace and "first" in both.trace


def test_completion_json_backward_compatible():
    old = [["#### 5", "stop"]]  # an entry written before traces existed
    assert response_from_json("generate", old) == [Completion("#### 5", "stop")]
    plain = [Completion("x", "length")]
    assert response_to_json("generate", plain) == [["x", "length"]]  # unchanged shape for plain answers
    rich = [Completion("#### 5", "stop", trace="t", usage={"completion_tokens": 3, "reasoning_tokens": 2})]
    assert response_from_json("generate", response_to_json("generate", rich)) == rich


def _rows(texts_finish, keep=False):
    req = GenerateRequest(prompt="Question: q\nAnswer:")
    per_doc = [[[Completion(t, f, trace=tr)]] for t, f, tr in texts_finish]
    scored, seps = traces.split_answers(per_doc, ThinkingConfig(keep=keep), traces.PrefillProbe(ThinkingConfig())(
        [[req]]))
    from evalkit.taskapi.items import Sample
    samples = [Sample(str(i), "h", "p", [c.text for c in r[0]], "t", {}, extracted=None,
                      extra={"finish_reason": r[0][0].finish_reason})  # as GenerationTask.sample_of does
               for i, r in enumerate(scored)]
    traces.annotate(samples, seps, count_tokens=str.split)
    return [s.to_dict() for s in samples]


def test_budget_figures_from_samples():
    rows = _rows([(R1, "stop", None), ("<think>16 - 3 = 13 and", "length", None), ("#### 4", "stop", None),
                  ("", "stop", "a field trace")])
    b = budgets.task_budget(rows)
    assert b["n"] == 4 and b["hit_token_limit"] == 0.25 and b["unclosed_trace"] == 0.25
    assert b["no_answer"] == 0.5  # the unclosed one and the empty answer after the field trace
    assert b["with_trace"] == 0.75
    assert "mean_trace_tokens" not in b  # the plain answer has no token count: chars only, said so
    assert b["mean_answer_chars"] == (len("Janet sells 9 eggs at $2 each.\n#### 18") + len("#### 4")) / 4
    assert any("max_tokens" in w for w in b["warnings"]) and len(b["warnings"]) == 3
    assert rows[0]["extra"]["thinking"]["raw"] == R1 and rows[0]["responses"] == [separate(R1).answer]
    traced = budgets.task_budget(_rows([(R1, "stop", None), ("<think>a b</think>c", "stop", None)]))
    assert traced["token_source"] == "tokenizer" and traced["mean_answer_tokens"] == (9 + 1) / 2
    assert traced["warnings"] == []


def test_keep_thinking_scores_raw_but_reports_the_same_budget():
    forms = [(R1, "stop", None), ("<think>cut", "length", None)]
    stripped, kept = _rows(forms), _rows(forms, keep=True)
    assert kept[0]["responses"] == [R1] and stripped[0]["responses"] != [R1]
    assert budgets.task_budget(kept) == budgets.task_budget(stripped)


def test_reasoning_preset_reads_model_card_sampling(tmp_path):
    from evalkit.cli.reasoning_args import DEFAULT_THINKING_BUDGET, model_card_sampling, preset_overrides
    (tmp_path / "generation_config.json").write_text('{"do_sample": true, "temperature": 0.6, "top_p": 0.95}')
    card = model_card_sampling(f"hf:{tmp_path}", "hf")
    assert card == {"temperature": 0.6, "top_p": 0.95}
    assert preset_overrides({}, None, card) == {"max_tokens": DEFAULT_THINKING_BUDGET, "temperature": 0.6,
                                                 "top_p": 0.95}
    assert preset_overrides({"temperature": 0.0}, 2048, card)["temperature"] == 0.0  # --gen-kwargs win
    (tmp_path / "generation_config.json").write_text('{"temperature": 0.6}')  # no do_sample: greedy
    assert model_card_sampling(f"hf:{tmp_path}", "hf") == {}
    assert preset_overrides({}, 1024, {}) == {"max_tokens": 1024, "temperature": 0.0}
    assert model_card_sampling("openai:o3-mini", "openai") == {}


def test_evalkit_score_strips_traces_from_saved_outputs(tmp_path, capsys):
    import json
    from evalkit.cli import main
    data = tmp_path / "gsm"
    data.mkdir()
    (data / "test.jsonl").write_text(json.dumps({"question": "Janet's eggs?", "answer": "16 - 3 - 4 = 9, 9 * 2 = 18 "
                                                                                      "#### 18"}) + "\n")
    (data / "train.jsonl").write_text("".join(json.dumps({"question": f"t{i}?", "answer": f"#### {i}"}) + "\n"
                                               for i in range(5)))
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"doc_id": "0", "prediction": R1}) + "\n")
    assert main(["score", "--task", "gsm8k", "--predictions", str(preds), "--data", str(data),
                 "--output", str(tmp_path / "out")]) == 0
    run_json = next((tmp_path / "out").glob("*/run.json"))
    rec = json.loads(run_json.read_text())
    assert rec["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"] == 1.0
    row = json.loads((run_json.parent / "samples_gsm8k.jsonl").read_text())
    assert row["extra"]["thinking"]["raw"] == R1 and row["extracted"]["strict"] == "18"


def test_a_code_answer_after_the_trace_keeps_its_indentation():
    """HumanEval-style completions are function bodies: the answer after ``</think>`` keeps the
    indentation of its first line (only the separating blank lines and spaces go)."""
    from evalkit.scoring.thinking import separate
    body = "    total = 0\n    for x in xs:\n        total += x\n    return total"
    assert separate("<think>sum them</think>\n\n" + body + "\n").answer == body
    assert separate("<think>easy</think> #### 18 ").answer == "#### 18"
    assert separate(body).answer == body            # no trace: the text untouched
