"""gpt-oss harmony on the offline backends, with a gpt-oss-format tokenizer fixture
(tests/_harmony_fixture.py: harmony's special tokens and gpt-oss's own chat template).

* Prompts: the hf and vllm backends render the harmony prompt as the model's template does, with
  ``reasoning_effort`` in the system message; checked against ``openai_harmony``'s renderer.
* ``reasoning_effort`` also on a transformers model and tokenizer passed in memory
  (``evalkit.evaluate(model=..., tokenizer=..., model_args={"reasoning_effort": "low"})``).
* Decoding and scoring: GSM8K through the hf backend's generation and decode code (an in-memory
  model that emits given token ids) and through the vllm backend's request path (an ``LLM`` stand-in
  that detokenizes as vLLM does, following the SamplingParams the backend sends): only the ``final``
  channel is scored, a transcript without one counts as unfinished.
"""
from __future__ import annotations

import datetime
import json
from types import SimpleNamespace

import pytest
from _harmony_fixture import build_tokenizer, harmony_tokenizer_dir

pytest.importorskip("transformers")

QUESTIONS = {  # question -> (harmony completion, gold); the traces say wrong "#### N" first
    "Janet has 16 eggs, eats 3 and bakes 4. How many are left?":
        (("<|channel|>analysis<|message|>16 - 3 = 13, so #### 13? No, minus 4 more: 9.<|end|>"
         "<|start|>assistant<|channel|>final<|message|>She has 9 left. #### 9<|return|>"), 9),
    "What is 6 * 7?":
        (("<|channel|>analysis<|message|>6 * 7 is #### 36? no, 42.<|end|><|start|>assistant<|channel|>commentary"
         "<|message|>Computing.<|end|><|start|>assistant<|channel|>final<|message|>#### 42<|return|>"), 42),
    "What is 100 / 4?":  # never reaches its final channel within max_tokens
        ("<|channel|>analysis<|message|>100 / 4: maybe #### 25 " + "let me check again " * 60 +
         "<|end|><|start|>assistant<|channel|>final<|message|>#### 25<|return|>", 25),
}
MAX_TOKENS = 200


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    return harmony_tokenizer_dir(tmp_path_factory.mktemp("gpt_oss_tok"))


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.fixture
def gsm(tmp_path):
    d = tmp_path / "gsm"
    d.mkdir()
    (d / "train.jsonl").write_text(json.dumps({"question": "Train?", "answer": "#### 1"}) + "\n")
    (d / "test.jsonl").write_text("".join(json.dumps({"question": q, "answer": f"... #### {g}"}) + "\n"
                                          for q, (_, g) in QUESTIONS.items()))
    return d


def _scripted_ids(tokenizer, prompt_ids):
    prompt = tokenizer.decode(prompt_ids, skip_special_tokens=False)
    text = next(t for q, (t, _) in QUESTIONS.items() if q in prompt)
    return tokenizer.encode(text)


def test_prompts_rendered_as_the_gpt_oss_template_and_openai_harmony_do(tok_dir, tokenizer):
    oh = pytest.importorskip("openai_harmony")
    from evalkit.backends.hf import HFBackend
    from evalkit.backends.in_memory import vllm_backend_from_llm
    from evalkit.backends.tokenization import chat_template_options
    enc = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    msgs = [{"role": "system", "content": "Answer with #### N."}, {"role": "user", "content": "What is 6 * 7?"}]
    hf = HFBackend(tok_dir, reasoning_effort="low")
    vl = vllm_backend_from_llm(FakeLLM(tok_dir, tokenizer))
    vl.chat_template, vl.chat_template_kwargs, _ = chat_template_options(None, None, "high")
    for backend, effort in ((hf, oh.ReasoningEffort.LOW), (vl, oh.ReasoningEffort.HIGH)):
        text = backend.apply_chat_template(msgs)
        day = datetime.date.today().isoformat()  # the template writes today's date, as the real one does
        system = oh.SystemContent.new().with_reasoning_effort(effort).with_conversation_start_date(day)
        convo = oh.Conversation.from_messages([
            oh.Message.from_role_and_content(oh.Role.SYSTEM, system),
            oh.Message.from_role_and_content(oh.Role.DEVELOPER, oh.DeveloperContent.new().with_instructions(
                "Answer with #### N.")),
            oh.Message.from_role_and_content(oh.Role.USER, "What is 6 * 7?")])
        ref = enc.decode(enc.render_conversation_for_completion(convo, oh.Role.ASSISTANT))
        # the one difference: gpt-oss's HF template ends the developer instructions with a blank line
        assert text == ref.replace("Answer with #### N.<|end|>", "Answer with #### N.\n\n<|end|>")
        assert f"Reasoning: {effort.value.lower()}" in text and backend.harmony
    assert hf.identity()["chat_template_kwargs"] == {"reasoning_effort": "low"}
    with pytest.raises(ValueError, match="reasoning_effort"):
        HFBackend(tok_dir, reasoning_effort="huge")


