"""#38: vLLM's CPU engine starts on a machine whose memory is partly held by other programs.

vLLM's CPU default reserves ``gpu_memory_utilization`` (0.9) of all RAM for the KV cache and refuses to
start when less than that is free. evalkit sizes the CPU KV cache from the run (the context length x a
few sequences, at most half of what is free): here a helper process holds enough memory that vLLM's
default would refuse, and the engine starts; an impossible setting is one line naming the fix."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evalkit.backends.vllm_engine import cpu_kv_cache_bytes, kv_cache_args, mem_available_bytes

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def total_bytes() -> int:
    with open("/proc/meminfo") as f:
        return int(next(x for x in f if x.startswith("MemTotal:")).split()[1]) * 1024


def test_the_kv_cache_setting_follows_the_user_then_the_run(tiny_model_dir, monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    cfg = json.load(open(f"{tiny_model_dir}/config.json"))
    per_token = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * (cfg["hidden_size"] // cfg["num_attention_heads"]) * 4
    size = cpu_kv_cache_bytes(tiny_model_dir, 1024, "float32")
    assert per_token * 1024 * 1.1 <= size <= max(per_token * 1024 * 4 + (1 << 20), per_token * 1024 * 1.1 + (1 << 20))
    assert kv_cache_args(True, tiny_model_dir, 1024, "float32", None, None) == {"kv_cache_memory_bytes": size}
    assert kv_cache_args(True, tiny_model_dir, 1024, "float32", 0.5, None) == {"gpu_memory_utilization": 0.5}
    assert kv_cache_args(True, tiny_model_dir, 1024, "float32", None, 123) == {"kv_cache_memory_bytes": 123}
    assert kv_cache_args(False, tiny_model_dir, 1024, "float32", None, None) == {"gpu_memory_utilization": 0.9}
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # vLLM's own setting wins
    assert kv_cache_args(True, tiny_model_dir, 1024, "float32", None, None) == {}


def test_the_engine_starts_while_memory_is_held_and_an_impossible_setting_is_one_line(
        tiny_model_dir, tmp_path, monkeypatch, capsys):
    pytest.importorskip("vllm")
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    from evalkit.cli import main
    data = tmp_path / "gsm"
    data.mkdir()
    (data / "test.jsonl").write_text(json.dumps({"question": "1+1?", "answer": "#### 2"}) + "\n")
    (data / "train.jsonl").write_text(json.dumps({"question": "2+2?", "answer": "#### 4"}) + "\n")
    common = ["--tasks", "gsm8k", "--data", f"gsm8k={data}", "--num-fewshot", "0", "--gen-kwargs", "max_tokens=4",
              "--cache-dir", str(tmp_path / "c"), "--no-output"]
    # held: what leaves less free than vLLM's default reserve (0.9 of all RAM) would need, and 512 MiB more
    hold = max(0, mem_available_bytes() - int(0.88 * total_bytes())) + (512 << 20)
    helper = subprocess.Popen([sys.executable, "-c", f"import sys,time; b = bytearray({hold}); b[::4096] = b'x' * len(b[::4096]); "
                               "print('held', flush=True); time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert helper.stdout.readline().strip() == "held"
        assert mem_available_bytes() < 0.9 * total_bytes()  # vLLM's own default would refuse to start here
        rc = main(["run", "--model", f"vllm:{tiny_model_dir}", "--model-args",
                   "max_model_len=1024,kv_cache_memory_bytes=100000000000000", *common])
        err = capsys.readouterr().err
        assert rc == 2 and "GiB of KV cache, but" in err and "kv_cache_memory_bytes=N" in err and "Traceback" not in err
        rc = main(["run", "--model", f"vllm:{tiny_model_dir}", "--model-args", "max_model_len=1024", *common])
        out, err = capsys.readouterr()
        assert rc == 0, err[-2000:]
    finally:
        helper.kill()
        helper.wait()


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
