"""Each backend's options (``--model-args k=v,...``) as one typed declaration: the type, the range, the
default and a line of help per key. ``parse`` checks a dict of options once (unknown keys, types,
ranges) with errors that name the flag the user typed; the backends' constructors take the parsed
object; ``describe`` documents them from the same declaration (``evalkit models options BACKEND``).

Loading nothing: the CLI checks a run's options here before any model loads.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from evalkit.util.errors import ConfigError

DTYPES = ("auto", "float32", "float16", "bfloat16", "half", "float")  # torch names vLLM also takes
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def opt(default, help: str, kind: str = "str", least=None, most=None, auto: bool = False, choices=None,
        check=None, shown: Optional[str] = None):
    """One option: ``kind`` int, float, bool, str or any (passed as given); ``least``/``most`` its
    range; ``auto``: the word ``auto`` is also accepted; ``choices``: the only values allowed;
    ``check(value, flag)``: a further check (raises ConfigError); ``shown``: the value's form as
    documented, where the kind does not say it."""
    return field(default=default, metadata={"help": help, "kind": kind, "least": least, "most": most,
                                            "auto": auto, "choices": choices, "check": check, "shown": shown})


# the replica options make_backend takes for hf and vllm (one engine per replica, optionally on Ray)
DATA_PARALLEL = {
    "data_parallel_size": dict(kind="int", least=1, help="replicas, each its own engine (hf, vllm)"),
    "ray_address": dict(kind="str", help="a Ray cluster to place the replicas on"),
    "cpus_per_engine": dict(kind="float", least=0, help="CPUs Ray reserves per replica"),
    "gpus_per_engine": dict(kind="float", least=0, help="GPUs Ray reserves per replica"),
}


class BackendOptions:
    """Shared parsing for the option dataclasses below."""
    backend: ClassVar[str] = ""

    @classmethod
    def summary(cls) -> str:
        """What the backend is: its docstring after the ``--model`` form."""
        return cls.__doc__.split("``: ", 1)[1].strip()

    @classmethod
    def parse(cls, args: Optional[dict], flag: str = "--model-args", replicas: bool = False):
        """The options from ``args`` (a ``--model-args`` dict or keyword arguments), every key and value
        checked; ``replicas``: the data-parallel keys are accepted (and dropped) too."""
        args = dict(args or {})
        known = {f.name: f for f in dataclasses.fields(cls)}
        extra = DATA_PARALLEL if replicas else {}
        unknown = [k for k in args if k not in known and k not in extra]
        if unknown:
            raise ConfigError(f"{flag}: {cls.backend} backend does not take {', '.join(unknown)}; "
                              f"allowed: {', '.join(list(known) + list(DATA_PARALLEL))}")
        values = {k: check_value(k, v, known[k].metadata, flag) for k, v in args.items() if k in known}
        for k, v in args.items():
            if k in extra:
                check_value(k, v, extra[k], flag)
        return cls(**values)

    @classmethod
    def of(cls, options=None, kwargs: Optional[dict] = None):
        """What a constructor takes: an options object, keyword arguments, or the object with some
        keys replaced by keyword arguments."""
        if options is None:
            return cls.parse(kwargs)
        if not isinstance(options, cls):
            raise TypeError(f"{cls.backend} backend: options must be {cls.__name__}, not {type(options).__name__}")
        if not kwargs:
            return options
        given = cls.parse(kwargs)
        return dataclasses.replace(options, **{k: getattr(given, k) for k in kwargs})

    @classmethod
    def check_known(cls, args: dict, flag: str = "--model-args") -> None:
        """The types and ranges of the keys this backend knows (others are left to ``parse``)."""
        known = {f.name: f.metadata for f in dataclasses.fields(cls)}
        for k, v in args.items():
            meta = known.get(k) or DATA_PARALLEL.get(k)
            if meta is not None:
                check_value(k, v, meta, flag)

    @classmethod
    def describe(cls) -> list:
        """(key, kind, default, help) per option, in declaration order, then the replica options."""
        rows = [(f.name, _kind_text(f.metadata), f.default, f.metadata["help"]) for f in dataclasses.fields(cls)]
        if cls.backend in ("hf", "vllm"):
            rows += [(k, _kind_text(m), None if k != "data_parallel_size" else 1, m["help"])
                     for k, m in DATA_PARALLEL.items()]
        return rows


def _kind_text(meta: dict) -> str:
    if meta.get("shown"):
        return meta["shown"]
    kind = meta["kind"]
    if meta.get("choices"):
        return ", ".join(meta["choices"])
    text = {"int": "integer", "float": "number", "bool": "true or false", "str": "text", "any": "text"}[kind]
    if meta.get("least") is not None or meta.get("most") is not None:
        lo, hi = meta.get("least"), meta.get("most")
        text += f" >= {lo:g}" if hi is None else f" in ({lo:g}, {hi:g}]"
    return ("auto or " + text) if meta.get("auto") else text


def check_value(key: str, value, meta: dict, flag: str = "--model-args"):
    """``value`` checked against the option's declaration (None is always allowed: the default)."""
    if value is None or (meta.get("auto") and value == "auto"):
        return value
    if meta.get("check"):
        meta["check"](value, flag)
    kind = meta["kind"]
    if kind == "bool":
        return _as_bool(key, value, flag)
    if kind in ("int", "float"):
        return _as_number(key, value, meta, flag)
    if kind == "str" and meta.get("choices") and str(value) not in meta["choices"]:
        raise ConfigError(f"{flag}: {key}={value!r}: allowed {', '.join(meta['choices'])}")
    return str(value) if kind == "str" else value


