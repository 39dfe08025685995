"""``niah_grid``: needles where the record says (located in the tokenized prompt), byte-identical prompts
across runs and ``--limit``, the grid and curves in the record (a scripted model), and the bundled
model through transformers at 1k."""
from __future__ import annotations

import random

import pytest
from evalkit.tasks.ruler import grid

import evalkit
from _fakes import ScriptedBackend

pytest.importorskip("wonderwords")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _count(tokenizer):
    return lambda text: len(tokenizer(text, add_special_tokens=False).input_ids)


@pytest.mark.parametrize("depth", [0, 50, 100])
def test_the_needle_is_at_the_asked_depth_of_the_tokenized_prompt(tokenizer, depth):
    count = _count(tokenizer)
    units = [s.strip() + "." for s in grid.niah.REPEAT.split(".") if s.strip()]
    s = grid.build(count, lambda n: [units[i % len(units)] for i in range(n)], length=1024, depth=depth,
                   rng=random.Random(3))
    assert 1024 - 40 < s["length"] <= 1024 and count(s["input"]) + 128 == s["length"]
    assert s["input"][s["offset"]:].startswith(s["needle"]) and s["outputs"][0] in s["needle"]
    ids = tokenizer(s["input"], add_special_tokens=False, return_offsets_mapping=True)
    first = next(i for i, (a, b) in enumerate(ids.offset_mapping) if b > s["offset"])
    assert tokenizer.decode(ids.input_ids[first:first + 40]).strip().startswith("One of the special magic")
    context = (s["input"].index("afterwards.") + 12, s["input"].rindex("\nWhat is"))
    share = 100 * (s["offset"] - context[0]) / (context[1] - context[0])
    assert abs(share - depth) < 3  # within the haystack: the asked depth
    assert abs(s["token_depth"] - 100 * first / len(ids.input_ids)) < 1.5


def _backend(tokenizer, reach: int):
    """Reads the needle's value off the prompt when the needle sits within ``reach`` characters."""
    def read(r):
        at = r.prompt.find("special magic numbers for ")
        return r.prompt[at:].split("is: ", 1)[1][:7] if 0 < at < reach else "none"
    return ScriptedBackend(read, name="reader", identity={"model": f"reader-{reach}"}, tokenizer=tokenizer)


def test_grid_record_and_determinism(tokenizer, tmp_path):
    args = {"niah_grid": {"lengths": "512+1024", "depths": "0+50+100", "samples": 2}}
    a = _backend(tokenizer, 2500)
    run = evalkit.evaluate(model=a, tasks=["niah_grid"], output=None, cache=False, task_args=args)
    entry = run.tasks["niah_grid"]
    assert {"length:512", "length:1024", "depth:0", "depth:50", "depth:100", "cell:1024@50"} <= set(entry.breakdowns)
    g = entry.extra["ruler"]["grid"]
    assert list(g) == ["512", "1024"] and list(g["512"]) == ["0", "50", "100"]
    assert g["512"] == {"0": 1.0, "50": 1.0, "100": 1.0}  # all needles within reach at 512
    assert g["1024"]["0"] == 1.0 and g["1024"]["100"] == 0.0  # the deep ones at 1k are not
    assert entry.extra["ruler"]["effective_length"] == 512
    rows = run.samples["niah_grid"]
    assert len(rows) == 12 and all(len(r["extra"]["needles"]) == 1 for r in rows)
    b = _backend(tokenizer, 2500)
    evalkit.evaluate(model=b, tasks=["niah_grid"], output=None, cache=False, task_args=args, limit=1)
    assert len(b.prompts) == 6 and set(b.prompts) <= set(a.prompts)  # --limit: the same first samples, byte for byte
    other = _backend(tokenizer, 2500)
    evalkit.evaluate(model=other, tasks=["niah_grid"], output=None, cache=False, task_args=args, seed=1)
    assert not set(other.prompts) & set(a.prompts)  # another seed: other needles


@pytest.mark.slow
def test_the_bundled_model_on_the_grid_at_1k(hf_backend, tmp_path):
    args = {"niah_grid": {"lengths": "1024", "depths": "0+100", "samples": 1}}
    run = evalkit.evaluate(model=hf_backend, tasks=["niah_grid"], output=str(tmp_path), cache=False,
                           task_args=args, gen_kwargs={"max_tokens": 16})
    entry = run.tasks["niah_grid"]
    assert entry.metrics["score"].n == 2 and set(entry.extra["ruler"]["grid"]["1024"]) == {"0", "100"}
    assert all(1024 - 200 < r["extra"]["prompt_tokens"] <= 1024 - 128 for r in run.samples["niah_grid"])


def test_the_essay_haystack_reads_a_local_text(tokenizer, shared_data, tmp_path):
    essay = tmp_path / "essays.txt"  # a stand-in for Paul Graham's essays (not downloadable here)
    essay.write_text((shared_data / "wikitext" / "wikitext-2-raw" / "wiki.test.raw").read_text(encoding="utf-8")[:20_000])
    reader = _backend(tokenizer, 99_999)
    args = {"niah_grid": {"lengths": "512", "depths": "50", "samples": 1, "haystack": "essay"}}
    run = evalkit.evaluate(model=reader, tasks=["niah_grid"], output=None, cache=False, task_args=args,
                           data={"niah_grid": str(essay)})
    assert run.tasks["niah_grid"].metrics["score"].value == 1.0
    prompt = reader.prompts[0]
    assert "The grass is green" not in prompt and prompt.count("special magic numbers for") == 1


@pytest.mark.slow
def test_hf_and_vllm_get_the_same_grid_prompts(hf_backend, vllm_backend):
    """The same seed through both backends: the same needles at the same offsets and token depths, the
    same prompt sizes (the prompt is a function of these), and a grid with curves in both records."""
    args = {"niah_grid": {"lengths": "1024", "depths": "0+100", "samples": 1}}
    runs = [evalkit.evaluate(model=b, tasks=["niah_grid"], output=None, cache=False, task_args=args,
                             gen_kwargs={"max_tokens": 16}) for b in (hf_backend, vllm_backend)]
    rows = [[(r["doc_id"], r["target"], r["extra"]["needles"], r["extra"]["prompt_tokens"]) for r in run.samples["niah_grid"]]
            for run in runs]
    assert rows[0] == rows[1] and len(rows[0]) == 2
    for run in runs:
        assert set(run.tasks["niah_grid"].extra["ruler"]["grid"]["1024"]) == {"0", "100"}
