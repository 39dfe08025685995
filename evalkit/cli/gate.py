"""``evalkit gate --config evalkit-gate.toml --candidate BACKEND:MODEL``: the pre-merge regression gate.

Reads a small TOML config, evaluates the candidate with exactly the baseline's settings (tasks,
limit, seed, few-shot, chat template, data, task options, generation settings), writes its run
record, compares it with the baseline and exits 0 (no regression), 1 (regression) or 2 (error).

The baseline is either a pinned run record (``baseline = "results/<run-id>"``, or a folder holding one
run: never rerun; ``--baseline`` on the command line needs no config) or a
model (``baseline_model = "hf:..."``) evaluated through the response cache first, so an unchanged
baseline costs no model calls. Relative paths in the config are relative to the config file.
See docs/comparing-and-gating.md for the format.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from evalkit.taskapi import registry
from evalkit.backends import make_backend, parse_model_args, split_spec
from evalkit.run.cache import NullCache, ResponseCache
from evalkit.cli import EvalkitError
from evalkit.cli.compare import add_compare_args, emit, extra_reports, options_from
from evalkit.cli.gate_inputs import check_data_source, run_folder
from evalkit.compare import compare_runs
from evalkit.compare.report import FORMATS
from evalkit.records import load_run
from evalkit.run.config_builder import PYTHON, build_config
from evalkit.run.roles import ModelRole
from evalkit.run.runner import RunConfig, evaluate

TOP_KEYS = {"baseline", "baseline_model", "baseline_model_args", "tasks", "limit", "seed", "num_fewshot",
            "apply_chat_template", "system_prompt", "include_path", "data", "fewshot_data", "task_args", "gen_kwargs",
            "output", "cache_dir", "candidate", "compare", "shard", "suite"}
CANDIDATE_KEYS = {"model", "model_args", "gen_kwargs", "run"}
GEN_KEYS = {"max_tokens", "temperature", "top_p", "n", "seed", "top_k", "min_p", "repetition_penalty"}  # as run's


def load_config(path: str) -> dict:
    from evalkit.util import toml as tomllib
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--config {path}: no such file")
    try:
        cfg = tomllib.loads(p.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        line = p.read_bytes()[:e.start].count(b"\n") + 1
        raise EvalkitError(f"{path}:{line}: not UTF-8 text; the gate config must be a TOML file") from None
    except tomllib.TOMLDecodeError as e:
        raise EvalkitError(f"{path}: invalid TOML: {e}") from None
    unknown = set(cfg) - TOP_KEYS
    if unknown:
        raise EvalkitError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(TOP_KEYS))}")
    unknown = set(cfg.get("candidate", {})) - CANDIDATE_KEYS
    if unknown:
        raise EvalkitError(f"{path}: unknown [candidate] key(s) {', '.join(sorted(unknown))}")
    check_types(cfg, path)
    cfg["_dir"] = p.resolve().parent
    return cfg


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _strs(v) -> bool:
    return isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))


def _table_of(check):
    return lambda v: isinstance(v, dict) and all(check(x) for x in v.values())


_KV = (lambda v: isinstance(v, (str, dict)), "a string K=V,... or a table")
TYPES = {  # key: (check, what it must be)
    "baseline": (lambda v: isinstance(v, str), "a string (a run folder)"),
    "baseline_model": (lambda v: isinstance(v, str), "a string BACKEND:MODEL"),
    "baseline_model_args": _KV, "gen_kwargs": _KV,
    "tasks": (_strs, "a string or a list of strings"),
    "suite": (lambda v: isinstance(v, str), "a string (a suite name, or a .toml file)"),
    "limit": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "seed": (_int, "an integer"),
    "num_fewshot": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "apply_chat_template": (lambda v: isinstance(v, bool), "true or false"),
    "system_prompt": (lambda v: isinstance(v, str), "a string"),
    "include_path": (_strs, "a string or a list of strings"),
    "data": (_table_of(lambda x: isinstance(x, str)), "a table TASK = PATH"),
    "fewshot_data": (_table_of(lambda x: isinstance(x, str)), "a table TASK = PATH (as --fewshot-data)"),
    "task_args": (_table_of(lambda x: isinstance(x, (str, dict))), "a table TASK = \"K=V,...\" (or a table)"),
    "output": (lambda v: isinstance(v, str), "a string (a folder)"),
    "cache_dir": (lambda v: isinstance(v, str), "a string (a folder)"),
    "candidate": (lambda v: isinstance(v, dict), "a table"),
    "compare": (lambda v: isinstance(v, dict), "a table"),
    "shard": (lambda v: isinstance(v, list) and len(v) == 2 and all(_int(x) for x in v) and 0 <= v[0] < v[1],
              "[I, N] with 0 <= I < N"),
}
CANDIDATE_TYPES = {"model": (lambda v: isinstance(v, str), "a string BACKEND:MODEL"), "model_args": _KV,
                   "gen_kwargs": _KV}
COMPARE_TYPES = {
    "alpha": (lambda v: _num(v) and 0 < v < 1, "a number between 0 and 1 (e.g. 0.05)"),
    "margin": (lambda v: _num(v) and v >= 0, "a number of points >= 0"),
    "margins": (_table_of(_num), "a table \"TASK[:METRIC]\" = points"),
    "primary": (_strs, "a string or a list of TASK:METRIC strings"),
    "tasks": (_strs, "a string or a list of strings"),
    "correction": (lambda v: isinstance(v, str), "a string"),
    "replicates": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "corpus_replicates": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "seed": (_int, "an integer"), "examples": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    "power": (lambda v: _num(v) and 0 < v < 1, "a number between 0 and 1"),
    "report": (lambda v: isinstance(v, str), "a string (a file)"),
    "format": (lambda v: isinstance(v, str), "a string"),
    **{k: (lambda v: isinstance(v, bool), "true or false")
       for k in ("allow_prompt_change", "allow_data_change", "mid_p", "bootstrap", "force_bootstrap")},
}


def check_types(cfg: dict, path: str) -> None:
    """Every value of the config has the right type and range, named by file and key, before
    anything is loaded or run (values of tables other engineers extend pass when unknown here)."""
    from evalkit.run import validation

    for table, types, where in ((cfg, TYPES, ""), (cfg.get("candidate") or {}, CANDIDATE_TYPES, "[candidate] "),
                                (cfg.get("compare") or {}, COMPARE_TYPES, "[compare] ")):
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            if key in types and not types[key][0](value):
                raise EvalkitError(f"{path}: {where}{key} = {value!r}: expected {types[key][1]}")
    try:
        for key, table in (("gen_kwargs", cfg), ("gen_kwargs", cfg.get("candidate") or {})):
            if key in table:
                validation.check_gen_overrides(_kv(table[key]), flag="gen_kwargs")
        for key in ("baseline_model",):
            if key in cfg:
                split_spec(cfg[key])
        cand = cfg.get("candidate") or {}
        if "model" in cand:
            split_spec(cand["model"])
        if "num_fewshot" in cfg:
            validation.check_num_fewshot(cfg["num_fewshot"], "num_fewshot")
    except ValueError as e:
        raise EvalkitError(f"{path}: {e}") from None


def _path(cfg: dict, value) -> str:
    p = Path(str(value)).expanduser()
    return str(p if p.is_absolute() else cfg["_dir"] / p)


def _kv(value) -> dict:
    return dict(value) if isinstance(value, dict) else parse_model_args(value or "")


def check_primary(baseline, opts, path: str) -> None:
    """Every ``primary`` pattern names a task:metric of the baseline, before the candidate is evaluated."""
    import fnmatch
    if not opts.primary:
        return
    have = [f"{t}:{m}" for t, e in baseline.tasks.items() if opts.tasks is None or t in opts.tasks for m in e.metrics]
    for p in opts.primary:
        pattern = p if ":" in p else f"*:{p}"
        if not any(fnmatch.fnmatchcase(h, pattern) for h in have):
            raise EvalkitError(f"{path}: [compare] primary {p!r} matches no task:metric of the baseline "
                               f"(have: {', '.join(have[:20])})")


def config_from_record(rec, cfg: dict) -> RunConfig:
    """The baseline record's settings, so the candidate sees exactly the same docs and prompts."""
    rc = rec.run.config
    tasks = list(cfg.get("tasks") or rc.get("tasks") or list(rec.run.tasks))
    missing = [t for t in tasks if t not in rec.run.tasks]
    if missing:
        raise EvalkitError(f"the baseline record {rec.path} has no task {', '.join(missing)}")
    if "limit" in cfg and cfg["limit"] != rc.get("limit"):
        raise EvalkitError(f"config limit {cfg['limit']} differs from the baseline record's ({rc.get('limit')}); "
                           f"the candidate must see the same docs: drop `limit` or re-pin the baseline")
    data_over = {**{k: _path(cfg, v) for k, v in cfg.get("data", {}).items()}, **cfg.get("_cli_data", {})}
    data, task_opts = {}, {}
    for t in tasks:
        td = rec.run.tasks[t]
        hub = registry.get_task_class(t).dataset.hub_path
        src = td.data_source
        if t in data_over:
            data[t] = data_over[t]
        elif src and src != hub:
            if cfg.get("_evaluates", True):   # the candidate will read it (a saved candidate reads nothing)
                check_data_source(t, src, rec.path, f"--data {t}=PATH or [data] {t} = \"PATH\" in the gate "
                                                    f"config (relative to the config file)")
            data[t] = src
        opts = td.config.get("options") or {}
        if opts:
            task_opts[t] = dict(opts)
    # the baseline's own few-shot files (--fewshot-data) unless the config points elsewhere
    fewshot = {t: p for t, p in (rc.get("fewshot_paths") or {}).items() if t in tasks}
    fewshot.update({k: _path(cfg, v) for k, v in cfg.get("fewshot_data", {}).items()})
    gen = dict(rc.get("gen_overrides") or {})
    hidden = [k for k, v in gen.items() if v == "<redacted>"]
    if hidden:
        raise EvalkitError(f"the baseline record {rec.path} has its {', '.join(hidden)} setting redacted (written by an "
                           f"older evalkit); re-run the baseline, or pass the value with --gen-kwargs")
    return RunConfig.from_record({**rc, "tasks": tasks, "data_paths": data, "task_options": task_opts,
                                  "gen_overrides": gen, "fewshot_paths": fewshot, "tags": ["gate"]})


