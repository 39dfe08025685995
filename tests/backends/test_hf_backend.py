"""The transformers backend on the real tiny model: numerics checked against direct model calls."""
from __future__ import annotations

import pytest

from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest

pytestmark = pytest.mark.slow


def _direct_logprob(backend, ctx_ids, cont_ids):
    torch = backend.torch
    ids = torch.tensor([ctx_ids + cont_ids])
    with torch.inference_mode():
        lp = torch.log_softmax(backend.model(input_ids=ids).logits[0].float(), -1)
    n = len(ctx_ids)
    return sum(float(lp[n - 1 + i, t]) for i, t in enumerate(cont_ids))


def test_loglikelihood_matches_direct_forward(hf_backend):
    ctx = "The capital of France is"
    reqs = [LoglikelihoodRequest(ctx, " Paris"), LoglikelihoodRequest(ctx, " Berlin"),
            LoglikelihoodRequest(ctx, " the city of lights"), LoglikelihoodRequest(ctx + " ", "Paris")]
    res = hf_backend.loglikelihood(reqs)
    ctx_ids = hf_backend.encode(ctx)
    for r, out in zip(reqs[:3], res):
        whole = hf_backend.encode(ctx + r.continuation)
        assert out.logprob == pytest.approx(_direct_logprob(hf_backend, ctx_ids, whole[len(ctx_ids):]), abs=2e-4)
    assert res[0].logprob > res[1].logprob
    # trailing context whitespace moves into the continuation (lm-eval's rule)
    assert res[3].logprob == pytest.approx(res[0].logprob, abs=1e-5)


def test_single_token_choices_share_one_forward_pass(hf_backend, monkeypatch):
    ctx = "Question: 2+2=?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:"
    reqs = [LoglikelihoodRequest(ctx, f" {c}") for c in "ABCD"]
    calls = []
    real = hf_backend._forward_logits
    monkeypatch.setattr(hf_backend, "_forward_logits", lambda seqs: calls.append(len(seqs)) or real(seqs))
    grouped = hf_backend.loglikelihood(reqs)
    assert calls == [1], "four single-token choices, one sequence forwarded"
    ctx_ids = hf_backend.encode(ctx)
    for r, g in zip(reqs, grouped):
        cont = hf_backend.encode(ctx + r.continuation)[len(ctx_ids):]
        assert len(cont) == 1
        assert g.logprob == pytest.approx(_direct_logprob(hf_backend, ctx_ids, cont), abs=2e-4)


def test_batching_does_not_change_scores(hf_backend):
    reqs = [LoglikelihoodRequest("word " * n, " end") for n in range(1, 12)]
    batched = hf_backend.loglikelihood(reqs)
    single = [hf_backend.loglikelihood([r])[0] for r in reqs[::5]]
    for a, b in zip(batched[::5], single):
        assert a.logprob == pytest.approx(b.logprob, abs=2e-4)


def test_rolling_equals_full_text_loglikelihood_and_windows_add_up(hf_backend, tiny_model_dir):
    from evalkit.backends.hf import HFBackend
    text = "Perplexity is a measurement of how well a probability model predicts a sample. " * 4
    full = hf_backend.loglikelihood_rolling([RollingRequest(text)])[0]
    assert full == pytest.approx(hf_backend.loglikelihood([LoglikelihoodRequest("", text)])[0].logprob, abs=1e-3)
    small = HFBackend(tiny_model_dir, max_length=16, threads=1)
    windowed = small.loglikelihood_rolling([RollingRequest(text)])[0]
    assert windowed < full, "less context per token gives a lower likelihood"
    assert small.identity_hash() != hf_backend.identity_hash(), "max_length is part of the model identity"


def test_greedy_generation_with_stop_and_chat_template(hf_backend):
    msgs = (("user", "What is 2+3?"),)
    [[c]] = hf_backend.generate([GenerateRequest(messages=msgs, params=GenParams(max_tokens=16))])
    assert "5" in c.text and c.finish_reason == "stop"
    prompt = "Count: 1, 2, 3, 4,"
    [[a], [b]] = hf_backend.generate([GenerateRequest(prompt=prompt, params=GenParams(max_tokens=12, stop=(" 7",))),
                                      GenerateRequest(prompt=prompt, params=GenParams(max_tokens=3))])
    assert " 7" not in a.text and a.text.startswith(" 5") and a.finish_reason == "stop"
    assert b.finish_reason == "length"


def test_seeded_sampling_is_reproducible(hf_backend):
    p = GenParams(max_tokens=8, temperature=1.0, seed=11, n=2)
    r1 = hf_backend.generate([GenerateRequest(prompt="Once upon a time", params=p)])[0]
    r2 = hf_backend.generate([GenerateRequest(prompt="Once upon a time", params=p),
                              GenerateRequest(prompt="Another prompt", params=p)])[0]
    assert [c.text for c in r1] == [c.text for c in r2]
    assert len(r1) == 2


