"""The Python API: ``evalkit.evaluate(model=..., tasks=[...], limit=..., **options)``.

``model`` is any of:

- a spec string, as ``evalkit run --model`` takes it (``"hf:smollm2-135m"``, ``"vllm:/path"``,
  ``"openai:name"``), with backend options in ``model_args``;
- a loaded transformers model, with its ``tokenizer`` (or a ``(model, tokenizer)`` pair);
- a vLLM ``LLM``;
- an evalkit backend object.

Options are ``evalkit run``'s, by their Python names: ``num_fewshot``, ``seed``,
``apply_chat_template``, ``fewshot_as_multiturn``, ``system_prompt``, ``tool_parser`` (agent tasks),
``data`` ({task: path}), ``data_root`` (a root of benchmark copies: each task reads its folder there
unless ``data`` names it),
``fewshot_data``, ``task_args`` ({task: {k: v}}), ``gen_kwargs``, ``user_model`` (the simulated
user of agent tasks such as τ²-bench, any ``model`` form; default the model itself) and ``user_model_args``,
``judge`` (a judge model for tasks that ask one, e.g. τ²-bench's natural-language assertions) and
``judge_args``, ``second_judge``/``second_judge_args`` (a second judge for the judges' agreement), ``repeats`` (K samples per problem, as
``gen_kwargs={"n": K}``), ``thinking_budgets`` ([256, 512, ...]: accuracy against thinking budget
from one trace, ``evalkit.run.budget_forcing``) and ``forced_answer_tokens``, ``shard`` ((i, n)), ``tags``,
``series`` and ``step`` (a training run's checkpoint: evaluate the model in memory every N steps with
``series="my-run", step=N`` and the leaderboard's Series view draws each metric against the step),
``include_path``, ``output`` (results folder; None: write no record), ``cache_dir``, ``cache``
(False: neither read nor write the response cache), ``progress``. ``limit`` is a count of docs or a
fraction below 1 of each task's.

Returns the run record (``evalkit.records.Run``, the same object ``run.json`` holds), with the
sample rows of each task as ``run.samples`` ({task: [row, ...]}) and the record's folder as
``run.path`` when one was written.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Optional, Sequence, Union

OPTIONS = ("num_fewshot", "seed", "apply_chat_template", "fewshot_as_multiturn", "system_prompt", "data", "data_root",
           "fewshot_data", "task_args", "gen_kwargs", "shard", "tags", "include_path", "output", "cache_dir",
           "cache", "progress", "model_args", "tokenizer", "tool_parser", "repeats", "user_model", "user_model_args",
           "thinking_budgets", "forced_answer_tokens", "judge", "judge_args", "second_judge", "second_judge_args",
           "series", "step")


def _is_vllm_llm(obj) -> bool:
    return type(obj).__name__ == "LLM" and type(obj).__module__.split(".")[0] == "vllm"


def _is_transformers_model(obj) -> bool:
    return hasattr(obj, "state_dict") and hasattr(obj, "config") and hasattr(obj, "generate")


#: the roles beside the model: (option, its options' option, the role's name)
ROLES = (("user_model", "user_model_args", "simulated user"), ("judge", "judge_args", "judge"),
         ("second_judge", "second_judge_args", "second judge"))
#: the options that make the run's config (``evalkit.run.config_builder``), by the names it takes
CONFIG_OPTIONS = ("num_fewshot", "seed", "apply_chat_template", "fewshot_as_multiturn", "system_prompt", "data",
                  "data_root", "fewshot_data", "task_args", "shard", "tags", "include_path", "tool_parser", "repeats",
                  "thinking_budgets", "forced_answer_tokens", "series", "step")


def make_model_backend(model, tokenizer=None, model_args: Optional[dict] = None,
                       role: tuple = ("model", "model", "model_args")) -> tuple:
    """(backend, spec string for the record, whether evaluate owns the backend and closes it); a spec
    string is a ``ModelRole`` (``role``: its name, option and options' option, named in errors)."""
    from evalkit.backends.base import Backend
    args = dict(model_args or {})
    if isinstance(model, tuple) and len(model) == 2:
        model, tokenizer = model
    if isinstance(model, str):
        from evalkit.run.roles import ModelRole
        return ModelRole.of(role[0], model, args, role[1], role[2]).make(), model, True
    if isinstance(model, Backend):
        return model, getattr(model, "spec", model.name), False
    if _is_vllm_llm(model):
        from evalkit.backends.in_memory import vllm_backend_from_llm
        b = vllm_backend_from_llm(model, **args)
        return b, f"vllm:{b.spec}", False
    if _is_transformers_model(model):
        if tokenizer is None:
            raise ValueError("evalkit.evaluate: a transformers model needs its tokenizer: "
                             "evaluate(model=model, tokenizer=tokenizer, ...) or model=(model, tokenizer)")
        from evalkit.backends.in_memory import LoadedHFBackend
        b = LoadedHFBackend(model, tokenizer, **args)
        return b, f"hf:{b.spec} (in memory)", False
    raise TypeError(f"evalkit.evaluate: model {type(model).__name__!r} is not a spec string, a transformers model, "
                    f"a vLLM LLM or an evalkit backend")


def _config(tasks, limit, o: dict):
    from evalkit.run.config_builder import build_config
    if limit is not None and not (isinstance(limit, (int, float)) and (limit >= 1 or 0 < limit < 1)):
        raise ValueError(f"limit={limit!r}: expected a number of docs >= 1 or a fraction in (0, 1)")
    include = o.get("include_path")
    gen = dict(o.get("gen_kwargs") or {})
    if gen:
        from evalkit.lm_eval_io.gen_kwargs import to_evalkit_gen
        gen, _ = to_evalkit_gen(gen, strict=True)  # evalkit's keys and lm-eval's (max_gen_toks, until, ...)
    return build_config([tasks] if isinstance(tasks, str) else list(tasks), other_tasks="keep", limit=limit,
                        lm_eval_gen=gen,
                        **{k: o[k] for k in CONFIG_OPTIONS if k in o},
                        **({"include_path": [include]} if isinstance(include, str) else {}))


def _roles(options: dict) -> list:
    """The simulated user, the judge and the second judge that were given: (option names, model, args);
    options of a role not given are refused."""
    from evalkit.run.roles import ModelRole
    out = []
    for key, args_key, name in ROLES:
        if options.get(key) is None:
            ModelRole.of(name, None, options.get(args_key) or {}, key, args_key)
        else:
            out.append(((name, key, args_key), options[key], dict(options.get(args_key) or {})))
    return out


def evaluate(model, tasks: Union[str, Sequence[str]], limit: Union[int, float, None] = None, **options):
    """Evaluate ``model`` on ``tasks``; returns the run record (see the module docstring)."""
    from evalkit.run.runner import evaluate as run_evaluation, load_tasks
    from evalkit.run.roles import Bound
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"evalkit.evaluate: unknown option(s) {', '.join(unknown)}; known: {', '.join(OPTIONS)}")
    roles = _roles(options)
    config = _config(tasks, limit, options)
    task_runs = load_tasks(config)  # data errors before any model work
    from evalkit.run.judge_phase import check
    check(task_runs, options.get("judge"), "judge=...", second_spec=options.get("second_judge"))
    model_args = dict(options.get("model_args") or {})
    from evalkit.scoring.thinking import pop_options
    thinking = pop_options(model_args)   # trace markers (think_start=...) are the run's, not the backend's
    if thinking:
        config.thinking = {**config.thinking, **thinking}
    cache, made = _open_cache(options), []  # made: (Bound, whether evaluate owns it)
    try:
        backend, spec, owned = make_model_backend(model, options.get("tokenizer"), model_args)
        made.append((Bound(backend, spec, model_args), owned))
        bound = {}  # option name: the role as the run takes it
        for role, given, args in roles:
            b, s, own = make_model_backend(given, None, args, role)
            bound[role[1]] = Bound(b, s, args)
            made.append((bound[role[1]], own))
        with _eval_mode(backend, owned):
            return run_evaluation(backend, config, cache, options.get("output", "results"), model_spec=spec,
                                  model_args=model_args, progress=bool(options.get("progress")), task_runs=task_runs,
                                  user=bound.get("user_model"), judge=bound.get("judge"),
                                  second_judge=bound.get("second_judge"))
    finally:
        for b, own in made:
            if own:
                b.backend.close()
        cache.close()


def _open_cache(options: dict):
    from evalkit.run.cache import NullCache, ResponseCache
    if options.get("cache", True) is False:
        return NullCache()
    cache_dir = options.get("cache_dir")
    return ResponseCache(Path(cache_dir) / "responses.sqlite" if cache_dir else None)


@contextmanager
def _eval_mode(backend, owned: bool):
    """A caller's torch model in eval mode while it is scored (dropout off); its own mode comes back after."""
    torch_model = getattr(backend, "_model", None) if not owned else None
    was_training = bool(getattr(torch_model, "training", False))
    if was_training:
        torch_model.eval()
    try:
        yield
    finally:
        if was_training:
            torch_model.train()
