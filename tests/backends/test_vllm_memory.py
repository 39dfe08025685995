"""#38: vLLM's CPU engine starts on a machine whose memory is partly held by other programs.

vLLM's CPU default reserves ``gpu_memory_utilization`` (0.9) of all RAM for the KV cache and refuses to
start when less than that is free. evalkit sizes the CPU KV cache from the run (the context length x a
few sequences, at most half of what is free): here a helper process holds enough memory that vLLM's
default would refuse, and the engines start; an impossible setting is one line naming the fix. The sizing
arithmetic itself is tested without an engine in test_vllm_memory_sizing.py."""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.backends.vllm_memory import mem_available_bytes

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def total_bytes() -> int:
    with open("/proc/meminfo") as f:
        return int(next(x for x in f if x.startswith("MemTotal:")).split()[1]) * 1024


@contextlib.contextmanager
def half_the_memory_held():
    """A helper process allocates and touches MemAvailable/2 (the machine is shared: held briefly)."""
    hold = mem_available_bytes() // 2
    code = (f"import time; b = bytearray({hold}); b[::4096] = b'x' * len(b[::4096]); print('held', flush=True); "
            "time.sleep(900)")
    helper = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert helper.stdout.readline().strip() == "held"
        yield hold
    finally:
        helper.kill()
        helper.wait()


def test_engines_start_while_half_the_memory_is_held_and_an_impossible_setting_is_one_line(
        tiny_model_dir, minilm, tmp_path, monkeypatch, capsys):
    """Generate (``evalkit run --model vllm:``) and pooling (the dense retriever's ``LLM(runner="pooling")``)
    engines start and answer while another process holds half the free memory, which vLLM's own CPU
    default (0.9 of all RAM) would refuse; ``gpu_memory_utilization=0.95`` there is one line, exit 2."""
    pytest.importorskip("vllm")
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    from evalkit.cli import main
    from evalkit.retrieval.dense import VLLMEmbedder
    data = tmp_path / "gsm"
    data.mkdir()
    (data / "test.jsonl").write_text(json.dumps({"question": "1+1?", "answer": "#### 2"}) + "\n")
    (data / "train.jsonl").write_text(json.dumps({"question": "2+2?", "answer": "#### 4"}) + "\n")
    common = ["--tasks", "gsm8k", "--data", f"gsm8k={data}", "--num-fewshot", "0", "--gen-kwargs", "max_tokens=4",
              "--cache-dir", str(tmp_path / "c")]
    with half_the_memory_held():
        assert mem_available_bytes() < 0.9 * total_bytes()  # vLLM's own default would refuse to start here
        for bad, words in (("gpu_memory_utilization=0.95", "on CPU vLLM reserves that share of all RAM"),
                           ("kv_cache_space=100000", "GiB of KV cache, but")):
            rc = main(["run", "--model", f"vllm:{tiny_model_dir}", "--model-args", f"max_model_len=1024,{bad}",
                       *common, "--no-output"])
            err = capsys.readouterr().err
            lines = [x for x in err.splitlines() if x.startswith("evalkit run: error:")]
            assert rc == 2 and len(lines) == 1 and words in lines[0] and "Traceback" not in err, err
        rc = main(["run", "--model", f"vllm:{tiny_model_dir}", "--model-args", "kv_cache_space=100000", *common,
                   "--no-output", "--verbose"])
        assert rc == 2 and "Traceback" in capsys.readouterr().err  # the traceback only with --verbose
        rc = main(["run", "--model", f"vllm:{tiny_model_dir}", "--model-args", "max_model_len=1024", *common,
                   "--output", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert rc == 0, err[-2000:]
        embedder = VLLMEmbedder(Path(minilm))
        try:
            vec = embedder(["a cat sat on the mat"])
        finally:
            embedder.close()
    record = json.loads(next((tmp_path / "out").rglob("run.json")).read_text())
    kv = record["backend_stats"]["kv_cache"]
    assert kv["set_by"].startswith("evalkit") and 0 < kv["bytes"] < mem_available_bytes()
    assert embedder.kv_cache["set_by"].startswith("evalkit") and vec.shape == (1, 384)
    assert abs(float((vec ** 2).sum()) - 1) < 1e-5


def test_cpu_engines_schedule_whole_prompts_unless_asked(tiny_model_dir, tmp_path):
    """vLLM's CPU worker dies on a seeded sampling request whose prompt is split across steps
    (tests/tasks/test_tau2_models.py samples agent trials with ~5k-token prompts on the session engine)."""
    from evalkit.backends.vllm_engine import CPU_WHOLE_PROMPT_MAX_LEN, cpu_scheduler_args
    ctx = json.load(open(f"{tiny_model_dir}/config.json"))["max_position_embeddings"]
    assert cpu_scheduler_args(tiny_model_dir, None, None) == {"enable_chunked_prefill": False,
                                                              "max_num_batched_tokens": ctx}
    assert cpu_scheduler_args(tiny_model_dir, 1024, None) == {"enable_chunked_prefill": False,
                                                              "max_num_batched_tokens": 2048}
    assert cpu_scheduler_args(tiny_model_dir, None, True) == {"enable_chunked_prefill": True}
    assert cpu_scheduler_args(tiny_model_dir, CPU_WHOLE_PROMPT_MAX_LEN * 2, None) == {}  # long contexts: vLLM's way
    assert cpu_scheduler_args(str(tmp_path), None, None) == {}                          # no config: vLLM decides
