"""``evalkit run``: evaluate one model on tasks, print the summary table, write a run record."""
from __future__ import annotations

import argparse
import json
import math
import sys

from evalkit import sinks
from evalkit.run import roles, validation
from evalkit.backends import BACKENDS, make_backend, parse_model_args, split_spec
from evalkit.run.cache import NullCache, ResponseCache
from evalkit.records import Run, write_run
from evalkit.run.config_builder import CLI, build_config as build
from evalkit.run.runner import RunConfig, evaluate, load_tasks
from evalkit.run.suites import load_suite


def add_model_args(p: argparse.ArgumentParser, required=True, flag="--model"):
    p.add_argument(flag, required=required, metavar="BACKEND:MODEL",
                   help=f"backend prefix ({', '.join(BACKENDS)}) and a bundled name, local dir or hub id")
    p.add_argument("--model-args", default="", metavar="K=V,...",
                   help="backend options, e.g. dtype=float32,batch_size=auto,max_length=2048,device=cuda; "
                        "each backend's keys, values and defaults: evalkit models options hf|vllm|openai")


def add_task_args(p: argparse.ArgumentParser):
    p.add_argument("--tasks", default=None,
                   help="comma-separated task names or patterns (see `evalkit tasks`); lm-eval's tasks and groups as "
                        "lm-eval:NAME (see `evalkit tasks --lm-eval`; needs the lm-eval extra)")
    p.add_argument("--suite", default=None, metavar="NAME|FILE.toml",
                   help="a named suite (leaderboard-v2, ...: `evalkit tasks --suites`) or your own TOML file: its "
                        "tasks and settings (flags given here win), and its summary in the record")
    p.add_argument("--limit", type=limit_value, default=None, metavar="N|FRACTION",
                   help="only the first N docs of each task, or a fraction below 1 of each task's docs (0.1)")
    p.add_argument("--seed", type=int, default=1234, help="run seed (few-shot draws, sampling, bootstrap)")
    p.add_argument("--num-fewshot", type=int, default=None, help="override the tasks' few-shot count")
    p.add_argument("--apply-chat-template", action="store_true", help="render prompts with the chat template")
    p.add_argument("--system-prompt", default=None)
    p.add_argument("--tool-parser", default=None, metavar="NAME",
                   help="agent tasks with native tools: how tool calls are read from the model's text, named as "
                        "vLLM names its parsers (hermes, pythonic, ...; default: the server's own, or hermes where "
                        "evalkit renders the tools because the model's chat template ignores them)")
    p.add_argument("--include-path", action="append", default=[], metavar="DIR",
                   help="extra task files: evalkit .py task files, or a folder of lm-eval YAML task configs")
    p.add_argument("--data", action="append", default=[], metavar="TASK=PATH",
                   help="read TASK's data from a local file or folder in the benchmark's original format "
                        "(lm-eval:NAME=DIR: the hub dataset's layout, one file per split: test.jsonl, ...)")
    p.add_argument("--data-root", default=None, metavar="DIR",
                   help="read every task's data (a suite's members too) from its folder under DIR, a root of "
                        "benchmark copies such as ../shared/data (DIR/gsm8k, DIR/aime/qwq, ...: `evalkit tasks` "
                        "reference); --data TASK=PATH wins for its task; a task with no folder there reads its "
                        "usual source, with a note")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="let lm-eval tasks whose hub dataset ships loading code run it (refused otherwise)")
    p.add_argument("--fewshot-data", action="append", default=[], metavar="TASK=PATH",
                   help="read TASK's few-shot examples from this file (needed when --data names one file "
                        "for a task whose few-shot examples come from another split, e.g. gsm8k's train)")
    p.add_argument("--task-args", action="append", default=[], metavar="TASK:K=V,...", help="task options")
    p.add_argument("--gen-kwargs", default="", metavar="K=V,...",
                   help="generation overrides: max_tokens, temperature, top_p, n, seed, top_k, min_p, "
                        "repetition_penalty (lm-eval's --gen_kwargs keys: until, max_gen_toks, do_sample, ...)")
    p.add_argument("--repeats", type=int, default=None, metavar="K",
                   help="K sampled completions per problem (same as --gen-kwargs n=K): avg@K, pass@k, pass^k, "
                        "maj@K with CIs over problems; each sample cached alone, so a larger K reuses the first")
    p.add_argument("--shard", default=None, metavar="I/N", help="run only shard I of N (by doc id)")
    p.add_argument("--fewshot-as-multiturn", action="store_true", default=None,
                   help="with a chat template, each few-shot example is a user turn and an assistant turn "
                        "(the default with --apply-chat-template, as in lm-eval)")
    p.add_argument("--no-fewshot-as-multiturn", dest="fewshot_as_multiturn", action="store_false",
                   help="with a chat template, put the few-shot examples in the one user turn")
    p.add_argument("--lm-eval-gen", type=json.loads, default=None, help=argparse.SUPPRESS)
    p.add_argument("--metric", action="append", default=[], metavar="evaluate:NAME[:K=V,...]",
                   help="extra metric for the generation tasks: a Hugging Face evaluate metric "
                        "(e.g. evaluate:bertscore:lang=en, or a local metric script); repeatable")


