"""What RULER's samples record of their generated prompts (``tasks/ruler/task.py``, ``prompt_record``):
the sha256 of the exact text the backend got, its size, head and tail, and needle offsets into it;
``prompt_hash`` covers the generated text, and the same seed gives the same hash across runs,
``--limit``, batch sizes and backends."""
from __future__ import annotations

import hashlib

import pytest

import evalkit
from evalkit.taskapi.items import content_hash
from _fakes import ScriptedBackend

pytest.importorskip("wonderwords")

TASKS = ["niah_single_1", "niah_multikey_2", "niah_multikey_3", "ruler_vt", "ruler_cwe", "ruler_fwe", "niah_grid"]
ARGS = {**{t: {"lengths": "1024+2048", "samples": 2} for t in TASKS},
        "niah_grid": {"lengths": "512", "depths": "0+50+100", "samples": 1}}


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _recorder(tokenizer, name="recorder"):
    """Answers nothing; keeps every prompt it was given."""
    def template(messages):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return ScriptedBackend("", name=name, tokenizer=tokenizer, chat_template=template)


def _hashes(run) -> dict:
    return {(t, r["doc_id"]): r["prompt_hash"] for t, rows in run.samples.items() for r in rows}


def test_each_sample_records_the_prompt_the_backend_got(tokenizer):
    b = _recorder(tokenizer)
    run = evalkit.evaluate(model=b, tasks=TASKS, output=None, cache=False, task_args=ARGS)
    given = {hashlib.sha256(p.encode("utf-8")).hexdigest(): p for p in b.prompts}
    rows = [r for t in TASKS for r in run.samples[t]]
    assert len(rows) == len(given) == 6 * 4 + 3  # one prompt per sample, all different
    for r in rows:
        rec = r["prompt"]
        prompt = given[rec["sha256"]]  # the exact text the backend was given
        assert rec["chars"] == len(prompt) and prompt.startswith(rec["head"]) and prompt.endswith(rec["tail"])
        assert r["prompt_hash"] == content_hash(rec)  # the row's hash, as for every task, covers the text
        assert len(prompt) > 900 and len(rec["head"]) == len(rec["tail"]) == 240  # uuids: ~1.5 characters a token
        assert len(rec["needle_offsets"]) == len(r["extra"]["needles"])
        for at, needle in zip(rec["needle_offsets"], r["extra"]["needles"]):
            assert at == needle["offset"]  # no chat template: the prompt starts with the input
            if r["doc_id"].startswith(("niah", "512/")):
                assert prompt[at:].startswith("One of the special magic")
            else:  # ruler_vt: the chain's statements
                assert prompt[at:].startswith("VAR ")
        if r["doc_id"].startswith("niah"):
            assert rec["tail"].endswith("mentioned in the provided text is") and r["target"][0] in prompt


def test_same_seed_same_hashes_across_runs_and_limits_another_seed_other_hashes(tokenizer):
    tasks = ["niah_single_1", "ruler_cwe", "niah_grid"]
    a = _hashes(evalkit.evaluate(model=_recorder(tokenizer), tasks=tasks, output=None, cache=False, task_args=ARGS))
    b = _hashes(evalkit.evaluate(model=_recorder(tokenizer, "other"), tasks=tasks, output=None, cache=False,
                                 task_args=ARGS))
    assert a == b and len(set(a.values())) == len(a) == 2 * 4 + 3
    limited = _hashes(evalkit.evaluate(model=_recorder(tokenizer), tasks=tasks, output=None, cache=False,
                                       task_args=ARGS, limit=1))
    assert len(limited) == 2 + 2 + 3 and all(a[k] == v for k, v in limited.items())
    seeded = _hashes(evalkit.evaluate(model=_recorder(tokenizer), tasks=tasks, output=None, cache=False,
                                      task_args=ARGS, seed=5))
    assert seeded.keys() == a.keys() and not set(seeded.values()) & set(a.values())


def test_the_chat_rendered_prompt_is_recorded_with_its_needle_offsets(tokenizer):
    b = _recorder(tokenizer)
    args = {"niah_single_1": {"lengths": "512", "samples": 1}}
    run = evalkit.evaluate(model=b, tasks=["niah_single_1"], output=None, cache=False, task_args=args,
                           apply_chat_template=True)
    (prompt,), (row,) = b.prompts, run.samples["niah_single_1"]
    rec = row["prompt"]
    assert rec["sha256"] == hashlib.sha256(prompt.encode("utf-8")).hexdigest() and rec["head"] == prompt[:240]
    assert rec["head"].startswith("<|im_start|>")  # the template's text is part of what is hashed
    (at,), (needle,) = rec["needle_offsets"], row["extra"]["needles"]
    assert at > needle["offset"] and prompt[at:].startswith("One of the special magic")


@pytest.mark.slow
def test_hf_batch_sizes_and_vllm_record_the_same_prompt_hashes(tiny_model_dir, hf_backend, vllm_backend):
    """The bundled model: HF one row at a time, HF batched and vLLM give the same hashes, sample for sample."""
    from evalkit.backends.hf import HFBackend
    tasks = ["niah_single_1", "ruler_fwe"]
    args = {t: {"lengths": "1024", "samples": 2} for t in tasks}
    one_row = HFBackend(tiny_model_dir, batch_size=1, threads=1)
    runs = [evalkit.evaluate(model=b, tasks=tasks, output=None, cache=False, task_args=args,
                             gen_kwargs={"max_tokens": 2}) for b in (one_row, hf_backend, vllm_backend)]
    hashes = [_hashes(r) for r in runs]
    assert hashes[0] == hashes[1] == hashes[2] and len(hashes[0]) == 4