class ScriptedModel:
    """A transformers-like model that 'generates' the scripted harmony ids for each prompt."""

    def __init__(self, tokenizer):
        import torch
        from transformers import PretrainedConfig
        self.torch, self.tok = torch, tokenizer
        self.config = PretrainedConfig(max_position_embeddings=4096)
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.training = False

    def parameters(self):
        return iter([self.weight])

    def state_dict(self):
        return {"weight": self.weight}

    def eval(self):
        return self

    def generate(self, input_ids, attention_mask, max_new_tokens, pad_token_id, **kw):
        rows = []
        for row, mask in zip(input_ids.tolist(), attention_mask.tolist()):
            new = _scripted_ids(self.tok, [i for i, m in zip(row, mask) if m])[:max_new_tokens]
            rows.append(row + new)
        width = max(len(r) for r in rows)
        return self.torch.tensor([r + [pad_token_id] * (width - len(r)) for r in rows])


class FakeLLM:
    """An ``LLM`` stand-in: answers the scripted ids and detokenizes them as vLLM does with the
    SamplingParams it is given (special tokens skipped unless ``skip_special_tokens=False``; the
    eos token that ended a request is not in the text)."""

    def __init__(self, folder, tokenizer):
        self.tok, self.params = tokenizer, []
        cfg = SimpleNamespace(model=folder, max_model_len=4096, dtype="float32", revision=None, quantization=None)
        self.llm_engine = SimpleNamespace(vllm_config=SimpleNamespace(model_config=cfg))

    def get_tokenizer(self):
        return self.tok

    def generate(self, prompts, params, use_tqdm=False, lora_request=None):
        outs = []
        for p, sp in zip(prompts, params):
            self.params.append(sp)
            ids = _scripted_ids(self.tok, p["prompt_token_ids"])
            cut = ids[:sp.max_tokens]
            finish = "length" if len(ids) > sp.max_tokens else "stop"
            if cut and cut[-1] == self.tok.eos_token_id:
                cut = cut[:-1]
            text = self.tok.decode(cut, skip_special_tokens=sp.skip_special_tokens)
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(text=text, finish_reason=finish, token_ids=cut)],
                                        num_cached_tokens=0))
        return outs


def _check_gsm8k(run):
    rows = {r["prompt"][-1]["content"].split("Question: ")[-1].split("\n")[0]: r for r in run.samples["gsm8k"]}
    assert len(rows) == 3
    got = {q: (r["extra"]["thinking"]["status"], r["metrics"]["exact_match_flexible"]) for q, r in rows.items()}
    assert got == {"Janet has 16 eggs, eats 3 and bakes 4. How many are left?": ("closed", 1.0),
                   "What is 6 * 7?": ("closed", 1.0), "What is 100 / 4?": ("unclosed", 0.0)}
    cut = rows["What is 100 / 4?"]["extra"]["thinking"]
    assert cut["source"] == "harmony" and "no final channel" in cut["notes"]
    assert rows["What is 6 * 7?"]["responses"] == ["#### 42"] and rows["What is 100 / 4?"]["responses"] == [""]
    assert cut["raw"].startswith("<|channel|>analysis<|message|>")  # decoded with its special tokens
    assert "#### 36" in rows["What is 6 * 7?"]["extra"]["thinking"]["trace"]
    assert "Computing." in rows["What is 6 * 7?"]["extra"]["thinking"]["trace"]  # commentary kept as trace


