"""Memory-bounded log-probabilities and out-of-memory back-off in the HF backend.

Chunked reading must give the numbers a full log-softmax gives (random logits, and the real model
against its own full logits), and ``batch_size=auto`` must survive a forward that runs out of memory
by halving the batch, with the same results."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from evalkit.backends.logprobs import full_token_logprobs, is_out_of_memory, token_logprobs  # noqa: E402
from evalkit.taskapi.requests import LoglikelihoodRequest, RollingRequest  # noqa: E402


def _pairs(n_rows, vocab, gen):
    """Non-decreasing rows with repeats (several tokens read at one position) and gaps."""
    rows, toks = [], []
    for r in range(n_rows):
        for _ in range(int(torch.randint(0, 3, (1,), generator=gen))):
            rows.append(r)
            toks.append(int(torch.randint(0, vocab, (1,), generator=gen)))
    return rows, toks


@pytest.mark.parametrize("chunk_elems", [1, 500, 3 * 1000, 10 ** 9])
def test_chunked_equals_full_log_softmax_on_random_logits(chunk_elems):
    gen = torch.Generator().manual_seed(7)
    logits = torch.randn(37, 1000, generator=gen) * 4 + torch.randn(37, 1, generator=gen) * 10
    rows, toks = _pairs(37, 1000, gen)
    toks[0] = int(logits[rows[0]].argmax())  # at least one argmax
    want_lp, want_top = full_token_logprobs(logits, rows, toks)
    got_lp, got_top = token_logprobs(logits, rows, toks, chunk_elems=chunk_elems)
    assert torch.equal(got_lp, want_lp), "per-position log-softmax: the very same numbers"
    assert torch.equal(got_top, want_top) and bool(got_top[0])


def test_chunked_projection_from_hidden_states_equals_full_logits():
    gen = torch.Generator().manual_seed(3)
    head = torch.nn.Linear(16, 500, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.randn(500, 16, generator=gen))
    hidden = torch.randn(50, 16, generator=gen)
    rows, toks = _pairs(50, 500, gen)
    with torch.inference_mode():
        want_lp, want_top = full_token_logprobs(head(hidden), rows, toks)
    got_lp, got_top = token_logprobs(hidden, rows, toks, head=head, vocab=500, chunk_elems=7 * 500)
    assert torch.allclose(got_lp, want_lp, atol=1e-5, rtol=0) and torch.equal(got_top, want_top)
    # without the vocabulary size the first chunk (one row) tells it
    assert torch.allclose(token_logprobs(hidden, rows, toks, head=head, chunk_elems=7 * 500)[0], want_lp, atol=1e-5)
    assert token_logprobs(hidden, [], [], head=head)[0].numel() == 0


def test_out_of_memory_errors_are_recognised():
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate "
                                         "memory: you tried to allocate 3221225472 bytes. Error code 12"))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("shape mismatch")) and not is_out_of_memory(ValueError("out of memory"))


def _direct(model, ctx_ids, cont_ids):
    """Log-likelihood and greedy flag from the model's full logits and a full log-softmax."""
    ids = torch.tensor([ctx_ids + cont_ids])
    with torch.inference_mode():
        lp = torch.log_softmax(model(input_ids=ids).logits[0].float(), -1)
    n = len(ctx_ids)
    rows = lp[n - 1: n - 1 + len(cont_ids)]
    return float(rows[torch.arange(len(cont_ids)), torch.tensor(cont_ids)].sum()), \
        bool((rows.argmax(-1) == torch.tensor(cont_ids)).all())


def _fresh(hf_backend, tiny_model_dir, **kw):
    from evalkit.backends.hf import HFBackend
    b = HFBackend(tiny_model_dir, threads=hf_backend.torch.get_num_threads(), **kw)
    b._model = hf_backend.model  # same weights, no second load
    return b


@pytest.mark.slow
def test_real_model_chunked_scores_equal_full_logits(hf_backend, tiny_model_dir):
    b = _fresh(hf_backend, tiny_model_dir)
    b.chunk_elems = 3 * 49152  # three positions a chunk: many chunks per sequence
    assert b.split_head.ok, "the bundled llama splits into decoder + output projection"
    ctx = "The capital of France is"
    ctx_ids = b.encode(ctx)
    greedy = [int(t) for t in hf_backend.model.generate(torch.tensor([ctx_ids]), max_new_tokens=6,
                                                        do_sample=False)[0, len(ctx_ids):]]
    reqs = [LoglikelihoodRequest(ctx, " Paris"), LoglikelihoodRequest(ctx, " Berlin"),
            LoglikelihoodRequest(ctx, b.tokenizer.decode(greedy)),
            LoglikelihoodRequest(ctx, " a city on the Seine, famous for its museums and cafes")]
    for r, got in zip(reqs, b.loglikelihood(reqs)):
        cont = b.encode(ctx + r.continuation)[len(ctx_ids):]
        want_lp, want_greedy = _direct(hf_backend.model, ctx_ids, cont)
        assert got.logprob == pytest.approx(want_lp, abs=2e-4) and got.is_greedy == want_greedy
    assert b.loglikelihood(reqs)[2].is_greedy, "the model's own greedy continuation is greedy"
    text = "Perplexity is a measurement of how well a probability model predicts a sample. " * 3
    ids = b.encode(text)
    want = _direct(hf_backend.model, [b.prefix_token_id], ids)[0]
    assert b.loglikelihood_rolling([RollingRequest(text)])[0] == pytest.approx(want, abs=1e-3)