def config_from_toml(cfg: dict) -> RunConfig:
    """Settings for a ``baseline_model`` gate, where no record pins them; ``suite`` adds its tasks
    and settings (the config's own win) and its summary to both runs."""
    suite = None
    if cfg.get("suite"):
        from evalkit.run.suites import load_suite
        name = cfg["suite"]
        suite = load_suite(_path(cfg, name) if name.endswith(".toml") else name)
    if not cfg.get("tasks") and suite is None:
        raise EvalkitError("with baseline_model the config must list `tasks` (or name a `suite`)")
    listed = cfg.get("tasks") or []
    return build_config(listed if isinstance(listed, list) else [listed], PYTHON, suite, tags=["gate"],
                        **{k: cfg.get(k) for k in ("limit", "seed", "num_fewshot", "apply_chat_template",
                                                   "system_prompt", "shard")},
                        data={**{k: _path(cfg, v) for k, v in cfg.get("data", {}).items()}, **cfg.get("_cli_data", {})},
                        fewshot_data={k: _path(cfg, v) for k, v in cfg.get("fewshot_data", {}).items()},
                        task_args={k: _kv(v) for k, v in cfg.get("task_args", {}).items()},
                        gen_kwargs=_kv(cfg.get("gen_kwargs")))


def model_role(role: str, spec: Optional[str], model_args, spec_flag: str, args_flag: str) -> ModelRole:
    """A model the gate evaluates, checked before any model loads (its trace markers are the run's,
    not the backend's); options without the model are refused."""
    from evalkit.scoring.thinking import pop_options
    model_args = _kv(model_args)
    pop_options(model_args)
    return ModelRole.of(role, spec, model_args, spec_flag, args_flag)


