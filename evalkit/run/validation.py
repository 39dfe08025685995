"""Options checked before anything heavy runs: every mistake is one line naming the flag, the key and
what is allowed, before a model loads or a request is made."""
from __future__ import annotations

import inspect
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Optional

from evalkit.util.errors import ConfigError

GEN_KEYS = ("max_tokens", "temperature", "top_p", "n", "seed", "top_k", "min_p", "repetition_penalty")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_model_args(prefix: str, args: dict, flag: str = "--model-args") -> None:
    """Types and ranges of the backend options that a backend would otherwise reject late (after
    loading weights) or with a traceback, from the backend's declaration (``backends/options.py``);
    keys the backend does not know are left to ``make_backend``'s check, which names them."""
    from evalkit.backends.options import OPTIONS
    if prefix in OPTIONS:  # (a backend registered without a declaration checks its own)
        OPTIONS[prefix].check_known(args, flag)


def check_series(name, step, name_flag: str = "--series", step_flag: str = "--step") -> Optional[dict]:
    """A checkpoint's place in a training run: both given (a name and a step >= 0) or neither."""
    if name is None and step is None:
        return None
    if name is None or not str(name).strip():
        raise ConfigError(f"{step_flag} {step} needs {name_flag} NAME (the training run the checkpoint belongs to)")
    if step is None:
        raise ConfigError(f"{name_flag} {name}: give the checkpoint's {step_flag} N (its training step)")
    if not _is_int(step) or step < 0:
        raise ConfigError(f"{step_flag} {step!r}: expected an integer >= 0 (the training step)")
    return {"name": str(name).strip(), "step": int(step)}


#: the most samples per problem (``n=``, ``--repeats``): the largest repeated-sampling studies draw 10,000
#: (Brown et al. 2024, "Large Language Monkeys"); past it a typo (``--repeats 1000000000``) would build
#: billions of requests before sending one
MAX_SAMPLES_PER_PROBLEM = 10_000


def check_gen_overrides(gen: dict, flag: str = "--gen-kwargs") -> None:
    unknown = sorted(set(gen) - set(GEN_KEYS))
    if unknown:
        raise ConfigError(f"{flag}: unknown {', '.join(unknown)}; allowed: {', '.join(sorted(GEN_KEYS))}")
    rules = {
        "max_tokens": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
        "n": (lambda v: _is_int(v) and 1 <= v <= MAX_SAMPLES_PER_PROBLEM,
              f"an integer from 1 to {MAX_SAMPLES_PER_PROBLEM:,} (samples per problem)"),
        "temperature": (lambda v: _is_num(v) and v >= 0, "a number >= 0"),
        "top_p": (lambda v: _is_num(v) and 0 < v <= 1, "a number in (0, 1]"),
        "seed": (lambda v: v is None or _is_int(v), "an integer"),
        "top_k": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0: no cut)"),
        "min_p": (lambda v: _is_num(v) and 0 <= v < 1, "a number in [0, 1)"),
        "repetition_penalty": (lambda v: _is_num(v) and v > 0, "a number > 0 (1: none)"),
    }
    for key, value in gen.items():
        ok, want = rules[key]
        if not ok(value):
            raise ConfigError(f"{flag}: {key}={value!r}: expected {want}")


def merge_repeats(gen: dict, repeats, flag: str = "--repeats") -> dict:
    """``--repeats K`` is ``n=K`` in the generation overrides (K samples per problem); both given must agree."""
    if repeats is None:
        return gen
    if not _is_int(repeats) or not 1 <= repeats <= MAX_SAMPLES_PER_PROBLEM:
        raise ConfigError(f"{flag} {repeats!r}: expected an integer from 1 to {MAX_SAMPLES_PER_PROBLEM:,} "
                          f"(samples per problem)")
    if "n" in gen and gen["n"] != repeats:
        raise ConfigError(f"{flag} {repeats} and n={gen['n']} in the generation overrides disagree; give one")
    return {**gen, "n": int(repeats)}


def check_num_fewshot(k, flag: str = "--num-fewshot") -> None:
    if k is not None and (not _is_int(k) or k < 0):
        raise ConfigError(f"{flag} {k!r}: expected an integer >= 0")