@pytest.mark.slow
def test_models_whose_projection_does_not_reproduce_their_logits_read_full_logits(hf_backend, tiny_model_dir):
    real = hf_backend.model

    class Scaled:  # post-processes logits after the projection in a way SplitHead does not know
        base_model, config, device = real.base_model, real.config, real.device

        def get_output_embeddings(self):
            return real.get_output_embeddings()

        def __call__(self, **kw):
            out = real(**kw)
            out.logits = out.logits * 2
            return out

    b = _fresh(hf_backend, tiny_model_dir)
    b._model = Scaled()
    assert not b.split_head.ok
    ctx_ids, cont = b.encode("The sky is"), b.encode("The sky is blue today")[len(b.encode("The sky is")):]
    ids = torch.tensor([ctx_ids + cont])
    with torch.inference_mode():
        lp = torch.log_softmax(2 * real(input_ids=ids).logits[0], -1)
    want = sum(float(lp[len(ctx_ids) - 1 + i, t]) for i, t in enumerate(cont))
    got = b.loglikelihood([LoglikelihoodRequest("The sky is", " blue today")])[0]
    assert got.logprob == pytest.approx(want, abs=2e-4)


def _raise_once_over(limit, error, calls):
    state = {"raised": False}

    def check(rows):
        calls.append(rows)
        if rows > limit and not state["raised"]:
            state["raised"] = True
            raise error
    return check


@pytest.mark.slow
@pytest.mark.parametrize("error", [RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                                                "3221225472 bytes. Error code 12 (Cannot allocate memory)"),
                                   torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")])
def test_auto_batch_size_backs_off_on_out_of_memory_and_finishes(hf_backend, tiny_model_dir, monkeypatch, error):
    reqs = [LoglikelihoodRequest(f"Item {n}: " + "word " * n, " end of the line") for n in range(1, 9)]
    want = _fresh(hf_backend, tiny_model_dir, share_prefix=False).loglikelihood(reqs)
    b = _fresh(hf_backend, tiny_model_dir, share_prefix=False, token_budget=4096)
    calls = []
    check = _raise_once_over(2, error, calls)
    real = b._forward_logits
    monkeypatch.setattr(b, "_forward_logits", lambda seqs: check(len(seqs)) or real(seqs))
    got = b.loglikelihood(reqs)
    assert calls[0] == 8 and calls[1:3] == [4, 4], "8 rows failed once, then halves"
    assert b._oom_budget is not None and b._oom_budget < b.token_budget, "the lower budget is kept"
    for g, w in zip(got, want):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-5) and g.is_greedy == w.is_greedy
    calls.clear()
    b.loglikelihood(reqs)
    assert max(calls) <= 4, "later calls start from the budget that fitted"


@pytest.mark.slow
def test_shared_prefix_batches_back_off_too_and_fixed_batch_size_fails(hf_backend, tiny_model_dir, monkeypatch):
    shots = "".join(f"Question: what is {i} plus {i}?\nAnswer: {2 * i}\n\n" for i in range(6))
    reqs = [LoglikelihoodRequest(shots + f"Question: what is {q} times {q}?\nAnswer:", f" {q * q}") for q in range(6)]
    want = _fresh(hf_backend, tiny_model_dir).loglikelihood(reqs)
    b = _fresh(hf_backend, tiny_model_dir)
    split = b.split_head
    calls = []
    check = _raise_once_over(1, MemoryError(), calls)
    real_hidden = split.hidden
    monkeypatch.setattr(split, "hidden", lambda **kw: check(kw["input_ids"].shape[0]) or real_hidden(**kw))
    got = b.loglikelihood(reqs)
    assert calls[0] == 6 and calls[1] == 3
    for g, w in zip(got, want):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-4) and g.is_greedy == w.is_greedy
    fixed = _fresh(hf_backend, tiny_model_dir, batch_size=8, share_prefix=False)
    monkeypatch.setattr(fixed, "_forward_logits", lambda seqs: (_ for _ in ()).throw(MemoryError()))
    with pytest.raises(MemoryError):
        fixed.loglikelihood(reqs)  # a batch size the user fixed is not changed behind their back