def run_model(spec: str, model_args: dict, config: RunConfig, cache, output: str) -> str:
    from evalkit.scoring.thinking import pop_options
    model_args = dict(model_args)
    thinking = pop_options(model_args)   # trace markers are the run's, not the backend's
    if thinking:
        config.thinking = {**config.thinking, **thinking}
    backend = make_backend(spec, model_args)
    try:
        run = evaluate(backend, config, cache, output, model_spec=spec, model_args=model_args,
                       progress=True)  # a bar on a terminal, progress lines in CI logs
    finally:
        backend.close()
    eng = run.engine or {}
    print(f"gate: evaluated {spec}: {eng.get('unique', 0)} requests, {eng.get('cached', 0)} from cache, "
          f"{eng.get('computed', 0)} computed -> {run.path}", file=sys.stderr)
    return run.path


def register(sub):
    p = sub.add_parser("gate", help="pre-merge regression gate: run the candidate like the baseline, then compare",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=None,
                   help="gate config (TOML), see docs/comparing-and-gating.md; optional with --baseline")
    p.add_argument("--candidate", default=None, metavar="BACKEND:MODEL", help="the model to gate (or [candidate] model)")
    p.add_argument("--candidate-run", default=None, metavar="RUN_DIR",
                   help="a saved candidate run record: compare it instead of evaluating a model (or [candidate] run)")
    p.add_argument("--candidate-args", default=None, metavar="K=V,...", help="backend options for the candidate")
    p.add_argument("--gen-kwargs", default="", metavar="K=V,...",
                   help="candidate generation overrides on top of the baseline's (changes what is gated!)")
    p.add_argument("--baseline", default=None,
                   help="baseline run folder, or a folder holding one run (overrides the config's)")
    p.add_argument("--data", action="append", default=[], metavar="TASK=PATH",
                   help="read TASK's data from PATH (over the baseline record's and the config's)")
    p.add_argument("--output", default=None, help="results folder for new run records (default: config or results)")
    p.add_argument("--cache-dir", default=None, help="response cache folder")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument("--include-path", action="append", default=[], metavar="DIR", help="extra task files")
    add_compare_args(p, defaults=False)
    p.set_defaults(func=run)