def limit_value(text: str):
    """``--limit``: an integer >= 1, or a fraction in (0, 1) of each task's docs."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of docs or a fraction below 1") from None
    return x if 0 < x < 1 or x != int(x) else int(x)  # the range is checked with the other options


def parse_data_paths(items, flag: str = "--data") -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"{flag} {item!r}: expected TASK=PATH")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def parse_shard(text):
    if not text:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if not 0 <= i < n:
        raise ValueError(f"--shard {text!r}: need 0 <= I < N")
    return (i, n)


def build_config(args) -> RunConfig:
    """The run's config from the command line (``evalkit.run.config_builder``, flags spelled as typed)."""
    suite = load_suite(args.suite) if getattr(args, "suite", None) else None
    if not args.tasks and suite is None:
        raise ValueError("name the tasks to run: --tasks T1,T2 or --suite NAME")
    from evalkit.cli.options import check_limit
    check_limit(args.limit, "run")  # the shared rule (evalkit.cli.options); gate builds its args here too
    return build(
        [args.tasks] if args.tasks else [], CLI, suite, include_path=args.include_path, limit=args.limit,
        seed=args.seed, num_fewshot=args.num_fewshot, apply_chat_template=args.apply_chat_template or None,
        fewshot_as_multiturn=getattr(args, "fewshot_as_multiturn", None), system_prompt=args.system_prompt,
        data=parse_data_paths(args.data), data_root=getattr(args, "data_root", None),
        fewshot_data=parse_data_paths(getattr(args, "fewshot_data", []) or [], "--fewshot-data"),
        task_args=parse_task_args(args.task_args), trust_remote_code=getattr(args, "trust_remote_code", False),
        gen_kwargs=parse_model_args(args.gen_kwargs, "--gen-kwargs"), lm_eval_gen=getattr(args, "lm_eval_gen", None),
        repeats=getattr(args, "repeats", None), metrics=getattr(args, "metric", None),
        tool_parser=getattr(args, "tool_parser", None), shard=parse_shard(args.shard),
        tags=getattr(args, "tag", []), series=getattr(args, "series", None), step=getattr(args, "step", None))


def add_series_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--series", metavar="NAME", help="the training run this checkpoint belongs to (with --step): "
                                                     "the leaderboard's Series view draws each metric against the step")
    p.add_argument("--step", type=int, metavar="N", help="the checkpoint's training step (with --series)")


def parse_task_args(items) -> dict:
    """``--task-args TASK:K=V,...`` (repeatable): {task: options}."""
    out = {}
    for item in items:
        if ":" not in item:
            raise ValueError(f"--task-args {item!r}: expected TASK:K=V,...")
        t, kv = item.split(":", 1)
        out.setdefault(t, {}).update(parse_model_args(kv, f"--task-args {t}"))
    return out