def _as_bool(key: str, value, flag: str) -> bool:
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in TRUE or low in FALSE:
        return low in TRUE
    raise ConfigError(f"{flag}: {key}={value!r}: expected true or false")


def _as_number(key: str, value, meta: dict, flag: str):
    kind, least, most = meta["kind"], meta.get("least"), meta.get("most")
    number = _number(value, kind)
    if most is not None:
        if number is None or not least < number <= most:
            raise ConfigError(f"{flag}: {key}={value!r}: expected a fraction in ({least:g}, {most:g}]")
        return number
    if number is None or (least is not None and number < least):
        allowed = "'auto' or " if meta.get("auto") else ""
        what = "an integer" if kind == "int" else "a number"
        bound = "" if least is None else (f" >= {least}" if kind == "int" else f" >= {least:g}")
        raise ConfigError(f"{flag}: {key}={value!r}: expected {allowed}{what}{bound}")
    return number


def _number(value, kind: str):
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = int(value) if kind == "int" else float(value)
        except ValueError:
            return None
    if kind == "int":
        return value if isinstance(value, int) else None
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def check_device(device: str, flag: str = "--model-args") -> None:
    if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", device):
        raise ConfigError(f"{flag}: device={device!r}: allowed auto, cpu, cuda, cuda:N, mps")
    if device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            raise ConfigError(f"{flag}: device={device}: CUDA is not available on this machine "
                              f"(torch {torch.__version__}); use device=cpu or device=auto")
        idx = int(device.split(":")[1]) if ":" in device else 0
        if idx >= torch.cuda.device_count():
            raise ConfigError(f"{flag}: device={device}: this machine has {torch.cuda.device_count()} CUDA device(s)")


def prefill_chunk_option(value, flag: str = "--model-args"):
    """``auto`` or a token count >= 0 (0: every prompt in one pass)."""
    if str(value).lower() == "auto":
        return "auto"
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = -1
    if n < 0:
        raise ConfigError(f"{flag} prefill_chunk={value}: expected auto or a token count >= 0 (0: no chunks)")
    return n