def _evaluate(backend, gsm):
    import evalkit
    return evalkit.evaluate(backend, "gsm8k", data={"gsm8k": str(gsm)}, num_fewshot=0, apply_chat_template=True,
                            gen_kwargs={"max_tokens": MAX_TOKENS}, output=None, cache=False)


def test_gsm8k_through_the_hf_backend_scores_only_the_final_channel(tokenizer, gsm):
    from evalkit.scoring.harmony import decode_completion
    from evalkit.backends.in_memory import LoadedHFBackend
    backend = LoadedHFBackend(ScriptedModel(tokenizer), tokenizer, threads=1)
    assert backend.harmony
    _check_gsm8k(_evaluate(backend, gsm))
    ids = tokenizer.encode(QUESTIONS["What is 6 * 7?"][0]) + [tokenizer.pad_token_id] * 3
    assert decode_completion(tokenizer, ids, True) == QUESTIONS["What is 6 * 7?"][0]  # padding dropped
    assert "<|channel|>" not in decode_completion(tokenizer, ids, False)  # other models: as before


class PromptRecorder(ScriptedModel):
    """The scripted model, keeping each prompt it was given as text (special tokens included)."""

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        self.prompts = []

    def generate(self, input_ids, attention_mask, max_new_tokens, pad_token_id, **kw):
        for row, mask in zip(input_ids.tolist(), attention_mask.tolist()):
            self.prompts.append(self.tok.decode([i for i, m in zip(row, mask) if m], skip_special_tokens=False))
        return super().generate(input_ids, attention_mask, max_new_tokens, pad_token_id, **kw)


def test_reasoning_effort_on_a_model_held_in_memory(tokenizer, gsm):
    import evalkit
    from evalkit.backends.in_memory import LoadedHFBackend
    model = PromptRecorder(tokenizer)
    run = evalkit.evaluate(model=model, tokenizer=tokenizer, tasks="gsm8k", data={"gsm8k": str(gsm)}, num_fewshot=0,
                           apply_chat_template=True, model_args={"reasoning_effort": "low", "threads": 1},
                           gen_kwargs={"max_tokens": MAX_TOKENS}, output=None, cache=False)
    _check_gsm8k(run)
    assert len(model.prompts) == 3 and all("Reasoning: low" in p and "Reasoning: medium" not in p
                                           for p in model.prompts)
    low = LoadedHFBackend(model, tokenizer, threads=1, reasoning_effort="low")
    plain = LoadedHFBackend(model, tokenizer, threads=1)
    assert low.identity()["chat_template_kwargs"] == {"reasoning_effort": "low"}
    assert "chat_template_kwargs" not in plain.identity()                    # older cache keys hold
    msgs = [{"role": "user", "content": "What is 6 * 7?"}]
    assert "Reasoning: medium" in plain.apply_chat_template(msgs)            # the template's default
    with pytest.raises(ValueError, match="reasoning_effort"):
        LoadedHFBackend(model, tokenizer, reasoning_effort="huge")


def test_gsm8k_through_the_vllm_backend_scores_only_the_final_channel(tok_dir, tokenizer, gsm):
    pytest.importorskip("vllm")
    from evalkit.backends.in_memory import vllm_backend_from_llm
    llm = FakeLLM(tok_dir, tokenizer)
    backend = vllm_backend_from_llm(llm)
    _check_gsm8k(_evaluate(backend, gsm))
    assert llm.params and all(not p.skip_special_tokens and not p.spaces_between_special_tokens for p in llm.params)
