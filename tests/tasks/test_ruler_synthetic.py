"""RULER's variable tracking, common- and frequent-words extraction: evalkit's generators against
lm-eval's RULER port (its own ``vt_utils`` / ``cwe_utils`` / ``fwe_utils`` functions in the same run,
same seed, the bundled model's tokenizer), item seeding, and the tasks end to end with a scripted model."""
from __future__ import annotations

import random
import re

import numpy as np
import pytest
from evalkit.tasks.ruler import synthetic
from evalkit.tasks.ruler.synthetic import Draws

import evalkit
from _fakes import ScriptedBackend

pytest.importorskip("wonderwords")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _count(tokenizer):
    return lambda text: len(tokenizer(text).input_ids)


def _stream(seed: int, shuffle: random.Random) -> Draws:
    return Draws(random.Random(seed), np.random.RandomState(seed), shuffle)


def test_variable_tracking_equals_lm_evals(tokenizer):
    pytest.importorskip("lm_eval")
    from lm_eval.tasks.ruler import vt_utils
    assert vt_utils.TEMPLATE == synthetic.VT_TEMPLATE + synthetic.VT_PREFIX
    random.seed(11)
    np.random.seed(11)
    icl = vt_utils.sys_vartrack_w_noise_random(tokenizer=tokenizer, num_samples=1, max_seq_length=500, incremental=5)[0]
    want = vt_utils.sys_vartrack_w_noise_random(tokenizer=tokenizer, num_samples=3, max_seq_length=1024, icl_example=icl)
    d = _stream(11, random.Random(0))
    got = synthetic.vt_dataset(_count(tokenizer), max_seq_length=1024, num_samples=3, icl_draws=d, size_draws=d,
                               sample_draws=lambda i: d)
    assert len(got) == 3
    for g, w in zip(got, want):
        assert {k: g[k] for k in w} == w  # input, outputs, length, max_length, gen_prefix, index
        assert all(c in g["input"] for c in g["needles"]) and len(g["outputs"]) == 5


def test_common_words_equal_lm_evals(tokenizer, monkeypatch):
    pytest.importorskip("lm_eval")
    from lm_eval.tasks.ruler import cwe_utils
    assert cwe_utils.WORDS == synthetic.cwe_words()
    monkeypatch.setattr(cwe_utils, "RNG", random.Random(5))  # lm-eval's module-level shuffle stream
    random.seed(13)
    want = cwe_utils.sys_word_pair_random(num_samples=3, max_seq_length=1024, tokenizer=tokenizer)
    d = _stream(13, random.Random(5))
    got = synthetic.cwe_generate(_count(tokenizer), max_seq_length=1024, num_samples=3, size_draws=d,
                                 sample_draws=lambda i: d)
    for g, w in zip(got, want):
        assert {k: g[k] for k in w} == w
        assert len(g["outputs"]) == 10


def test_frequent_words_equal_lm_evals(tokenizer):
    pytest.importorskip("lm_eval")
    from lm_eval.tasks.ruler import fwe_utils
    from scipy.special import zeta
    assert synthetic._zeta(2.0) == zeta(2.0)
    random.seed(17)
    want = fwe_utils.sys_kwext(tokenizer=tokenizer, max_seq_length=1024, num_samples=3)
    d = _stream(17, random.Random(0))
    got = synthetic.fwe_generate(_count(tokenizer), max_seq_length=1024, num_samples=3, size_draws=d,
                                 sample_draws=lambda i: d)
    for g, w in zip(got, want):
        assert {k: g[k] for k in w} == w
        assert "..." not in g["outputs"] and len(g["outputs"]) == 3


def test_item_seeding_gives_a_sample_whatever_the_number_asked(tokenizer):
    count = _count(tokenizer)
    for gen in (synthetic.cwe_generate, synthetic.fwe_generate):
        def make(n, seed, gen=gen):
            return gen(count, max_seq_length=1024, num_samples=n, size_draws=Draws.seeded(seed),
                       sample_draws=lambda i: Draws.seeded(seed * 1000 + i))
        a, b = make(3, 1), make(1, 1)
        assert a[0] == b[0] and a[1]["input"] != a[0]["input"] and make(1, 2)[0]["input"] != a[0]["input"]
        assert all(s["length"] <= 1024 + 50 for s in a)


def test_the_tasks_score_a_scripted_model_per_length(tmp_path, tokenizer):
    """End to end without a model: a backend that answers with the first expected values it can read off
    the prompt (the chain's variables for vt) gets 1.0; one that answers nothing gets 0.0."""
    def chain(r) -> str:
        if "assgined the value" not in r.prompt:
            return ""
        value = r.prompt.rsplit("assgined the value ", 1)[1].split(",")[0]
        seen, names = {value}, []
        main = r.prompt[r.prompt.rfind("Memorize and track"):]
        for name, rhs in re.findall(r"VAR ([A-Z]+) = (?:VAR )?([A-Z]+|\d+)", main):
            if rhs in seen:
                seen.add(name)
                names.append(name)
        return " ".join(names)

    def chain_reader(right: bool) -> ScriptedBackend:
        return ScriptedBackend(chain if right else "", identity={"model": f"scripted-{right}"}, tokenizer=tokenizer)

    args = {"ruler_vt": {"lengths": "1024+2048", "samples": 2}}
    good = evalkit.evaluate(model=chain_reader(True), tasks=["ruler_vt"], output=None, cache=False, task_args=args)
    bad = evalkit.evaluate(model=chain_reader(False), tasks=["ruler_vt"], output=None, cache=False, task_args=args)
    entry = good.tasks["ruler_vt"]
    assert set(entry.breakdowns) == {"length:1024", "length:2048"}
    assert entry.metrics["score"].value == 1.0 and bad.tasks["ruler_vt"].metrics["score"].value == 0.0
    assert entry.extra["ruler"]["effective_length"] == 2048 and bad.tasks["ruler_vt"].extra["ruler"]["effective_length"] is None
    rows = good.samples["ruler_vt"]
    assert all(r["extra"]["prompt_tokens"] <= r["extra"]["length"] for r in rows)


@pytest.mark.slow
def test_the_bundled_model_on_vt_cwe_fwe_at_1k(hf_backend):
    """The three tasks through transformers at 1k, one sample each (short answers: CI time)."""
    tasks = ["ruler_vt", "ruler_cwe", "ruler_fwe"]
    args = {t: {"lengths": "1024", "samples": 1} for t in tasks}
    run = evalkit.evaluate(model=hf_backend, tasks=tasks, output=None, cache=False, task_args=args,
                           gen_kwargs={"max_tokens": 12})
    for t, n in zip(tasks, (5, 10, 3)):
        entry = run.tasks[t]
        assert set(entry.breakdowns) == {"length:1024"} and set(entry.extra["ruler"]["per_length"]) == {"1024"}
        row = run.samples[t][0]
        assert len(row["target"]) == n and 0.0 <= row["metrics"]["score"] <= 1.0
        assert 400 < row["extra"]["prompt_tokens"] <= 1024  # cwe: lm-eval sizes with its unshown example
