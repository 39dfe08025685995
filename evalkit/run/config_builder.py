"""The one way a ``RunConfig`` is built from what a user asked, on the command line (``evalkit run``), in
Python (``evalkit.evaluate``) or in a gate config (``evalkit gate`` with ``baseline_model``).

``build_config`` takes the settings by their Python names (as ``evalkit.evaluate`` takes them) as
plain values (a caller parses its own text first), applies a suite's settings where none is given,
expands the task names and checks every setting before any data or model loads; each error names the
setting as the user spelled it (``CLI`` for the command line, the Python name otherwise).
"""
from __future__ import annotations

from typing import Optional

from evalkit.run import data_root, validation
from evalkit.run.config import RunConfig
from evalkit.taskapi import registry

#: each setting as ``evalkit run`` spells it (the Python name is the spelling everywhere else)
CLI = {"series": "--series", "step": "--step", "data": "--data", "data_root": "--data-root",
       "fewshot_data": "--fewshot-data", "task_args": "--task-args", "gen_kwargs": "--gen-kwargs",
       "lm_eval_gen": "--gen_kwargs", "repeats": "--repeats", "num_fewshot": "--num-fewshot", "metrics": "--metric",
       "tool_parser": "--tool-parser", "fewshot_as_multiturn": "--fewshot-as-multiturn",
       "apply_chat_template": "--apply-chat-template", "thinking_budgets": "--thinking-budgets",
       "forced_answer_tokens": "--forced-answer-tokens"}
PYTHON = {"lm_eval_gen": "gen_kwargs"}  # evalkit.evaluate's gen_kwargs take lm-eval's keys too


def build_config(tasks, spelling: Optional[dict] = None, suite=None, other_tasks: str = "refuse",
                 **given) -> RunConfig:
    """The run's config from ``tasks`` (names, comma lists, patterns), a loaded ``suite`` (its tasks
    come first, its settings apply where ``given`` has none) and ``given``: ``include_path``, ``limit``,
    ``seed``, ``num_fewshot``, ``apply_chat_template``, ``fewshot_as_multiturn``, ``system_prompt``,
    ``data`` and ``fewshot_data`` ({task: path}), ``data_root`` (a root of benchmark copies: each task's
    folder there, ``evalkit.run.data_root``; ``data`` wins), ``task_args`` ({task: {k: v}}), ``trust_remote_code``,
    ``gen_kwargs`` (evalkit's keys), ``lm_eval_gen`` (lm-eval's, translated: ``stop`` allowed),
    ``repeats``, ``metrics`` (``evaluate:NAME`` specs), ``tool_parser``, ``thinking_budgets`` and
    ``forced_answer_tokens``, ``shard`` ((i, n)), ``tags``, ``series`` and ``step`` (a training run's
    checkpoint). ``other_tasks``: what data paths and task options naming tasks that are not run get,
    ``refuse`` (the command line and the gate: a typo) or ``keep`` (the Python API, where one options dict
    often serves several calls)."""
    spelling = spelling or PYTHON

    def flag(name: str) -> str:
        return spelling.get(name, name)

    for path in given.get("include_path") or []:
        registry.include_path(str(path))
    st = suite.settings if suite is not None else {}
    gen = generation(st, given, flag)  # before the task names are looked up (lm-eval's catalog loads)
    names = registry.expand((suite.task_names() if suite is not None else []) + list(tasks))
    root_flag = flag("data_root")
    if suite is not None:
        if given.get("data_root") is None and "data_root" in st:
            root_flag = f"{suite.path}: field 'data_root'"
        given = {**{k: st[k] for k in ("apply_chat_template", "fewshot_as_multiturn", "num_fewshot", "data_root")
                    if k in st},
                 **{k: v for k, v in given.items() if v is not None}}
    data, fewshot, task_opts = paths_and_options(names, suite, given, flag, refuse_others=other_tasks == "refuse")
    if given.get("data_root") is not None:
        data = {**data_root.resolve(names, given["data_root"], data, root_flag, flag("data")), **data}
    validation.check_num_fewshot(given.get("num_fewshot"), flag("num_fewshot"))
    parser = given.get("tool_parser")
    if parser is not None:
        from evalkit.taskapi import tool_parsers
        if parser not in tool_parsers.names():
            raise ValueError(f"{flag('tool_parser')} {parser!r}: unknown; known: {', '.join(tool_parsers.names())}")
    chat = bool(given.get("apply_chat_template"))
    if given.get("fewshot_as_multiturn") and not chat:
        raise ValueError(f"{flag('fewshot_as_multiturn')} needs {flag('apply_chat_template')} (as in lm-eval)")
    shard = given.get("shard")
    return RunConfig(tasks=names, limit=given.get("limit"), seed=int(_or(given.get("seed"), 1234)),
                     num_fewshot=given.get("num_fewshot"), apply_chat_template=chat,
                     system_prompt=given.get("system_prompt"), data_paths=data, task_options=task_opts,
                     gen_overrides=gen, shard=tuple(shard) if shard else None, tags=list(given.get("tags") or []),
                     fewshot_paths=fewshot, metrics=appended_metrics(names, given.get("metrics"), flag("metrics")),
                     fewshot_as_multiturn=given.get("fewshot_as_multiturn"), tool_parser=parser,
                     suite=suite.to_record() if suite is not None else None, budget_forcing=budget_forcing(given, flag),
                     series=validation.check_series(given.get("series"), given.get("step"), flag("series"),
                                                    flag("step")))


