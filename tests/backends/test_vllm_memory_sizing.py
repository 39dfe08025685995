"""#38: the CPU KV cache arithmetic and who decides its size (no engine, no vLLM import).

vLLM's CPU default reserves ``gpu_memory_utilization`` (0.9) of all RAM and refuses to start when less is
free; evalkit passes ``kv_cache_memory_bytes`` sized from the run and the free memory instead, and lets
the user's setting win (``evalkit.backends.vllm_memory``)."""
from __future__ import annotations

import json

import pytest

from evalkit.backends import vllm_memory as vm

LLAMA = {"num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_size": 576,
         "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}  # SmolLM2-135M's shape
GIB, MIB = 1 << 30, 1 << 20


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    return str(tmp_path)


@pytest.fixture
def memory(monkeypatch):
    """Pretend the machine has ``total`` bytes, ``free`` of them available (no cgroup limit)."""
    state = {"total": 24 * GIB, "free": 10 * GIB}
    monkeypatch.setattr(vm, "mem_total_bytes", lambda: state["total"])
    monkeypatch.setattr(vm, "mem_available_bytes", lambda: state["free"])
    monkeypatch.setattr(vm, "cgroup_free_bytes", lambda: None)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    return state


def test_bytes_per_token_come_from_layers_kv_heads_head_dim_and_dtype():
    assert vm.kv_bytes_per_token(LLAMA, "float32") == 2 * 30 * 3 * 64 * 4          # 46,080: K and V, GQA heads
    assert vm.kv_bytes_per_token(LLAMA, "auto") == 2 * 30 * 3 * 64 * 2             # auto: the config's bfloat16
    assert vm.kv_bytes_per_token({**LLAMA, "head_dim": 128}, "float16") == 2 * 30 * 3 * 128 * 2
    no_gqa = {k: v for k, v in LLAMA.items() if k != "num_key_value_heads"}
    assert vm.kv_bytes_per_token(no_gqa, "float32") == 2 * 30 * 9 * 64 * 4         # MHA: kv heads = heads
    assert vm.kv_bytes_per_token({"hidden_size": 8}, "float32") is None             # cannot tell: vLLM decides


def test_the_size_is_the_run_with_headroom_capped_by_free_memory_never_below_one_sequence():
    per_token, tokens = 46080, 2048
    run = per_token * tokens * 4 * 1.1
    assert vm.kv_cache_size(per_token, tokens, 4, None) == -(-int(run) // MIB) * MIB  # no meminfo: what the run needs
    assert vm.kv_cache_size(per_token, tokens, 4, 10 * GIB) == -(-int(run) // MIB) * MIB  # fits in half the free
    assert vm.kv_cache_size(per_token, tokens, 256, 4 * GIB) == 2 * GIB               # capped: half of what is free
    one = -(-int(per_token * tokens * 1.1) // MIB) * MIB
    assert vm.kv_cache_size(per_token, tokens, 4, 64 * MIB) == one                     # but one sequence always
    assert vm.kv_cache_size(per_token, tokens, 4, None) % MIB == 0


def test_free_memory_is_meminfo_and_the_cgroup_room(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683792 kB\nMemFree: 1 kB\nMemAvailable:   12000000 kB\n")
    assert vm.mem_available_bytes(str(meminfo)) == 12000000 * 1024
    assert vm.mem_total_bytes(str(meminfo)) == 24683792 * 1024
    assert vm.mem_available_bytes(str(tmp_path / "none")) is None
    lim, use = tmp_path / "memory.max", tmp_path / "memory.current"
    files = ((str(lim), str(use)),)
    lim.write_text("max\n"), use.write_text("123\n")
    assert vm.cgroup_free_bytes(files) is None                                        # v2 without a limit
    lim.write_text(f"{8 * GIB}\n"), use.write_text(f"{3 * GIB}\n")
    assert vm.cgroup_free_bytes(files) == 5 * GIB
    lim.write_text("9223372036854771712\n")                                           # v1's "no limit"
    assert vm.cgroup_free_bytes(files) is None
    assert vm.cgroup_free_bytes(((str(tmp_path / "x"), str(tmp_path / "y")),)) is None


def test_the_user_setting_wins_then_vllms_env_then_the_run(model_dir, memory, monkeypatch):
    plan = vm.kv_cache_plan(True, model_dir, 2048, "float32", max_num_seqs=2)
    size = vm.kv_cache_size(46080, 2048, 2, 10 * GIB)
    assert plan == {"args": {"kv_cache_memory_bytes": size}, "set_by": "evalkit (run and free memory)", "bytes": size}
    ctx = vm.kv_cache_plan(True, model_dir, None, "float32")["bytes"]                  # the model's own context, 4 seqs
    assert ctx == vm.kv_cache_size(46080, 8192, vm.DEFAULT_SEQUENCES, 10 * GIB)
    assert vm.kv_cache_args(True, model_dir, 2048, "float32", None, None, kv_cache_space=1.5) == \
        {"kv_cache_memory_bytes": int(1.5 * GIB)}
    assert vm.kv_cache_args(True, model_dir, 2048, "float32", None, 123 * MIB) == {"kv_cache_memory_bytes": 123 * MIB}
    assert vm.kv_cache_args(True, model_dir, 2048, "float32", 0.3, None) == {"gpu_memory_utilization": 0.3}
    assert vm.kv_cache_args(False, model_dir, 2048, "float32", None, None) == {"gpu_memory_utilization": 0.9}
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "2")                                 # vLLM's own setting
    assert vm.kv_cache_plan(True, model_dir, 2048, "float32") == {"args": {}, "set_by": "VLLM_CPU_KVCACHE_SPACE",
                                                                  "bytes": 2 * GIB}
    assert vm.kv_cache_args(True, model_dir, 2048, "float32", None, None, kv_cache_space=1) == \
        {"kv_cache_memory_bytes": GIB}                                                # the model arg still wins


@pytest.mark.parametrize("kw, words", [
    ({"kv_cache_space": 64}, ["kv_cache_space=64: 64.0 GiB of KV cache, but 10.0 GiB", "kv_cache_space=GiB"]),
    ({"kv_cache_memory_bytes": 1 << 40}, ["kv_cache_memory_bytes=1099511627776: 1024.0 GiB of KV cache, but"]),
    ({"kv_cache_space": 0.01}, ["less than one sequence of max_model_len=2048", "max_model_len=N"]),
    ({"kv_cache_space": 0}, ["kv_cache_space=0: expected a size in GiB > 0"]),
    ({"gpu_memory_utilization": 0.9}, ["reserves that share of all RAM (21.6 GiB), but 10.0 GiB",
                                       "gpu_memory_utilization=F below 0.42"]),
])
def test_an_impossible_setting_is_one_line_naming_the_fix(model_dir, memory, kw, words):
    with pytest.raises(ValueError) as e:
        vm.kv_cache_plan(True, model_dir, 2048, "float32", **kw)
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_a_possible_gpu_memory_utilization_on_cpu_is_passed_through(model_dir, memory):
    assert vm.kv_cache_args(True, model_dir, 2048, "float32", 0.4, None) == {"gpu_memory_utilization": 0.4}


def test_an_engine_that_cannot_start_is_one_line_with_the_cause_and_the_options(memory):
    inner = ValueError("To serve at least one request with max_model_len (8192), 0.35 GiB KV cache is needed\nmore")
    try:
        raise RuntimeError("") from inner
    except RuntimeError as e:
        msg = str(vm.engine_start_error(e, {"model": "/m", "kv_cache_memory_bytes": GIB}))
    assert "\n" not in msg and "ValueError: To serve at least one request" in msg and "KV cache 1.00 GiB" in msg
    assert all(x in msg for x in ("max_model_len=N", "kv_cache_space=GiB", "gpu_memory_utilization=F", "--verbose"))
    opaque = str(vm.engine_start_error(RuntimeError("Engine core initialization failed. See root cause above."), {}))
    assert "vLLM's log above names the cause" in opaque


def test_kv_cache_space_is_checked_with_the_other_model_args():
    from evalkit.run.validation import check_model_args
    from evalkit.util.errors import ConfigError
    with pytest.raises(ConfigError, match="kv_cache_space='big'"):
        check_model_args("vllm", {"kv_cache_space": "big"})
    check_model_args("vllm", {"kv_cache_space": 1.5})
