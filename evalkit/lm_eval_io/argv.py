"""lm-eval command lines for ``evalkit run`` (and ``evalkit --model ...`` without ``run``, as
``lm_eval --model ...``): lm-eval's spellings rewritten to evalkit's before argparse sees them.

- underscore spellings of evalkit's flags (``--num_fewshot``, ``--apply_chat_template``...);
- ``--model hf --model_args pretrained=X,dtype=...`` -> ``--model hf:X --model-args dtype=...``
  (``vllm`` likewise; ``local-completions``/``local-chat-completions`` with ``model=``/``base_url=``
  -> the ``openai`` backend); ``--batch_size`` and ``--device`` become model args;
- ``--output_path DIR``: the run record goes to DIR and lm-eval's results/samples files as well;
- ``--log_samples`` is accepted (samples are always written); ``--write_out`` prints the first
  prompts of each task and stops before the model loads; ``--gen_kwargs`` takes lm-eval's keys.

A flag whose meaning differs stops with one line that names the difference (never a guess).
"""
from __future__ import annotations

import json
import sys

from evalkit.util.errors import ConfigError

#: lm-eval hf model args that mean something evalkit does differently
HF_ARGS_WHY = {
    "parallelize": "evalkit's hf backend runs on one device; split a large model with vllm: "
                   "--model vllm --model_args pretrained=...,tensor_parallel_size=N",
    "peft": "evalkit evaluates LoRA adapters with the vllm backend: --lora NAME=PATH",
    "delta": "delta weights are not supported; merge them into a model folder first",
    "load_in_8bit": "quantized loading is the vllm backend's (model arg quantization=...)",
    "load_in_4bit": "quantized loading is the vllm backend's (model arg quantization=...)",
    "autogptq": "quantized loading is the vllm backend's (model arg quantization=...)",
    "gptqmodel": "quantized loading is the vllm backend's (model arg quantization=...)",
    "tokenizer": "evalkit reads the tokenizer from the model folder",
}
#: lm-eval --model types -> evalkit backend prefix
MODEL_TYPES = {"hf": "hf", "hf-auto": "hf", "huggingface": "hf", "vllm": "vllm",
               "local-completions": "openai", "local-chat-completions": "openai",
               "openai-completions": "openai", "openai-chat-completions": "openai"}