# ---- what the local backends share -------------------------------------------------------------
_REVISION = "the hub revision (branch, tag or commit) of a hub model"
_DTYPE = "the weights' dtype; auto: float32 on CPU (comparable scores), the checkpoint's on GPU"
_MAX_LENGTH = "input tokens kept, truncated from the left; default: the model's context"
_BOS = "put the BOS token before every scored sequence (lm-eval's add_bos_token)"
_CHUNK = "requests per engine chunk (the cache commits after each)"
_TEMPLATE = "a Jinja file (or the template text) replacing the tokenizer's chat template"
_TEMPLATE_KW = "a JSON object of chat-template variables, e.g. {\"enable_thinking\": false}"
_EFFORT = "gpt-oss reasoning effort (low, medium, high), rendered by a harmony template"
_TRUST = "run the model repository's own Python code (transformers' trust_remote_code)"


@dataclass(frozen=True)
class HFOptions(BackendOptions):
    """``--model hf:...``: transformers in this process."""
    backend: ClassVar[str] = "hf"
    revision: Optional[str] = opt(None, _REVISION)
    dtype: str = opt("auto", _DTYPE, choices=DTYPES)
    device: str = opt("auto", "auto, cpu, cuda, cuda:N or mps", check=lambda v, flag: check_device(str(v), flag))
    batch_size: Any = opt("auto", "sequences per forward pass; auto: as many as token_budget holds", "int", 1,
                          auto=True)
    max_length: Optional[int] = opt(None, _MAX_LENGTH, "int", 1)
    max_gen_toks: int = opt(256, "generated tokens when a task sets no max_tokens", "int", 1)
    trust_remote_code: bool = opt(False, _TRUST, "bool")
    threads: Any = opt(None, "torch threads on CPU; default: the cores really free", "int", 1, auto=True)
    add_bos_token: bool = opt(False, _BOS, "bool")
    token_budget: Optional[int] = opt(None, "tokens per forward pass when batch_size=auto", "int", 1)
    chunk_size: Optional[int] = opt(None, _CHUNK + "; default 64 on CPU, 512 on GPU", "int", 1)
    share_prefix: bool = opt(True, "run a prefix that scored sequences share (few-shot examples) once", "bool")
    chat_template: Optional[str] = opt(None, _TEMPLATE)
    chat_template_kwargs: Any = opt(None, _TEMPLATE_KW, "any")
    reasoning_effort: Optional[str] = opt(None, _EFFORT)
    prefill_chunk: Any = opt("auto", "prompt tokens per prefill step (0: one pass; auto: 4096 on wide models)",
                             "any", check=lambda v, flag: prefill_chunk_option(v, flag), shown="auto or integer >= 0")


@dataclass(frozen=True)
class VLLMOptions(BackendOptions):
    """``--model vllm:...``: one offline vLLM engine (CPU build or GPU build)."""
    backend: ClassVar[str] = "vllm"
    revision: Optional[str] = opt(None, _REVISION)
    dtype: str = opt("auto", _DTYPE, choices=DTYPES)
    max_model_len: Optional[int] = opt(None, "the engine's context length; default: the model's", "int", 1)
    max_length: Optional[int] = opt(None, _MAX_LENGTH + " - 2", "int", 1)
    gpu_memory_utilization: Optional[float] = opt(None, "share of GPU memory the engine may take", "float", 0, 1)
    tensor_parallel_size: int = opt(1, "GPUs one engine spans", "int", 1)
    enforce_eager: Optional[bool] = opt(None, "no CUDA graphs; default: true on CPU", "bool")
    seed: int = opt(0, "the engine's seed", "int")
    quantization: Optional[str] = opt(None, "vLLM's quantization method (awq, gptq, fp8, ...)")
    trust_remote_code: bool = opt(False, _TRUST, "bool")
    max_num_seqs: Optional[int] = opt(None, "sequences the scheduler runs at once", "int", 1)
    enable_prefix_caching: bool = opt(True, "reuse the KV cache of shared prompt prefixes", "bool")
    block_size: Optional[int] = opt(None, "tokens per KV block; default 32 on CPU with prefix caching", "int", 1)
    add_bos_token: bool = opt(False, _BOS, "bool")
    chunk_size: Optional[int] = opt(None, _CHUNK + "; default 4096", "int", 1)
    lora: Any = opt(None, "LoRA adapters NAME=PATH[,NAME2=PATH2] (PEFT folders)", "any")
    max_lora_rank: Optional[int] = opt(None, "the largest adapter rank; default: read from the adapters", "int", 1)
    progress: Optional[bool] = opt(None, "vLLM's progress bar; default: when stderr is a terminal", "bool")
    chat_template: Optional[str] = opt(None, _TEMPLATE)
    chat_template_kwargs: Any = opt(None, _TEMPLATE_KW, "any")
    reasoning_effort: Optional[str] = opt(None, _EFFORT)
    kv_cache_memory_bytes: Optional[int] = opt(None, "the KV cache's size in bytes", "int", 1)
    enable_chunked_prefill: Optional[bool] = opt(None, "split long prompts over scheduler steps", "bool")
    kv_cache_space: Optional[float] = opt(None, "the KV cache's size in GiB (CPU build)", "float", 0)