def test_shared_few_shot_prefix_runs_once_and_scores_the_same(hf_backend, tiny_model_dir, monkeypatch):
    from evalkit.backends.hf import HFBackend
    shots = "".join(f"Question: what is {i} plus {i}?\nA. {i}\nB. {2 * i}\nAnswer: B\n\n" for i in range(8))
    reqs = []
    for q in range(6):
        ctx = shots + f"Question: what is {7 * q} times 3?{' Think.' * q}\nA. {21 * q}\nB. {q}\nAnswer:"
        reqs += [LoglikelihoodRequest(ctx, " A"), LoglikelihoodRequest(ctx, " B"),
                 LoglikelihoodRequest(ctx, f" {21 * q}, because seven times three is twenty-one")]
    reqs.append(LoglikelihoodRequest("Unrelated short context", " here"))
    prefix_runs = []
    real = hf_backend._forward_shared_prefix
    monkeypatch.setattr(hf_backend, "_forward_shared_prefix",
                        lambda inputs, conts, p, members, read: prefix_runs.append((p, len(members)))
                        or real(inputs, conts, p, members, read))
    shared = hf_backend.loglikelihood(reqs)
    assert len(prefix_runs) == 1 and prefix_runs[0][1] == 12, "6 questions x (1 single-token group + 1 long answer)"
    assert prefix_runs[0][0] >= len(hf_backend.encode(shots)) - 2
    plain = HFBackend(tiny_model_dir, threads=hf_backend.torch.get_num_threads(), share_prefix=False)
    plain._model = hf_backend.model  # same weights, no second load
    alone = plain.loglikelihood(reqs)
    for a, b in zip(shared, alone):
        assert a.logprob == pytest.approx(b.logprob, abs=2e-4) and a.is_greedy == b.is_greedy


def test_cached_rerun_loads_neither_tokenizer_nor_weights(tiny_model_dir, tmp_path):
    from evalkit.backends.hf import HFBackend
    from evalkit.run.cache import ResponseCache
    from evalkit.run.engine import Engine
    cache = ResponseCache(tmp_path / "c.sqlite")
    reqs = [LoglikelihoodRequest("The sky is", " blue"), RollingRequest("Short text to score.")]
    first = Engine(HFBackend(tiny_model_dir, threads=1), cache).run(reqs)
    backend = HFBackend(tiny_model_dir, threads=1)
    assert backend.max_length == 8192, "context window read from config.json"
    again = Engine(backend, cache).run(reqs)
    assert again == first
    assert backend._tokenizer is None and backend._model is None and backend._config is None


def test_prefix_sharing_falls_back_for_models_without_the_cache_api(hf_backend, tiny_model_dir):
    from evalkit.backends.hf import HFBackend
    real = hf_backend.model

    class OldForward:  # a model whose forward takes no logits_to_keep (remote code, old transformers)
        def __call__(self, input_ids, attention_mask=None, **kw):
            if "logits_to_keep" in kw:
                raise TypeError("forward() got an unexpected keyword argument 'logits_to_keep'")
            return real(input_ids=input_ids, attention_mask=attention_mask, **kw)

    old = HFBackend(tiny_model_dir, threads=hf_backend.torch.get_num_threads())
    old._model = OldForward()
    shots = "".join(f"Example {i}: the sum of {i} and {i} is {2 * i}.\n" for i in range(10))
    reqs = [LoglikelihoodRequest(shots + f"Question {q}: is it true?\nAnswer:", c)
            for q in range(3) for c in (" yes", " no")]
    got = old.loglikelihood(reqs)
    assert old.share_prefix is False, "switched off after the first failure"
    for a, b in zip(got, hf_backend.loglikelihood(reqs)):
        assert a.logprob == pytest.approx(b.logprob, abs=2e-4)


def test_a_long_prompt_read_in_chunks_gives_the_same_answer(hf_backend, tiny_model_dir, monkeypatch):
    """``prefill_chunk=N``: a prompt over N tokens is read N at a time into the KV cache (transformers'
    ``prefill_chunk_size``, asked for exactly then) and greedy decoding answers as one pass does;
    ``auto`` reads the bundled model (a 1,536-wide MLP) in one pass; a bad value is one line."""
    from evalkit.backends.hf import HFBackend
    text = " ".join(f"Item {i} is {i * 7 % 11}." for i in range(60)) + " What is item 13? Item 13 is"
    req = GenerateRequest(prompt=text, params=GenParams(max_tokens=6, temperature=0.0))
    assert len(hf_backend.encode(text)) > 300 and hf_backend.prefill_chunk == 0
    chunked = HFBackend(tiny_model_dir, threads=1, prefill_chunk=128)
    asked = []
    real = type(chunked.model).generate

    def spy(self, *a, **kw):
        asked.append(kw.get("prefill_chunk_size"))
        return real(self, *a, **kw)
    monkeypatch.setattr(type(chunked.model), "generate", spy)
    assert chunked.generate([req])[0][0].text == hf_backend.generate([req])[0][0].text
    short = GenerateRequest(prompt="Hello there", params=GenParams(max_tokens=2, temperature=0.0))
    chunked.generate([short])
    assert asked == [128, None, None]  # chunked, the one-pass backend (spied too: same class), a short prompt
    for bad in ("-1", "lots"):
        with pytest.raises(ValueError, match=f"--model-args prefill_chunk={bad}: expected auto or a token count"):
            HFBackend(tiny_model_dir, prefill_chunk=bad)