DTYPES = {"float": "float32", "half": "float16", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
SHORT = {"-t": "--tasks", "-f": "--num_fewshot", "-b": "--batch_size", "-o": "--output_path", "-L": "--limit",
         "-w": "--write_out", "-s": "--log_samples", "-E": "--samples", "-c": "--use_cache"}
DROPPED = {  # accepted, changes nothing: why
    "--log_samples": "samples are always written (samples_<task>.jsonl in the run record)",
    "--cache_requests": "evalkit always caches responses (see `evalkit cache info`)",
    "--verbosity": "use -v / --verbose for more logging",
    "--check_integrity": "tests of tasks are not run by `evalkit run`",
    "--max_batch_size": "evalkit sizes batches by tokens (model arg token_budget)",
}
VALUED = {"--verbosity", "--max_batch_size"}
REFUSED = {
    "--predict_only": "evalkit always scores; to keep predictions only, rescore them later with `evalkit score`",
    "--wandb_args": "log to W&B with `evalkit run ... --log-to wandb --wandb-project P`, or send a saved run "
                    "with `evalkit log RUN_DIR --to wandb`",
    "--wandb_config_args": "log to W&B with `evalkit run ... --log-to wandb`, or send a saved run with "
                           "`evalkit log RUN_DIR --to wandb`",
    "--hf_hub_log_args": "push to a Hub dataset with `evalkit run ... --push-to-hub OWNER/NAME`, or send a saved "
                         "run with `evalkit log RUN_DIR --to hub --repo OWNER/NAME`",
    "--samples": "evalkit selects docs by --limit and --shard, not by index lists",
    "--bootstrap_iters": "evalkit's intervals come from the samples (Wilson/t, corpus bootstrap); no iteration count",
    "--metadata": "pass task options with --task-args TASK:K=V",
    "--show_config": "the full config is in the run record (run.json)",
    "--confirm_run_unsafe_code": "code tasks run in evalkit's sandbox; no confirmation flag",
}


_NOTES: list = []   # said once the whole command line translates (a refusal is then the only line)


def _note(msg: str) -> None:
    _NOTES.append(f"evalkit run: lm-eval flag: {msg}")


def _split(argv: list) -> list:
    out = []
    for a in argv:
        if a.startswith("--") and "=" in a:
            out += a.split("=", 1)
        else:
            out.append(a)
    return out


def _kv(text: str, flag: str = "--model_args") -> dict:
    from evalkit.util.kvargs import parse_model_args
    try:
        return parse_model_args(text, flag)
    except ValueError as e:  # a one-line error, not a traceback
        raise ConfigError(str(e)) from None


def _device_arg(device: str):
    if device.startswith("cuda"):
        try:
            import torch
            if not torch.cuda.is_available():
                _note(f"--device {device}: no CUDA device on this machine; running on cpu (lm-eval falls back the same way)")
                return "cpu"
        except ImportError:
            pass
    return device


def translate(argv: list, known: set) -> list:
    """``evalkit run`` arguments with lm-eval's spellings rewritten; ``known``: run's own flags."""
    _NOTES.clear()
    out = _translate(argv, known)
    for n in _NOTES:
        print(n, file=sys.stderr)
    _NOTES.clear()
    return out


def _translate(argv: list, known: set) -> list:
    args, out = _split(list(argv)), []
    model_type, model_args, extra_args, flag = None, None, {}, "--model_args"
    i = 0
    while i < len(args):
        a = SHORT.get(args[i], args[i])
        val = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if not a.startswith("--"):
            out.append(a)
            continue
        if a == "--model" and val is not None and ":" not in val:
            if val not in MODEL_TYPES:
                raise ConfigError(f"--model {val}: lm-eval model type {val!r} has no evalkit backend; evalkit has "
                                  f"hf, vllm and openai (lm-eval's local-completions), e.g. --model hf:PATH")
            model_type, i = val, i + 1
        elif a in ("--model_args", "--model-args") and val is not None:
            model_args, flag, i = val, a, i + 1
        elif a in ("--batch_size", "--device") and val is not None:
            i += 1
            if a == "--batch_size":
                if val.startswith("auto:"):
                    _note(f"--batch_size {val}: evalkit's auto batch size is re-sized continuously; using auto")
                    val = "auto"
                if val != "auto" and not val.isdigit():
                    raise ConfigError(f"--batch_size {val}: expected a number, auto or auto:N")
                extra_args["batch_size"] = val if val == "auto" else int(val)
            else:
                extra_args["device"] = val
        elif a == "--output_path" and val is not None:
            out += ["--output", val, "--lm-eval-output", val]
            i += 1
        elif a in DROPPED:
            _note(f"{a} accepted: {DROPPED[a]}")
            if a in VALUED and val is not None:
                i += 1
        elif a in REFUSED:
            raise ConfigError(f"{a}: not supported by evalkit run: {REFUSED[a]}")
        elif a == "--trust_remote_code":
            extra_args["trust_remote_code"] = True
        elif a == "--apply_chat_template":
            if val is not None and not val.startswith("-"):
                raise ConfigError(f"--apply_chat_template {val}: evalkit uses the tokenizer's own chat template; "
                                  f"named templates are not supported")
            out.append("--apply-chat-template")
        elif a == "--system_instruction":
            out.append("--system-prompt")
        elif a == "--use_cache" and val is not None:
            _note(f"--use_cache {val}: evalkit's response cache goes to the folder {val} (--cache-dir)")
            out += ["--cache-dir", val]
            i += 1
        elif a == "--seed" and val is not None and "," in val:
            parts = val.split(",")
            fewshot = parts[3] if len(parts) > 3 else parts[-1]
            _note(f"--seed {val}: evalkit has one run seed (few-shot draws, sampling); using {fewshot}")
            out += ["--seed", fewshot]
            i += 1
        elif a == "--gen_kwargs" and val is not None:
            from evalkit.lm_eval_io.gen_kwargs import to_evalkit_gen
            gen, notes = to_evalkit_gen(val, strict=True)
            for n in notes:
                _note(n)
            out += ["--lm-eval-gen", json.dumps(gen)]
            i += 1
        elif "_" in a and a.replace("_", "-") in known:
            out.append(a.replace("_", "-"))
        else:
            out.append(a)
    if model_type is not None:
        chat = "--apply-chat-template" in out
        return _model_flags(model_type, _kv(model_args or "", flag), extra_args, chat) + out
    if model_args is not None or extra_args:  # evalkit's --model PREFIX:NAME with lm-eval's batch/device flags
        spec = next((out[j + 1] for j, x in enumerate(out[:-1]) if x == "--model"), "")
        merged = {**_kv(model_args or "", flag), **backend_extra(spec.split(":", 1)[0], extra_args)}
        if not merged:
            return out
        out += ["--model-args", ",".join(f"{k}={v}" for k, v in merged.items())]
    return out


def backend_extra(prefix: str, extra: dict) -> dict:
    """lm-eval's ``--batch_size``/``--device`` as the backend takes them: the hf backend takes both;
    vLLM schedules its own batches and picks its device (its engine rejects both arguments); the
    openai backend's ``batch_size`` is prompts per request (a number) and the server has the device."""
    extra = dict(extra)
    if prefix == "hf" and "device" in extra:
        extra["device"] = _device_arg(extra["device"])
    if prefix == "vllm":
        for k, why in (("batch_size", "vLLM batches continuously by itself (max_num_seqs=N caps a batch)"),
                       ("device", "vLLM runs on the GPUs it sees (CUDA_VISIBLE_DEVICES), or its CPU build")):
            if k in extra:
                _note(f"--{k} {extra.pop(k)} dropped for vllm: {why}")
    elif prefix == "openai":
        if "device" in extra:
            _note(f"--device {extra.pop('device')} dropped for a server model: the server has the device")
        if extra.get("batch_size") == "auto":
            _note("--batch_size auto dropped for a server model: prompts go 8 per request (model arg batch_size=N)")
            extra.pop("batch_size")
    return extra


def base_url(url: str) -> str:
    """lm-eval's ``base_url`` is the endpoint (``.../v1/completions``, ``.../v1/chat/completions``);
    evalkit's is the API root (``.../v1``) it appends ``/models`` and ``/completions`` to."""
    root = url.rstrip("/")
    for tail in ("/chat/completions", "/completions"):
        if root.endswith(tail):
            return root[:-len(tail)]
    return root


def _model_flags(model_type: str, margs: dict, extra: dict, chat: bool = False) -> list:
    prefix = MODEL_TYPES[model_type]
    key = "model" if prefix == "openai" else "pretrained"
    name = margs.pop(key, None)
    if name is None:
        raise ConfigError(f"--model {model_type}: --model_args needs {key}=NAME_OR_PATH "
                          f"(or use evalkit's form --model {prefix}:NAME_OR_PATH)")
    if prefix == "openai":
        for k in ("tokenized_requests", "num_concurrent"):
            if k in margs:
                v = margs.pop(k)
                if k == "num_concurrent":
                    margs["concurrency"] = v
        if "base_url" in margs:
            margs["base_url"] = base_url(str(margs["base_url"]))
        if model_type.endswith("chat-completions"):
            if not chat:  # as lm-eval, which refuses chat-completions without a chat template
                raise ConfigError(f"--model {model_type}: chat completions take messages: add --apply_chat_template "
                                  f"(generation tasks; loglikelihood tasks need local-completions)")
            _note(f"--model {model_type}: the openai backend; with --apply_chat_template generation goes to "
                  f"/chat/completions")
    for k in list(margs):
        if k in HF_ARGS_WHY and prefix == "hf":
            raise ConfigError(f"--model_args {k}={margs[k]}: {HF_ARGS_WHY[k]}")
    if "dtype" in margs:
        margs["dtype"] = DTYPES.get(str(margs["dtype"]), margs["dtype"])
    margs.update(backend_extra(prefix, extra))
    text = ",".join(f"{k}={v}" for k, v in margs.items())
    return ["--model", f"{prefix}:{name}"] + (["--model-args", text] if text else [])
