"""Parity of the hf and vllm backends on the tiny model (both float32), and the `evalkit parity` command.

Criteria from the issue: greedy multiple-choice predictions agree on >= 99% of MMLU-style items and
GSM8K strict match is the same within 1 point; the report shows how they differ where they do.
"""
from __future__ import annotations

import json

import pytest

pytest.importorskip("vllm")

from evalkit.taskapi import registry  # noqa: E402
from evalkit.run.workflows.parity import check, collect, compare, format_report  # noqa: E402
from evalkit.run.runner import RunConfig  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

GSM8K_ITEMS = 8


@pytest.fixture(scope="module")
def parity_cache(tmp_path_factory):
    from evalkit.run.cache import ResponseCache
    cache = ResponseCache(tmp_path_factory.mktemp("parity") / "responses.sqlite")
    yield cache
    cache.close()


def _mmlu_config(shared_data):
    if "mmlu" not in registry.all_tasks():
        pytest.fail("the built-in mmlu task is not registered")
    # zero-shot keeps the hf side fast; ~100 items spread over all subjects: one shard of 14,042 in 140
    return RunConfig(tasks=["mmlu"], num_fewshot=0, data_paths={"mmlu": str(shared_data / "mmlu")}, shard=(0, 140))


def _gsm8k_config(shared_data, limit=GSM8K_ITEMS):
    return RunConfig(tasks=["gsm8k"], limit=limit, data_paths={"gsm8k": str(shared_data / "gsm8k")},
                     gen_overrides={"max_tokens": 64})


def test_mmlu_predictions_agree(vllm_backend, hf_backend, shared_data, parity_cache):
    config = _mmlu_config(shared_data)
    a, b = collect(hf_backend, config, parity_cache), collect(vllm_backend, config, parity_cache)
    n = len(a.tasks["mmlu"]["rows"])
    assert n == 110  # one shard in 140 of the 14,042 test questions, 46 subjects
    report = compare(a, b)
    r = report["tasks"]["mmlu"]
    print(format_report(report))
    assert r["prediction_agreement"] >= 0.99
    assert r["loglikelihood"]["max_abs_diff"] < 5e-3 and r["loglikelihood"]["is_greedy_agreement"] >= 0.99
    assert abs(r["metrics"]["acc"]["diff_points"]) <= 1.0
    assert check(report, 0.99, 1.0) == []
    # where predictions differ the report names the item and shows both margins (a near tie)
    for e in r["prediction_disagreements"]:
        assert e["margin_a"] is not None and e["margin_b"] is not None


def test_gsm8k_strict_match_agrees(vllm_backend, hf_backend, shared_data, parity_cache):
    config = _gsm8k_config(shared_data)
    report = compare(collect(hf_backend, config, parity_cache), collect(vllm_backend, config, parity_cache))
    r = report["tasks"]["gsm8k"]
    print(format_report(report))
    assert abs(r["metrics"]["exact_match_strict"]["diff_points"]) <= 1.0
    assert r["greedy_generation"]["n"] == GSM8K_ITEMS
    assert r["greedy_generation"]["identical"] >= 0.75  # fp32 both sides; divergences are listed
    assert len(r["greedy_generation"]["differences"]) == round(GSM8K_ITEMS * (1 - r["greedy_generation"]["identical"]))


def test_compare_reports_real_differences(vllm_backend, shared_data, parity_cache):
    """The comparison is not vacuous: a LoRA adapter view differs from its base and it shows."""
    if not vllm_backend.adapters:
        pytest.skip("peft is not installed: no test adapters")
    config = _mmlu_config(shared_data)
    config.shard = (0, 1400)  # ~10 items
    report = compare(collect(vllm_backend, config, parity_cache),
                     collect(vllm_backend.for_adapter("a"), config, parity_cache))
    ll = report["tasks"]["mmlu"]["loglikelihood"]
    assert ll["max_abs_diff"] > 1e-2 and report["identity_a"] != report["identity_b"]
    assert "|A-B| max" in format_report(report)


def test_parity_command(vllm_backend, hf_backend, shared_data, parity_cache, monkeypatch, tmp_path, capsys):
    """`evalkit parity` end to end (backends injected: the engine is the session's; answers come from
    the cache the tests above filled)."""
    import evalkit.cli.parity as cli_parity
    from evalkit.cli import main

    class Borrowed:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, k):
            return getattr(self.inner, k)

        def close(self):  # the session owns these
            pass

    made = []

    def fake_make(spec, model_args=None):
        made.append((spec, model_args))
        return Borrowed(hf_backend if spec.startswith("hf:") else vllm_backend)

    monkeypatch.setattr(cli_parity, "make_backend", fake_make)
    monkeypatch.setattr("evalkit.cli.run.ResponseCache", lambda *a, **k: parity_cache)
    monkeypatch.setattr(parity_cache, "close", lambda: None)
    out = tmp_path / "parity.json"
    argv = ["parity", "--model-a", "hf:tiny", "--model-b", "vllm:tiny", "--model-args-b", "dtype=float32",
            "--tasks", "gsm8k", "--limit", str(GSM8K_ITEMS), "--gen-kwargs", "max_tokens=64",
            "--data", f"gsm8k={shared_data / 'gsm8k'}", "--output", str(out)]
    assert main(argv) == 0
    assert made == [("hf:tiny", {}), ("vllm:tiny", {"dtype": "float32"})]
    report = json.loads(out.read_text())
    assert report["tasks"]["gsm8k"]["greedy_generation"]["n"] == GSM8K_ITEMS and report["failures"] == []
    assert "parity holds" in capsys.readouterr().out
    assert main(argv + ["--min-agreement", "1.01"]) == 1  # an unmet criterion fails the command
