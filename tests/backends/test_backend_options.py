"""Each backend's options are one typed declaration (evalkit/backends/options.py): parsed and checked
once, taken by the constructor as one object, and documented from the same declaration."""
from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from evalkit.backends import make_backend
from evalkit.backends.options import OPTIONS, HFOptions, OpenAIOptions, VLLMOptions, markdown_table
from evalkit.cli import main
from evalkit.util.errors import ConfigError

SOURCES = {"hf": ["hf.py", "in_memory.py"], "vllm": ["vllm.py"], "openai": ["openai.py"]}


@pytest.mark.parametrize("prefix", sorted(OPTIONS))
def test_every_declared_option_is_read_by_its_backend(prefix):
    """No option is declared and then ignored: the backend's constructor reads each one."""
    text = "".join((Path(__file__).parents[2] / "evalkit" / "backends" / f).read_text() for f in SOURCES[prefix])
    unread = [f.name for f in dataclasses.fields(OPTIONS[prefix]) if not re.search(rf"\bo\.{f.name}\b", text)]
    assert unread == []


@pytest.mark.parametrize("prefix", sorted(OPTIONS))
def test_the_constructor_takes_the_options_object(prefix):
    from evalkit.backends.catalog import backend_class
    params = list(inspect.signature(backend_class(prefix).__init__).parameters)
    assert params == ["self", "model", "options", "kwargs"]


@pytest.mark.parametrize("args, flag, message", [
    ({"dtyp": "float32"}, "--model-args", "--model-args: hf backend does not take dtyp; allowed: revision, dtype,"),
    ({"batch_size": "lots"}, "--judge-args", "--judge-args: batch_size='lots': expected 'auto' or an integer >= 1"),
    ({"max_length": 0}, "--model-args", "--model-args: max_length=0: expected an integer >= 1"),
    ({"dtype": "fp8"}, "--model-args", "--model-args: dtype='fp8': allowed auto, float32, float16, bfloat16"),
    ({"share_prefix": "maybe"}, "--model-args", "--model-args: share_prefix='maybe': expected true or false"),
    ({"device": "tpu"}, "--user-args", "--user-args: device='tpu': allowed auto, cpu, cuda, cuda:N, mps"),
    ({"prefill_chunk": -2}, "--model-args", "--model-args prefill_chunk=-2: expected auto or a token count >= 0"),
])
def test_a_bad_option_is_one_line_naming_the_flag_and_key(args, flag, message):
    with pytest.raises(ConfigError) as e:
        HFOptions.parse(args, flag)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_values_are_typed_once_and_ranges_checked():
    o = HFOptions.parse({"batch_size": "8", "share_prefix": "false", "threads": "auto", "prefill_chunk": "0"})
    assert (o.batch_size, o.share_prefix, o.threads, o.prefill_chunk) == (8, False, "auto", "0")
    assert VLLMOptions.parse({"gpu_memory_utilization": 0.5}).gpu_memory_utilization == 0.5
    for bad in (0, 1.5, "most"):
        with pytest.raises(ConfigError, match="expected a fraction in \\(0, 1\\]"):
            VLLMOptions.parse({"gpu_memory_utilization": bad})
    with pytest.raises(ConfigError, match="openai backend does not take dtype"):
        OpenAIOptions.parse({"dtype": "float32"})
    with pytest.raises(ConfigError, match="batch_size='auto': expected an integer >= 1"):
        OpenAIOptions.parse({"batch_size": "auto"})      # a server's batch is a count: auto means nothing there


def test_an_options_object_with_some_keys_replaced():
    base = VLLMOptions.parse({"dtype": "float32", "max_model_len": 2048})
    assert VLLMOptions.of(base) is base
    changed = VLLMOptions.of(base, {"seed": 3})
    assert (changed.dtype, changed.max_model_len, changed.seed) == ("float32", 2048, 3)
    with pytest.raises(TypeError, match="options must be VLLMOptions, not HFOptions"):
        VLLMOptions.of(HFOptions())


def test_make_backend_refuses_before_loading_anything():
    """The check runs before the backend class (and its heavy imports) is touched."""
    with pytest.raises(ConfigError, match="--judge-args: vllm backend does not take batch_sise"):
        make_backend("vllm:/no/such/model", {"batch_sise": 4}, flags=("--judge", "--judge-args"))


@pytest.mark.parametrize("prefix", sorted(OPTIONS))
def test_the_reference_is_generated_from_the_declaration(prefix, capsys):
    assert main(["models", "options", prefix]) == 0
    out = capsys.readouterr().out
    assert out.strip() == markdown_table(prefix)
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    keys = [re.match(r"\| `(\w+)`", r).group(1) for r in rows]
    assert keys[:len(dataclasses.fields(OPTIONS[prefix]))] == [f.name for f in dataclasses.fields(OPTIONS[prefix])]
    assert all(r.count(" | ") == 3 for r in rows), "a cell holds a bar that splits the table"