@pytest.mark.slow
def test_a_shared_prefix_is_kept_across_calls(hf_backend, tiny_model_dir):
    """The engine sends a subject's questions in several calls: the second call continues the
    first call's prefix cache (cropped or extended to its own shared prefix), with the same scores."""
    shots = "".join(f"Question: what is {i} plus {i}?\nAnswer: {2 * i}\n\n" for i in range(8))
    calls = [[LoglikelihoodRequest(shots + f"Question: what is {q} times {q}?\nAnswer:", c) for c in (" A", " B")]
             for q in range(3)] + [[LoglikelihoodRequest(shots + f"Q{q}: and {q} minus one?\nAnswer:", " yes")]
                                   for q in range(3)]
    first = [r for reqs in calls[:3] for r in reqs]
    second = [r for reqs in calls[3:] for r in reqs]
    plain = _fresh(hf_backend, tiny_model_dir, share_prefix=False)
    want = plain.loglikelihood(first) + plain.loglikelihood(second)
    b = _fresh(hf_backend, tiny_model_dir)
    split = b.split_head
    seen = []
    real = split.decoder
    split.decoder = lambda **kw: seen.append(kw["input_ids"].shape[1]) or real(**kw)
    got = b.loglikelihood(first)
    prefix_tokens = seen[0]
    assert prefix_tokens >= len(b.encode(shots)) - 2, "the first call runs the whole prefix"
    seen.clear()
    got += b.loglikelihood(second)
    assert seen and sum(seen) < prefix_tokens // 2, "the second call runs its suffixes and at most what its " \
        "prefix adds to the kept one, never the whole prefix again"
    for g, w in zip(got, want):
        assert g.logprob == pytest.approx(w.logprob, abs=1e-4) and g.is_greedy == w.is_greedy


def test_scoring_streams_batch_by_batch(hf_backend, tiny_model_dir):
    """The engine commits what ``stream`` yields: loglikelihood and rolling requests come back about
    a batch at a time (a question's choices together), with the scores of one whole call."""
    reqs = [LoglikelihoodRequest(f"Question {q}: pick one.\nAnswer:", c) for q in range(5) for c in (" A", " B", " C")]
    b = _fresh(hf_backend, tiny_model_dir, batch_size=2)
    groups = list(b.stream("loglikelihood", reqs))
    assert len(groups) >= 4 and sorted(i for g in groups for i, _ in g) == list(range(len(reqs)))
    for g in groups:
        assert len({reqs[i].context for i, _ in g}) * 3 == len(g)          # whole questions only
    want = hf_backend.loglikelihood(reqs)
    for g in groups:
        for i, res in g:
            assert res.logprob == pytest.approx(want[i].logprob, abs=1e-4) and res.is_greedy == want[i].is_greedy
    texts = [RollingRequest(f"Some text number {i} to score.") for i in range(5)]
    rolled = list(b.stream("loglikelihood_rolling", texts))
    assert len(rolled) == 3 and [i for g in rolled for i, _ in g] == list(range(5))


def test_batched_pair_encoding_equals_one_pair_at_a_time(hf_backend):
    """``encode_pairs`` (every distinct string once, one batch call) gives exactly ``encode_pair``'s
    tokens: shared contexts, trailing whitespace moved into the continuation, an empty context."""
    ctx = "The following are multiple choice questions (with answers).\n\nWhat is 2+2?\nA. 3\nB. 4\nAnswer:"
    pairs = [(ctx, f" {c}") for c in "ABCD"] + [(ctx + " ", "B"), ("", "hello world"), ("Paris is in", " France."),
                                                 ("naïve café ", "crème brûlée"), (ctx, " A")]
    assert hf_backend.encode_pairs(pairs) == [hf_backend.encode_pair(c, x) for c, x in pairs]
    assert hf_backend.encode_pairs([]) == []


def test_allocator_setting_is_applied_once_and_can_be_turned_off(tmp_path):
    """On glibc the HF backend keeps large buffers in the heap (``cpu_malloc``); EVALKIT_MALLOC_TUNING=0
    leaves the allocator alone. Run in subprocesses: the setting is per process."""
    import os
    import platform
    import subprocess
    import sys
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    code = ("from evalkit.backends.cpu_malloc import keep_buffers_in_heap as k; "
            "print(k(), k())")
    for value, want in (("1", "True True"), ("0", "False False")):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "EVALKIT_MALLOC_TUNING": value},
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == want, (value, out)
