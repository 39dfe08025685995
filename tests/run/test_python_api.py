"""`evalkit.evaluate`: a spec string, an in-memory transformers model (the same per-sample results as
`evalkit run` on the same weights; a second call from the cache; identity from the weights, not
id()), a vLLM `LLM`; and `import evalkit` stays light."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import evalkit
from evalkit.cli import main
from evalkit.records import Run, load_run

pytestmark = pytest.mark.slow
TASK = "mmlu_abstract_algebra"
N = 4


@pytest.fixture(scope="module")
def setting(shared_data):
    return dict(tasks=[TASK], limit=N, num_fewshot=0, data={TASK: str(shared_data / "mmlu")})


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory, tiny_model_dir, shared_data):
    work = tmp_path_factory.mktemp("api_cli")
    assert main(["run", "--model", f"hf:{tiny_model_dir}", "--model-args", "dtype=float32", "--tasks", TASK,
                 "--limit", str(N), "--num-fewshot", "0", "--data", f"{TASK}={shared_data / 'mmlu'}",
                 "--output", str(work / "results"), "--cache-dir", str(work / "cache")]) == 0
    return load_run(next((work / "results").iterdir())), work


@pytest.fixture(scope="module")
def loaded(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    return (AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32),
            AutoTokenizer.from_pretrained(tiny_model_dir))


def _rows(rows):
    return [(r["doc_id"], r["prompt_hash"], r["metrics"], [round(x[0], 5) for x in r["responses"]]) for r in rows]


def test_in_memory_model_matches_the_cli_and_caches(cli_run, loaded, setting, tmp_path):
    rec, _ = cli_run
    model, tok = loaded
    model.train()  # a training loop's model: evaluated without dropout, handed back in train mode
    run = evalkit.evaluate(model=model, tokenizer=tok, output=str(tmp_path / "res"), cache_dir=str(tmp_path / "c"),
                           **setting)
    assert model.training
    assert isinstance(run, Run) and run.kind == "evaluation" and run.path
    assert _rows(run.samples[TASK]) == _rows(rec.samples(TASK))
    assert run.tasks[TASK].metrics["acc"]["value"] == rec.metrics(TASK)["acc"]["value"]
    assert run.engine["computed"] == 4 * N
    assert load_run(run.path).run_id == run.run_id  # the record on disk is the one returned
    again = evalkit.evaluate(model=(model, tok), output=None, cache_dir=str(tmp_path / "c"), **setting)
    assert again.engine["cached"] == 4 * N and not again.engine.get("computed")
    assert again.model.identity_hash == run.model.identity_hash
    assert _rows(again.samples[TASK]) == _rows(run.samples[TASK])


def test_in_memory_identity_is_the_weights(loaded, tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    from evalkit.backends.in_memory import LoadedHFBackend
    model, tok = loaded
    first = LoadedHFBackend(model, tok).identity_hash()
    twin = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)  # another object, same weights
    assert LoadedHFBackend(twin, tok).identity_hash() == first
    with torch.no_grad():
        p = next(twin.parameters())
        p.view(-1)[0] += 1e-3  # one weight changed: another model
    assert LoadedHFBackend(twin, tok).identity_hash() != first
    assert LoadedHFBackend(twin.to(torch.bfloat16), tok).identity_hash() != first


def test_spec_string_shares_the_cli_cache(cli_run, setting):
    rec, work = cli_run
    run = evalkit.evaluate(model=f"hf:{rec.model['spec'].split(':', 1)[1]}", model_args={"dtype": "float32"},
                           output=None, cache_dir=str(work / "cache"), **setting)
    assert run.engine["cached"] == 4 * N and run.model.identity_hash == rec.model["identity_hash"]
    assert _rows(run.samples[TASK]) == _rows(rec.samples(TASK))


def test_bad_calls_say_what_is_wrong(loaded, setting):
    model, _ = loaded
    with pytest.raises(ValueError, match="needs its tokenizer"):
        evalkit.evaluate(model=model, output=None, cache=False, **setting)
    with pytest.raises(TypeError, match="unknown option"):
        evalkit.evaluate(model="hf:x", num_shots=3, **setting)
    with pytest.raises(TypeError, match="not a spec string"):
        evalkit.evaluate(model=3.5, output=None, cache=False, **setting)
    with pytest.raises(ValueError, match="PREFIX:MODEL"):
        evalkit.evaluate(model="smollm2-135m", output=None, cache=False, **setting)


def test_import_evalkit_stays_light():
    code = ("import sys, evalkit; heavy = [m for m in ('evalkit.api', 'evalkit.run.runner', 'torch', "
            "'transformers') if m in sys.modules]; print(json.dumps(heavy))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@pytest.fixture(scope="module")
def vllm_llm(vllm_backend):
    return vllm_backend.llm  # the session's float32 engine (conftest), never shut down by this module


@pytest.mark.vllm
def test_vllm_llm_object(vllm_llm, setting, cli_run, tmp_path):
    llm = vllm_llm
    run = evalkit.evaluate(model=llm, output=None, cache_dir=str(tmp_path / "c"), **setting)
    rec, _ = cli_run
    assert [r["doc_id"] for r in run.samples[TASK]] == [r["doc_id"] for r in rec.samples(TASK)]
    for a, b in zip(run.samples[TASK], rec.samples(TASK)):
        assert max(abs(x[0] - y[0]) for x, y in zip(a["responses"], b["responses"])) < 5e-3  # vllm vs hf
    assert run.model.identity["content"]["weights"]  # the weight files the engine loaded, hashed
    again = evalkit.evaluate(model=llm, output=None, cache_dir=str(tmp_path / "c"), **setting)
    assert again.engine["cached"] == 4 * N and again.model.identity_hash == run.model.identity_hash