@dataclass(frozen=True)
class OpenAIOptions(BackendOptions):
    """``--model openai:...``: any OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, OpenAI)."""
    backend: ClassVar[str] = "openai"
    base_url: Optional[str] = opt(None, "the API root; default $OPENAI_BASE_URL, else api.openai.com/v1")
    api_key_env: str = opt("OPENAI_API_KEY", "the environment variable holding the API key")
    concurrency: int = opt(8, "requests in flight at once", "int", 1)
    batch_size: int = opt(8, "prompts per completions request", "int", 1)
    max_retries: int = opt(6, "retries of a failed request (429, 5xx, timeouts)", "int", 0)
    timeout: float = opt(600.0, "seconds a request may take", "float", 0)
    backoff_base: float = opt(1.0, "the first retry's wait in seconds (doubling, with jitter)", "float", 0)
    backoff_max: float = opt(60.0, "the longest wait between retries, in seconds", "float", 0)
    tokenizer: Any = opt("auto", "a tokenizer folder for token-exact scoring; auto: the served model's; "
                                 "none: text mode", "any", shown="auto, none or a folder")
    max_length: Optional[int] = opt(None, _MAX_LENGTH + " - 2 (the served max_model_len)", "int", 1)
    add_bos_token: bool = opt(False, _BOS, "bool")
    chunk_size: Optional[int] = opt(None, _CHUNK + "; default 32 x concurrency", "int", 1)
    trust_remote_code: bool = opt(False, _TRUST + " (the tokenizer's)", "bool")
    chat_template_kwargs: Any = opt(None, _TEMPLATE_KW + " (sent as the request's chat_template_kwargs)", "any")
    reasoning_effort: Optional[str] = opt(None, "the request's reasoning_effort (a reasoning model's)")
    reasoning_model: Any = opt("auto", "true: send max_completion_tokens and no temperature (o-series); "
                                       "auto: decided from the model's name", "bool", auto=True)


OPTIONS = {"hf": HFOptions, "vllm": VLLMOptions, "openai": OpenAIOptions}


def markdown_table(prefix: str) -> str:
    """The backend's options as a Markdown table (the CLI reference)."""
    lines = [f"`--model {prefix}:MODEL --model-args k=v,...`: {OPTIONS[prefix].summary()}",
             "", "| key | value | default | what it does |", "| --- | --- | --- | --- |"]
    for key, kind, default, help_ in OPTIONS[prefix].describe():
        shown = "" if default is None else f"`{str(default).lower() if isinstance(default, bool) else default}`"
        lines.append(f"| `{key}` | {kind} | {shown} | {help_} |")
    return "\n".join(lines)