def _or(value, default):
    return default if value is None else value


def generation(st: dict, given: dict, flag) -> dict:
    """The suite's generation settings, then ``gen_kwargs``, lm-eval's and ``repeats``, checked."""
    gen = {**st.get("gen_kwargs", {}), **(given.get("gen_kwargs") or {})}
    validation.check_gen_overrides(gen, flag("gen_kwargs"))
    lm_gen = given.get("lm_eval_gen") or {}
    validation.check_gen_overrides({k: v for k, v in lm_gen.items() if k != "stop"}, flag("lm_eval_gen"))
    return validation.merge_repeats({**gen, **lm_gen}, given.get("repeats"), flag("repeats"))


def paths_and_options(names: list, suite, given: dict, flag, refuse_others: bool = True) -> tuple[dict, dict, dict]:
    """(data paths, few-shot paths, task options); ``refuse_others``: each may name only tasks of the run."""
    data = {t: str(p) for t, p in (given.get("data") or {}).items()}
    fewshot = {t: str(p) for t, p in (given.get("fewshot_data") or {}).items()}
    for key, named in (("data", data), ("fewshot_data", fewshot)):
        unknown = [t for t in named if t not in names] if refuse_others else []
        if unknown:
            raise ValueError(f"{flag(key)} names task(s) not being run: {', '.join(unknown)} "
                             f"(running: {', '.join(names)})")
    task_opts = {t.name: dict(t.task_args) for t in suite.tasks if t.task_args} if suite is not None else {}
    for t, opts in (given.get("task_args") or {}).items():
        if refuse_others and t not in names:
            raise ValueError(f"{flag('task_args')}: task {t!r} is not being run (running: {', '.join(names)})")
        task_opts.setdefault(t, {}).update(opts)
    if given.get("trust_remote_code"):
        for t in names:
            if t.startswith("lm-eval:"):
                task_opts.setdefault(t, {})["trust_remote_code"] = True
    validation.check_task_options(task_opts, flag("task_args"))
    return data, fewshot, task_opts


def appended_metrics(tasks: list, specs, flag: str = "--metric") -> list:
    """``--metric evaluate:NAME`` specs, checked and loaded before any model time is spent; they
    apply to the generation tasks of the run (none among them is an error)."""
    if not specs:
        return []
    from evalkit.scoring import hf_evaluate
    if not any(registry.get_task_class(t).output_type == "generate" for t in tasks):
        raise ValueError(f"{flag} applies to generation tasks; none of {', '.join(tasks)} is one")
    return hf_evaluate.prepare(specs)


def budget_forcing(given: dict, flag) -> Optional[dict]:
    """``thinking_budgets`` (and ``forced_answer_tokens``): the budget-forcing record entry."""
    if given.get("thinking_budgets") is None:
        if given.get("forced_answer_tokens") is not None:
            raise ValueError(f"{flag('forced_answer_tokens')} applies with {flag('thinking_budgets')}")
        return None
    from evalkit.run.budget_forcing import BudgetForcing
    return BudgetForcing.parse(given["thinking_budgets"], given.get("forced_answer_tokens"),
                               flag("thinking_budgets")).to_record()
