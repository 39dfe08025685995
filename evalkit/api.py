"""The Python API: ``evalkit.evaluate(model=..., tasks=[...], limit=..., **options)``.

``model`` is any of:

- a spec string, as ``evalkit run --model`` takes it (``"hf:smollm2-135m"``, ``"vllm:/path"``,
  ``"openai:name"``), with backend options in ``model_args``;
- a loaded transformers model, with its ``tokenizer`` (or a ``(model, tokenizer)`` pair);
- a vLLM ``LLM``;
- an evalkit backend object.

Options are ``evalkit run``'s, by their Python names: ``num_fewshot``, ``seed``,
``apply_chat_template``, ``fewshot_as_multiturn``, ``system_prompt``, ``tool_parser`` (agent tasks),
``data`` ({task: path}),
``fewshot_data``, ``task_args`` ({task: {k: v}}), ``gen_kwargs``, ``user_model`` (the simulated
user of agent tasks such as τ²-bench, any ``model`` form; default the model itself) and ``user_model_args``,
``judge`` (a judge model for tasks that ask one, e.g. τ²-bench's natural-language assertions) and
``judge_args``, ``second_judge``/``second_judge_args`` (a second judge for the judges' agreement), ``repeats`` (K samples per problem, as
``gen_kwargs={"n": K}``), ``thinking_budgets`` ([256, 512, ...]: accuracy against thinking budget
from one trace, ``evalkit.run.budget_forcing``) and ``forced_answer_tokens``, ``shard`` ((i, n)), ``tags``,
``include_path``, ``output`` (results folder; None: write no record), ``cache_dir``, ``cache``
(False: neither read nor write the response cache), ``progress``. ``limit`` is a count of docs or a
fraction below 1 of each task's.

Returns the run record (``evalkit.records.Run``, the same object ``run.json`` holds), with the
sample rows of each task as ``run.samples`` ({task: [row, ...]}) and the record's folder as
``run.path`` when one was written.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

OPTIONS = ("num_fewshot", "seed", "apply_chat_template", "fewshot_as_multiturn", "system_prompt", "data",
           "fewshot_data", "task_args", "gen_kwargs", "shard", "tags", "include_path", "output", "cache_dir",
           "cache", "progress", "model_args", "tokenizer", "tool_parser", "repeats", "user_model", "user_model_args",
           "thinking_budgets", "forced_answer_tokens", "judge", "judge_args", "second_judge", "second_judge_args")


def _is_vllm_llm(obj) -> bool:
    return type(obj).__name__ == "LLM" and type(obj).__module__.split(".")[0] == "vllm"


def _is_transformers_model(obj) -> bool:
    return hasattr(obj, "state_dict") and hasattr(obj, "config") and hasattr(obj, "generate")


def make_model_backend(model, tokenizer=None, model_args: Optional[dict] = None):
    """(backend, spec string for the record, whether evaluate owns the backend and closes it)."""
    from evalkit.backends.base import Backend
    args = dict(model_args or {})
    if isinstance(model, tuple) and len(model) == 2:
        model, tokenizer = model
    if isinstance(model, str):
        from evalkit.backends import make_backend, split_spec
        split_spec(model)
        return make_backend(model, args), model, True
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
    from evalkit.taskapi import registry
    from evalkit.run import validation
    from evalkit.run.config import RunConfig
    for p in ([o["include_path"]] if isinstance(o.get("include_path"), str) else o.get("include_path") or []):
        registry.include_path(str(p))
    names = registry.expand([tasks] if isinstance(tasks, str) else list(tasks))
    gen = dict(o.get("gen_kwargs") or {})
    if gen:
        from evalkit.lm_eval_io.gen_kwargs import to_evalkit_gen
        gen, _ = to_evalkit_gen(gen, strict=True)  # evalkit's keys and lm-eval's (max_gen_toks, until, ...)
        validation.check_gen_overrides({k: v for k, v in gen.items() if k != "stop"}, "gen_kwargs")
    gen = validation.merge_repeats(gen, o.get("repeats"), "repeats")
    validation.check_num_fewshot(o.get("num_fewshot"), "num_fewshot")
    if limit is not None and not (isinstance(limit, (int, float)) and (limit >= 1 or 0 < limit < 1)):
        raise ValueError(f"limit={limit!r}: expected a number of docs >= 1 or a fraction in (0, 1)")
    data = {k: str(v) for k, v in (o.get("data") or {}).items()}
    task_opts = {k: dict(v) for k, v in (o.get("task_args") or {}).items()}
    validation.check_task_options(task_opts)
    forcing = None
    if o.get("thinking_budgets") is not None:
        from evalkit.run.budget_forcing import BudgetForcing
        forcing = BudgetForcing.parse(o["thinking_budgets"], o.get("forced_answer_tokens"),
                                      "thinking_budgets").to_record()
    elif o.get("forced_answer_tokens") is not None:
        raise ValueError("forced_answer_tokens applies with thinking_budgets")
    return RunConfig(tasks=names, limit=limit, seed=int(o.get("seed", 1234)), num_fewshot=o.get("num_fewshot"),
                     apply_chat_template=bool(o.get("apply_chat_template")), system_prompt=o.get("system_prompt"),
                     data_paths=data, task_options=task_opts, gen_overrides=gen,
                     shard=tuple(o["shard"]) if o.get("shard") else None, tags=list(o.get("tags") or []),
                     fewshot_paths={k: str(v) for k, v in (o.get("fewshot_data") or {}).items()},
                     fewshot_as_multiturn=o.get("fewshot_as_multiturn"), tool_parser=o.get("tool_parser"),
                     budget_forcing=forcing)


def evaluate(model, tasks: Union[str, Sequence[str]], limit: Union[int, float, None] = None, **options):
    """Evaluate ``model`` on ``tasks``; returns the run record (see the module docstring)."""
    from evalkit.run.cache import NullCache, ResponseCache
    from evalkit.run.runner import evaluate as run_evaluation, load_tasks
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"evalkit.evaluate: unknown option(s) {', '.join(unknown)}; known: {', '.join(OPTIONS)}")
    config = _config(tasks, limit, options)
    task_runs = load_tasks(config)  # data errors before any model work
    from evalkit.run.judge_phase import check
    check(task_runs, options.get("judge"), "judge=...", second_spec=options.get("second_judge"))
    model_args = dict(options.get("model_args") or {})
    from evalkit.scoring.thinking import pop_options
    thinking = pop_options(model_args)   # trace markers (think_start=...) are the run's, not the backend's
    if thinking:
        config.thinking = {**config.thinking, **thinking}
    output = options.get("output", "results")
    if options.get("cache", True) is False:
        cache = NullCache()
    else:
        cache_dir = options.get("cache_dir")
        cache = ResponseCache(Path(cache_dir) / "responses.sqlite" if cache_dir else None)
    try:
        backend, spec, owned = make_model_backend(model, options.get("tokenizer"), model_args)
    except BaseException:
        cache.close()
        raise
    extra = {}  # the user model and the judge: (backend, spec, owned)
    for role in ("user_model", "judge", "second_judge"):
        if options.get(role) is None:
            continue
        try:
            extra[role] = make_model_backend(options[role], None, dict(options.get(f"{role}_args") or {}))
        except BaseException:
            for b, _, own in ([(backend, spec, owned)] + list(extra.values())):
                if own:
                    b.close()
            cache.close()
            raise
    user_backend, user_spec, user_owned = extra.get("user_model", (None, "", False))
    judge_backend, judge_spec, judge_owned = extra.get("judge", (None, "", False))
    second_backend, second_spec, second_owned = extra.get("second_judge", (None, "", False))
    torch_model = getattr(backend, "_model", None) if not owned else None
    was_training = bool(getattr(torch_model, "training", False))
    if was_training:
        torch_model.eval()  # dropout off while scoring; the caller's mode comes back afterwards
    try:
        run = run_evaluation(backend, config, cache, output, model_spec=spec,
                             model_args={k: v for k, v in model_args.items()}, progress=bool(options.get("progress")),
                             task_runs=task_runs, user_backend=user_backend, user_model_spec=user_spec,
                             user_model_args=dict(options.get("user_model_args") or {}), judge_backend=judge_backend,
                             judge_spec=judge_spec, judge_args=dict(options.get("judge_args") or {}),
                             second_judge=(second_backend, second_spec, dict(options.get("second_judge_args") or {}))
                             if second_backend is not None else None)
    finally:
        if was_training:
            torch_model.train()
        if owned:
            backend.close()
        for b, own in ((user_backend, user_owned), (judge_backend, judge_owned), (second_backend, second_owned)):
            if own:
                b.close()
        cache.close()
    return run