def register(sub):
    p = sub.add_parser("run", help="evaluate a model on tasks",
                       description="Evaluate a model on tasks. lm-eval's command lines work too (`evalkit --model hf "
                                   "--model_args pretrained=X --tasks T --batch_size 8 --output_path out --log_samples`"
                                   "): underscore spellings, --model_args, --batch_size, --device, --output_path, "
                                   "--log_samples, --write_out, --gen_kwargs with lm-eval's keys; a flag that means "
                                   "something else stops with a message naming the difference.")
    add_model_args(p)
    add_task_args(p)
    p.add_argument("--output", default="results", help="results folder (a run record is written there)")
    p.add_argument("--write-out", action="store_true",
                   help="print the first prompts of each task and stop before the model loads")
    p.add_argument("--lm-eval-output", default=None, metavar="DIR",
                   help="also write lm-eval's results_*.json and samples files there (lm-eval's --output_path does)")
    p.add_argument("--no-output", action="store_true", help="do not write a run record")
    p.add_argument("--cache-dir", default=None, help="response cache folder (default ~/.cache/evalkit)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument("--tag", action="append", default=[], help="tag the run (shown on the leaderboard)")
    add_series_args(p)
    p.add_argument("--base-url", default=None, metavar="URL",
                   help="openai: backend server, e.g. http://127.0.0.1:8000/v1 (same as --model-args base_url=)")
    p.add_argument("--lora", default=None, metavar="NAME=PATH,...",
                   help="vllm: backend: evaluate each LoRA adapter in the one engine; one run record per adapter")
    p.add_argument("--reward-model", default=None, metavar="hf:PATH|vllm:PATH|vllm-server:URL",
                   help="score every sampled completion with this reward model and add best-of-N figures per "
                        "generation task (pass@1, maj@N, oracle pass@N, RM best-of-N over N=1,2,4,..., RM AUROC); "
                        "sample with --gen-kwargs n=N,temperature=T")
    p.add_argument("--reward-args", default="", metavar="K=V,...",
                   help="reward backend options (see `evalkit reward --help`), e.g. activation=sigmoid; "
                        "step_agg=min|last|product scores each completion from per-step rewards (a process "
                        "reward model; default min with pooling=step; product needs activation=sigmoid|softmax)")
    p.add_argument("--user-model", default=None, metavar="BACKEND:MODEL",
                   help="agent tasks with a simulated user (tau2_*): the model that plays the user, any --model "
                        "spec (default: the evaluated model plays it too); named in the record, cached on its own")
    p.add_argument("--user-model-args", default="", metavar="K=V,...",
                   help="backend options of --user-model, as --model-args")
    p.add_argument("--judge", default=None, metavar="BACKEND:MODEL",
                   help="a judge model for tasks that ask one about their answers (judged metrics: arena_hard_v2, "
                        "alpaca_eval, healthbench, writingbench, ...; tau2_*: the tasks' "
                        "natural-language assertions, as tau2-bench judges them), any --model spec; named in "
                        "the record, cached on its own")
    p.add_argument("--judge-args", default="", metavar="K=V,...", help="backend options of --judge, as --model-args")
    p.add_argument("--second-judge", default=None, metavar="BACKEND:MODEL",
                   help="a second judge asked the same as --judge: judged metrics record how often the two agree "
                        "(share and Cohen's kappa); the figures stay the first judge's")
    p.add_argument("--second-judge-args", default="", metavar="K=V,...", help="backend options of --second-judge")
    from evalkit.cli.reasoning_args import add_reasoning_args
    add_reasoning_args(p)
    sinks.add_sink_args(p)
    p.set_defaults(func=run)


def open_cache(args):
    if getattr(args, "no_cache", False):
        return NullCache()
    from pathlib import Path
    return ResponseCache(Path(args.cache_dir) / "responses.sqlite" if args.cache_dir else None)


def model_role(args, config: RunConfig) -> roles.ModelRole:
    """The evaluated model from ``--model`` and ``--model-args`` with the run's own flags folded in
    (``--base-url``, ``--lora``, the reasoning flags; trace markers go to ``config``), not yet checked
    against its backend (``--write-out`` needs no model)."""
    prefix, _ = split_spec(args.model)
    model_args = parse_model_args(args.model_args)
    validation.check_model_args(prefix, model_args)
    from evalkit.cli import reasoning_args
    reasoning_args.apply(args, config, model_args, prefix)  # trace markers -> config; template kwargs -> backend
    if getattr(args, "base_url", None):
        model_args["base_url"] = args.base_url
    if getattr(args, "lora", None):
        if prefix != "vllm":
            raise ValueError("--lora needs the vllm: backend (one engine serves every adapter)")
        model_args["lora"] = args.lora
    return roles.ModelRole("model", args.model, model_args)


def roles_of(args) -> tuple:
    """The run's simulated user, judge, second judge and reward model, each from its two flags
    (checked, not loaded)."""
    return (roles.ModelRole.of("simulated user", getattr(args, "user_model", None),
                               getattr(args, "user_model_args", ""), "--user-model", "--user-model-args"),
            roles.ModelRole.of("judge", getattr(args, "judge", None), getattr(args, "judge_args", ""),
                               "--judge", "--judge-args"),
            roles.ModelRole.of("second judge", getattr(args, "second_judge", None),
                               getattr(args, "second_judge_args", ""), "--second-judge", "--second-judge-args"),
            roles.RewardRole.of("reward", getattr(args, "reward_model", None), getattr(args, "reward_args", ""),
                                "--reward-model", "--reward-args"))


def run(args):
    split_spec(args.model)  # validate before loading anything heavy
    config = build_config(args)
    model = model_role(args, config)
    if not args.no_output:
        validation.check_output_dir(args.output)
    user, judge, second, reward = roles_of(args)
    reward_backend = reward.make()  # loads nothing: impossible settings fail here, before the data
    task_runs = load_tasks(config)  # data errors surface before the model loads
    from evalkit.run import judge_phase
    judge_phase.check(task_runs, judge.spec, second_spec=second.spec)
    if getattr(args, "write_out", False):
        return write_out(config, task_runs)
    outs = evaluate_views(args, config, task_runs, model, (user, judge, second), reward_backend)
    failed = sum(not report(args, run) for run in outs)
    sinks.after_run(args, [run.path for run in outs if run.path])
    return 2 if failed else 0


def evaluate_views(args, config: RunConfig, task_runs, model: roles.ModelRole, others: tuple,
                   reward_backend) -> list:
    """The runs of the model (with ``--lora``: one run per adapter, each its own model, all in one
    engine), with the simulated user, the judge and the second judge; every backend closed after."""
    cache = open_cache(args)
    backend, bound = None, []
    try:
        backend = make_backend(model.check().spec, model.args)  # the check after the cache opens: its errors first
        for role in others:
            bound.append(role.load())
        views = [(backend.for_adapter(n), {**model.args, "lora": f"{n}={backend.adapter_paths[n]}"})
                 for n in backend.adapters] if getattr(args, "lora", None) else [(backend, model.args)]
        user, judge, second = bound
        # the record is written after the table is printed: a record that cannot be written never costs the results
        return [evaluate(view, config, cache, None, model_spec=args.model, model_args=view_args, task_runs=task_runs,
                         reward_backend=reward_backend, user=user, judge=judge, second_judge=second)
                for view, view_args in views]
    finally:
        roles.close_all(backend, *bound, reward_backend)
        cache.close()


def report(args, run: Run) -> bool:
    """Print the run's tables and warnings and write its record; False when the record could not be written."""
    print(format_table(run))
    if run.suite and run.suite.get("leaderboard_v2"):
        print(format_suite(run.suite))
    budget_warnings(run, bool(getattr(args, "reasoning", False)))
    if run.config.get("budget_forcing"):
        from evalkit.run.budget_forcing import curve_lines
        print("\n".join(curve_lines(run)))
    if args.no_output:
        return True
    try:
        run.path = str(write_run(args.output, run, run.samples))
        print(f"\nrun record: {run.path}")
        if getattr(args, "lm_eval_output", None):
            from evalkit.lm_eval_io.exporter import export_run
            from evalkit.records import load_run
            print(f"lm-eval files: {export_run(load_run(run.path), args.lm_eval_output)}")
    except OSError as e:
        print(f"evalkit run: error: could not write the run record to {args.output}: {e.strerror or e}; "
              f"the answers are cached, so a rerun with a writable --output recomputes nothing", file=sys.stderr)
        return False
    return True


def format_suite(suite: dict) -> str:
    lines = [f"\nsuite {suite['name']}: Open LLM Leaderboard v2 normalised scores (0-100)"]
    for name, v in suite["leaderboard_v2"].items():
        lines.append(f"  {name:<10} {v['value']:7.2f}  [{v['ci_low']:.2f}, {v['ci_high']:.2f}]  n={v['n']}")
    if suite.get("missing"):
        lines.append(f"  not run: {', '.join(suite['missing'])} (no average without all six)")
    return "\n".join(lines)


def write_out(config: RunConfig, task_runs, n: int = 3) -> int:
    """``--write-out``: the first prompts of each task as the model would read them; no model."""
    ctx = config.context()
    if config.apply_chat_template:
        print("(chat template not rendered: it needs the model's tokenizer; the messages are shown)")
    for tr in task_runs:
        for doc in tr.docs[:n]:
            print(f"===== {tr.task.name} doc {doc.id} =====")
            print(json.dumps(tr.task.prompt_of(doc, ctx), indent=1, ensure_ascii=False)
                  if config.apply_chat_template else tr.task.prompt_of(doc, ctx))
            if doc.choices:
                print(f"----- choices: {doc.choices!r}  gold: {doc.gold!r}")
            elif doc.target is not None:
                print(f"----- target: {doc.target!r}")
    print(f"\n--write-out: {sum(len(tr.docs) for tr in task_runs)} docs planned; stopped before loading the model")
    return 0


def budget_warnings(run: Run, reasoning: bool = False) -> None:
    """One line per task whose budget shares exceed 5% (hit max_tokens, unclosed trace, no answer);
    under ``--reasoning`` the advice is its own budget flag."""
    from evalkit.scoring.budgets import MAX_TOKENS_ADVICE, REASONING_ADVICE, run_usage
    for task, t in run.tasks.items():
        for w in (t.budget or {}).get("warnings") or []:
            if reasoning:
                w = w.replace(MAX_TOKENS_ADVICE, REASONING_ADVICE)
            print(f"evalkit run: warning: {task}: {w}", file=sys.stderr)
    usage = run_usage(run.tasks)
    if usage:
        print("token usage: " + ", ".join(f"{k} {v}" for k, v in sorted(usage.items())))


def _fmt(x, digits=4):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}f}"


def format_table(run) -> str:
    """The run's metric table (value, 95% CI, n) and a line of engine counts; ``run`` is the typed
    ``Run`` (a run.json object is read into one)."""
    if not isinstance(run, Run):
        run = Run.from_dict(run)
    rows = [("task", "metric", "value", "± 95% CI", "n")]
    for task, t in run.tasks.items():
        for metric, m in t.metrics.items():
            ci = f"[{_fmt(m.ci_low)}, {_fmt(m.ci_high)}]" if m.ci_low is not None else "-"
            rows.append((task, metric, _fmt(m.value), ci, str(m.n)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    eng = run.engine  # empty when nothing went to a model (a retriever without a reranker)
    counts = (f"requests: {eng.get('requested', 0)}, unique {eng.get('unique', 0)}, cached {eng.get('cached', 0)}, "
              f"computed {eng.get('computed', 0)}; ") if eng else ""
    lines.append(f"\nmodel {run.model.name} ({run.model.backend}); {counts}{run.timings['total_s']:.1f}s")
    return "\n".join(lines)
