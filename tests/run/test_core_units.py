"""Unit tests of the core pieces that need no model: requests, data errors, stats, engine + cache."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evalkit.backends import make_backend, parse_model_args, split_spec
from evalkit.backends.hf import rolling_windows
from evalkit.backends.shared_prefix import shared_prefix_groups
from evalkit.run.cache import ResponseCache
from evalkit.taskapi.data import DataError, read_records
from evalkit.run.engine import Engine
from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest
from evalkit.scoring.stats import bootstrap_corpus, derive_seed, mean_metric
from _fakes import ScriptedBackend


def test_request_keys_are_content_based():
    a = LoglikelihoodRequest("ctx", " A")
    assert a.key() == LoglikelihoodRequest("ctx", " A").key()
    assert a.key() != LoglikelihoodRequest("ctx", " B").key()
    g1 = GenerateRequest(prompt="p", params=GenParams(max_tokens=5, seed=1))
    g2 = GenerateRequest(prompt="p", params=GenParams(max_tokens=5, seed=2))
    assert g1.key() == g2.key(), "greedy requests ignore the seed"
    s1 = GenerateRequest(prompt="p", params=GenParams(temperature=0.7, seed=1))
    s2 = GenerateRequest(prompt="p", params=GenParams(temperature=0.7, seed=2))
    assert s1.key() != s2.key(), "sampled requests are keyed by their seed"
    with pytest.raises(ValueError):
        GenerateRequest()


def test_model_spec_and_args_errors_name_the_flag():
    with pytest.raises(ValueError, match="allowed: hf, vllm, openai"):
        split_spec("foo:bar")
    with pytest.raises(ValueError, match="PREFIX:MODEL"):
        split_spec("smollm2")
    assert parse_model_args("dtype=float32,batch_size=8,trust_remote_code=true,max_length=none") == {
        "dtype": "float32", "batch_size": 8, "trust_remote_code": True, "max_length": None}
    with pytest.raises(ValueError, match="not key=value"):
        parse_model_args("dtype")
    with pytest.raises(ValueError, match="does not take bogus"):
        make_backend("hf:whatever", {"bogus": 1})


def test_bad_json_line_names_file_and_line(tmp_path):
    f = tmp_path / "data.jsonl"
    f.write_text('{"question": "a", "answer": "#### 1"}\n{"question": "b", "answer": \n')
    with pytest.raises(DataError, match=rf"{f}:2: invalid JSON"):
        list(read_records(f))


def test_missing_and_mistyped_fields_name_file_line_field(tmp_path):
    from evalkit.tasks.gsm8k import GSM8K
    d = tmp_path / "gsm"
    d.mkdir()
    (d / "test.jsonl").write_text('{"question": "q1", "answer": "#### 1"}\n\n{"question": "q2"}\n')
    (d / "train.jsonl").write_text('{"question": "q", "answer": 5}\n')
    with pytest.raises(DataError) as e:
        GSM8K(data_path=str(d)).eval_docs()
    assert f"{d / 'test.jsonl'}:3" in str(e.value) and "'answer'" in str(e.value) and "missing" in str(e.value)
    with pytest.raises(DataError) as e:
        GSM8K(data_path=str(d)).load_docs("train")
    assert f"{d / 'train.jsonl'}:1" in str(e.value) and "'answer'" in str(e.value) and "should be str" in str(e.value)


def test_mean_metric_binary_uses_wilson_and_analytic_stderr():
    m = mean_metric([1, 0, 1, 1, 0, 1, 1, 1])
    assert m.value == pytest.approx(0.75)
    assert m.stderr == pytest.approx(np.std([1, 0, 1, 1, 0, 1, 1, 1], ddof=1) / math.sqrt(8))
    assert 0 <= m.ci_low < 0.75 < m.ci_high <= 1
    z = mean_metric([0.0] * 10)
    assert z.ci_low == 0 and z.ci_high > 0, "Wilson interval is not degenerate at 0"
    for n in (3, 7, 1319):
        assert mean_metric([0.0] * n).ci_low == 0.0 and mean_metric([1.0] * n).ci_high == 1.0, "bounds exact at 0 and 1"


def test_bootstrap_stderr_is_std_of_replicates_and_seeded():
    rng = np.random.default_rng(0)
    items = list(rng.normal(size=200))
    a = bootstrap_corpus(items, lambda xs: float(np.mean(xs)), seed=7, replicates=2000)
    b = bootstrap_corpus(items, lambda xs: float(np.mean(xs)), seed=7, replicates=2000)
    assert a == b
    analytic = np.std(items, ddof=1) / math.sqrt(len(items))
    assert a.stderr == pytest.approx(analytic, rel=0.1), "not divided by sqrt(replicates)"
    assert a.ci_low < a.value < a.ci_high
    assert derive_seed(1, "t", "3") == derive_seed(1, "t", "3") != derive_seed(1, "t", "4")


def test_rolling_windows_cover_every_token_once():
    toks = list(range(100, 237))
    for max_len in (1, 7, 64, 137, 500):
        wins = list(rolling_windows(toks, prefix_token=0, max_len=max_len))
        assert [t for _, tgt in wins for t in tgt] == toks
        assert wins[0][0] == [0]
        pos = 0
        for ctx, tgt in wins:
            # the model input (ctx + tgt)[:-1] fits max_len; the context is what precedes the targets
            assert len(ctx) + len(tgt) - 1 <= max_len
            if pos:
                assert ctx == toks[pos - len(ctx): pos]
            pos += len(tgt)


def test_shared_prefix_groups_find_few_shot_blocks():
    shots_a, shots_b = list(range(1000, 1100)), list(range(2000, 2080))
    seqs = [shots_a + [1, 2, 3], [5, 6], shots_b + [7], shots_a + [4, 5], shots_b + [8, 9, 10],
            shots_a + [1, 2, 9], shots_a[:20] + [1]]
    limits = [len(s) - 1 for s in seqs]
    groups, rest = shared_prefix_groups(seqs, limits)
    assert sorted((p, sorted(m)) for p, m in groups) == [(80, [2, 4]), (100, [0, 3, 5])]
    assert sorted(rest) == [1, 6], "short shared prefixes and singletons run alone"
    # a prefix never reaches into the positions an item reads (its limit)
    limits[3] = 60
    groups, _ = shared_prefix_groups(seqs, limits)
    assert dict((tuple(sorted(m)), p) for p, m in groups)[(0, 3, 5)] == 60
    # an outlier that would halve the group's prefix starts a group of its own
    seqs2 = [shots_a + [1], shots_a + [2], shots_a[:40] + [3], shots_a + [4]]
    groups, rest = shared_prefix_groups(seqs2, [len(s) - 1 for s in seqs2])
    assert groups == [(100, [0, 1, 3])] and rest == [2]
    # two clusters that share a shorter prefix with each other are two groups
    seqs3 = [shots_a + [1], shots_a + [2], shots_a[:40] + shots_b + [3], shots_a[:40] + shots_b + [4]]
    groups, rest = shared_prefix_groups(seqs3, [len(s) - 1 for s in seqs3])
    assert sorted((p, sorted(m)) for p, m in groups) == [(100, [0, 1]), (120, [2, 3])] and rest == []
    strings = ["x" * 300 + "a", "x" * 300 + "b", "y"]
    assert shared_prefix_groups(strings, [400] * 3, min_prefix=128) == ([(300, [0, 1])], [2])


def test_engine_keeps_requests_with_a_shared_few_shot_prefix_together():
    from evalkit.run.engine import order_requests
    shots = {s: f"About {s}.\n\n" + "".join(f"Example {s} {i}: a worked example.\n" for i in range(8)) for s in "xy"}
    reqs = [LoglikelihoodRequest(shots[s] + "Q" * n + "\nAnswer:", f" {c}")
            for n in range(1, 7) for s in "xy" for c in "AB"]
    reqs += [LoglikelihoodRequest("short " * n, " z") for n in (1, 40)]
    order = order_requests(reqs)
    subjects = [r.context[6] if r.context.startswith("About") else "-" for r in order]
    runs = [k for i, k in enumerate(subjects) if i == 0 or k != subjects[i - 1]]
    assert sorted(runs) == ["-", "x", "y"]
    assert sorted(r.key() for r in order) == sorted(r.key() for r in reqs)
    for s in "xy":  # longest first inside each group
        lengths = [len(r.context) for r in order if r.context.startswith(f"About {s}")]
        assert lengths == sorted(lengths, reverse=True)
    gen = [GenerateRequest(prompt="p" * n) for n in (3, 9, 5)]
    assert [len(r.prompt) for r in order_requests(gen)] == [9, 5, 3], "other kinds: longest first"


def counting() -> ScriptedBackend:
    """Chunks of 3; loglikelihoods minus the continuation's length, generations the prompt in capitals."""
    return ScriptedBackend(lambda r: r.prompt.upper(), lambda r: (-float(len(r.continuation)), True), name="counting",
                           identity={"backend": "counting"}, chunk_size=3)