_OPTION_READ = re.compile(r"options(?:\.get\(|\[)\s*[\"'](\w+)[\"']")
_OPTION_TUPLE = re.compile(r"_OPTIONS\s*=\s*\(([^)]*)\)")
ALWAYS_ALLOWED = {"metrics"}  # attached by --metric (evalkit.scoring.hf_evaluate)


def task_option_names(cls) -> set | None:
    """The option keys a task reads (from a ``known_options`` attribute, else from its source);
    None when that cannot be told (then nothing is refused)."""
    from evalkit.taskapi.judged import MAX_TOKENS_OPTION
    always = ALWAYS_ALLOWED | ({MAX_TOKENS_OPTION} if getattr(cls, "judged", ()) or hasattr(cls, "judged_metrics")
                               else set())
    declared = getattr(cls, "known_options", None)
    if declared is not None:
        return set(declared) | always
    names = set(always)
    try:
        for klass in inspect.getmro(cls):
            if klass is object:
                continue
            module = inspect.getmodule(klass)
            for src in (inspect.getsource(klass), inspect.getsource(module) if module else ""):
                names.update(_OPTION_READ.findall(src))
                for group in _OPTION_TUPLE.findall(src):
                    names.update(re.findall(r"[\"'](\w+)[\"']", group))
    except (OSError, TypeError):
        return None
    return names


#: the type and range of task options that mean the same in every task taking them (a task's own
#: ``option_rules`` adds to or overrides these): name -> (kind, least, most)
TASK_OPTION_RULES = {
    "max_steps": ("int", 1, None), "max_errors": ("int", 1, None), "trials": ("int", 1, None),
    "max_tokens": ("int", 1, None), "judge_max_tokens": ("int", 1, None), "samples": ("int", 1, None),
    "max_messages": ("int", 1, None), "user_temperature": ("number", 0.0, None), "threshold": ("number", 0.0, 1.0),
}


def check_option_value(task: str, key: str, value, rule: tuple, flag: str = "--task-args") -> None:
    kind, least, most = rule
    shown = value
    if isinstance(value, str):  # (the Python API may pass "5")
        try:
            value = int(value) if kind == "int" else float(value)
        except ValueError:
            pass
    ok = _is_int(value) if kind == "int" else _is_num(value)
    if ok and (value < least or (most is not None and value > most)):
        ok = False
    if not ok:
        what = "an integer" if kind == "int" else "a number"
        span = f" from {least:g} to {most:g}" if most is not None else f" >= {least:g}"
        raise ConfigError(f"{flag} {task}: {key}={shown!r}: expected {what}{span}")


def check_task_options(task_options: dict, flag: str = "--task-args") -> None:
    from evalkit.taskapi import registry

    for task, opts in task_options.items():
        cls = registry.get_task_class(task)
        known = task_option_names(cls)
        if known is not None:
            unknown = sorted(set(opts) - known)
            if unknown:
                takes = ", ".join(sorted(known - ALWAYS_ALLOWED)) or "none"
                raise ConfigError(f"{flag} {task}: unknown option(s) {', '.join(unknown)}; task {task} takes: {takes}")
        rules = {**TASK_OPTION_RULES, **(getattr(cls, "option_rules", None) or {})}
        for key, value in opts.items():
            if key in rules:
                check_option_value(task, key, value, rules[key], flag)


def check_output_file(path: str, flag: str = "--output") -> None:
    """A file the command will write (its folder created when missing): checked before the model loads."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{flag} {path}: is a folder, not a file")
    try:
        check_output_dir(str(p.parent), flag)
    except ConfigError as e:
        why = str(e).split(": ", 1)[1].split("; choose")[0]
        raise ConfigError(f"{flag} {path}: {why}; choose another file with {flag}") from None


def check_output_dir(path: str, flag: str = "--output") -> None:
    """The results folder can be written (created when missing): checked before the model loads."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{flag} {path}: is a file, not a folder")
    probe = p
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{flag} {path}: {probe} is a file, not a folder")
    try:  # probe the folder itself, or the nearest existing one above it (nothing is created)
        fd, tmp = tempfile.mkstemp(prefix=".evalkit-write-check-", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise ConfigError(f"{flag} {path}: cannot write there ({e.strerror or e}); choose another folder with "
                          f"{flag} or pass --no-output") from None