def run(args) -> int:
    if not args.config and not args.baseline:
        raise EvalkitError("no baseline: pass --baseline RUN_DIR (and --candidate or --candidate-run), "
                           "or --config evalkit-gate.toml")
    cfg = load_config(args.config) if args.config else {"_dir": Path.cwd()}
    from evalkit.cli.run import parse_data_paths
    cfg["_cli_data"] = parse_data_paths(args.data)
    where = args.config or "evalkit gate"
    for inc in [_path(cfg, x) for x in cfg.get("include_path", [])] + list(args.include_path):
        registry.include_path(inc)
    section = dict(cfg.get("compare", {}))   # validated before any model is loaded
    fmt = args.format or section.get("format", "text")
    if fmt not in FORMATS:
        raise EvalkitError(f"[compare] format {fmt!r}: allowed {', '.join(FORMATS)}")
    report = args.report or (_path(cfg, section["report"]) if section.get("report") else None)
    try:
        opts = options_from(args, section)
    except ValueError as e:
        raise EvalkitError(f"{where}: [compare] {e}") from None
    model, saved = candidate_of(args, cfg)
    from evalkit.run import validation
    output = args.output or (_path(cfg, cfg["output"]) if cfg.get("output") else "results")
    validation.check_output_dir(output, "--output / output")
    cache_dir = args.cache_dir or (_path(cfg, cfg["cache_dir"]) if cfg.get("cache_dir") else None)
    cfg["_evaluates"] = not saved
    no_model = saved and (args.baseline or cfg.get("baseline"))   # nothing to evaluate: no cache needed
    cache = (NullCache() if args.no_cache or no_model
             else ResponseCache(Path(cache_dir) / "responses.sqlite" if cache_dir else None))
    try:
        baseline, config = baseline_of(args, cfg, where, cache, output)
        check_primary(load_run(baseline), opts, where)
        config.gen_overrides = {**config.gen_overrides, **candidate_gen(args, cfg.get("candidate", {}))}
        # a saved record: compare's alignment checks data and prompts
        candidate = str(load_run(saved).path) if saved else run_model(*model, config, cache, output)
    finally:
        cache.close()
    if opts.tasks is None:
        opts.tasks = list(config.tasks)
    comparison = compare_runs(baseline, candidate, opts)
    emit(comparison, fmt, report, extra_reports(args))
    return comparison.exit_code