def test_engine_dedupes_caches_and_resumes(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    reqs = [LoglikelihoodRequest("q", c) for c in (" A", " BB", " A", " CCC", " DDDD")]
    reqs += [GenerateRequest(prompt="hi"), GenerateRequest(prompt="hi")]
    be = counting()
    answers = Engine(be, cache, progress=False).run(reqs)
    assert len(be.requests) == 5, "duplicates are sent once"
    assert answers[reqs[3].key()].logprob == -4.0
    assert answers[reqs[5].key()][0].text == "HI"
    be2 = counting()
    eng2 = Engine(be2, ResponseCache(tmp_path / "c.sqlite"), progress=False)
    answers2 = eng2.run(reqs + [LoglikelihoodRequest("q", " new")])
    assert [r.continuation for r in be2.requests] == [" new"], "only the new request is computed"
    assert eng2.stats["cached"] == 5 and eng2.stats["computed"] == 1
    assert answers2[reqs[3].key()].logprob == -4.0


def test_run_record_is_written_atomically_and_scrubbed(tmp_path):
    from evalkit.records import load_run, write_run
    run = {"run_id": "r1", "schema_version": 1,
           "model": {"args": {"api_key": "sk-secret", "dtype": "x", "base": "sk-abcdefghijklmnopqrstu"},
                     "identity": {"files": {"tokenizer.json": "3f2a"}}, "gen": {"max_tokens": 7}},
           "tasks": {"t": {"metrics": {}, "samples_file": "samples_t.jsonl"}}}
    path = write_run(tmp_path, run, {"t": [{"doc_id": "0"}]})
    text = (path / "run.json").read_text()
    assert "sk-secret" not in text and "sk-abcdefghij" not in text and "<redacted>" in text
    saved = json.loads(text)["model"]
    assert saved["identity"]["files"]["tokenizer.json"] == "3f2a" and saved["gen"]["max_tokens"] == 7
    rec = load_run(path)
    assert list(rec.samples("t")) == [{"doc_id": "0"}]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temp folders left"


def test_suffix_batches_cover_every_suffix_once_and_avoid_padding():
    from evalkit.backends.suffix_batches import suffix_batches
    widths = [700, 650, 400, 300, 290, 280, 250, 120, 110, 100, 90, 80, 70, 60]
    batches = suffix_batches(widths, prefix_len=1000, budget=16384)
    assert [i for b in batches for i in b] == list(range(len(widths))), "in order, each once"
    for b in batches:  # the memory caps hold: tokens, and attention over the prefix
        assert len(b) * widths[b[0]] <= 16384 and len(b) <= max(1, 2 * 16384 // (1000 + widths[b[0]]))
    padded = sum(len(b) * widths[b[0]] for b in batches)
    assert padded <= 1.15 * sum(widths), "padded to each batch's longest, not to the longest of all"
    assert len(batches) < len(widths), "similar widths share a forward"
    assert suffix_batches([100] * 20, 600, 16384) == [list(range(20))]
    assert suffix_batches([4000] * 3, 30000, 16384) == [[0], [1], [2]], "a batch that does not fit is split"
    assert suffix_batches([], 10, 100) == []


def test_repeated_cache_shares_the_prefix_and_never_writes_into_it(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    from evalkit.backends.suffix_batches import repeated_cache
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    with torch.inference_mode():
        cache = model(input_ids=torch.tensor([[5, 6, 7, 8, 9, 10]]), use_cache=True).past_key_values
        before = [layer.keys.clone() for layer in cache.layers]
        suffix = torch.tensor([[11, 12], [13, 14], [15, 16]])
        got = model(input_ids=suffix, past_key_values=repeated_cache(cache, 3), use_cache=True).logits
        ref = __import__("copy").deepcopy(cache)
        ref.batch_repeat_interleave(3)
        want = model(input_ids=suffix, past_key_values=ref, use_cache=True).logits
    assert torch.equal(got, want)
    assert all(torch.equal(a, layer.keys) and layer.keys.shape[0] == 1 for a, layer in zip(before, cache.layers))