def candidate_of(args, cfg: dict) -> tuple:
    """((spec, model args), None) for a candidate model, checked before any model loads, or
    (None, run folder) for a saved candidate run."""
    cand = cfg.get("candidate", {})
    spec = args.candidate or cand.get("model")
    if args.candidate and args.candidate_run:
        raise EvalkitError("pass either --candidate (evaluate a model) or --candidate-run (a saved run), not both")
    saved = args.candidate_run or (_path(cfg, cand["run"]) if cand.get("run") and not args.candidate else None)
    saved = run_folder(saved, "candidate run") if saved else None
    if not spec and not saved:
        raise EvalkitError("no candidate: pass --candidate BACKEND:MODEL, --candidate-run RUN_DIR, "
                           "or set [candidate] model / run")
    if saved:
        if args.candidate_args is not None:
            raise EvalkitError("--candidate-args given with a saved candidate run: its options are the run's; "
                               "drop --candidate-args, or evaluate a model with --candidate")
        return None, saved
    given = args.candidate_args is not None
    model_args = parse_model_args(args.candidate_args, "--candidate-args") if given else _kv(cand.get("model_args"))
    model_role("candidate", spec, model_args, "--candidate" if args.candidate else "[candidate] model",
               "--candidate-args" if given else "[candidate] model_args")
    return (spec, model_args), None


def baseline_of(args, cfg: dict, where: str, cache, output: str) -> tuple[str, RunConfig]:
    """The baseline run folder and the run config the candidate is evaluated with: a pinned record's
    settings, or the config's for a ``baseline_model`` (evaluated here, through the cache)."""
    baseline = args.baseline or (_path(cfg, cfg["baseline"]) if cfg.get("baseline") else None)
    if baseline:
        baseline = run_folder(baseline, "--baseline" if args.baseline else f"{where}: baseline")
        return baseline, config_from_record(load_run(baseline), cfg)
    role = model_role("baseline", cfg.get("baseline_model"), cfg.get("baseline_model_args"), "baseline_model",
                      "baseline_model_args")
    if not role.given:
        raise EvalkitError("the config needs `baseline` (a run folder) or `baseline_model`")
    config = config_from_toml(cfg)
    return run_model(role.spec, _kv(cfg.get("baseline_model_args")), config, cache, output), config


def candidate_gen(args, cand: dict) -> dict:
    """The candidate's generation overrides on top of the baseline's (``--gen-kwargs``, [candidate] gen_kwargs)."""
    extra_gen = {**_kv(cand.get("gen_kwargs")), **parse_model_args(args.gen_kwargs)}
    bad = set(extra_gen) - GEN_KEYS
    if bad:
        raise EvalkitError(f"candidate gen_kwargs: unknown {', '.join(sorted(bad))}; allowed: {', '.join(sorted(GEN_KEYS))}")
    return extra_gen
