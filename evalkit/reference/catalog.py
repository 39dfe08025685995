"""``docs/reference/tasks.md``: every registered task and every shipped suite, grouped by the
leaderboard's task families, from the registry (``evalkit.reference.task_facts``), and how lm-eval's
catalog is listed and run."""
from __future__ import annotations

import json
from collections import defaultdict

from evalkit.reference.task_facts import OWN_RULE, TaskFacts, code, facts
from evalkit.run import suites
from evalkit.run.data_root import folder_of
from evalkit.taskapi import registry

INTRO = """\
# Task catalog

Every task `evalkit run --tasks NAME` takes, grouped by family (the leaderboard's), and every shipped
suite (`--suite NAME`). Generated from the task registry by `python scripts/gen_docs.py`: do not edit by
hand. `evalkit tasks` lists the same names with their one-line descriptions.

For each task:

- **metrics**: what it reports, ↑ higher is better, ↓ lower is better (every figure comes with a 95% CI);
- **data**: the hub dataset it reads by default; what `--data NAME=PATH` takes instead; its folder under
  `--data-root DIR` (a root of benchmark copies, e.g. `--data-root ../shared/data` reads `DIR/FOLDER`);
  the data's licence as the task declares it ("not declared" when it does not: check the source);
- **defaults**: few-shot examples and generation parameters (`--num-fewshot`, `--gen-kwargs` override them);
- **`--limit N`**: which N documents a run takes: the first N of the task, or the first N of each subtask
  for tasks made of subtasks (`bbh_cot` with `--limit 1` runs 27 documents, one per subtask);
- **options**: the keys `--task-args NAME:K=V` takes.
"""

LM_EVAL = """\
## lm-eval's catalog

With the lm-eval extra installed (`pip install 'evalkit-harness[lm-eval]'`), every task, group and tag of
lm-eval's own catalog runs through evalkit's engine as `lm-eval:NAME`: lm-eval's code builds the prompts,
filters and scores, evalkit answers the requests (any backend, cached, resumable) and adds the CIs.

```bash
evalkit tasks --lm-eval              # every name of lm-eval's catalog: task, group or tag
evalkit tasks --lm-eval 'mmlu_*'     # a glob, or a substring (hellaswag)
evalkit run --model hf:smollm2-135m --tasks lm-eval:hellaswag --limit 10
evalkit run --model hf:smollm2-135m --tasks lm-eval:mmlu_anatomy --data lm-eval:mmlu_anatomy=hub/mmlu
evalkit run --model hf:smollm2-135m --include-path my_yaml_tasks/ --tasks lm-eval:my_task
```

- A bare name that is not an evalkit task but lm-eval knows runs as `lm-eval:NAME`, with a note.
- `--limit N` takes the first N documents of each leaf task of a group (as lm-eval does).
- `--data lm-eval:NAME=DIR` reads the hub dataset's layout from a local folder (one file per split:
  `test.jsonl`, ...); `python -m evalkit.tasks.lm_eval_catalog.hub_layouts BENCH ROOT OUT` writes that
  layout from the benchmark copies under `ROOT` (`bbh`, `ifeval`, `gsm8k`, `mmlu`, ...).
- `--include-path DIR` runs a folder of lm-eval YAML task configs unchanged.
"""


def parent_of(name: str, cls, tasks: dict):
    """The registered task ``cls`` is a variant of (its nearest registered ancestor whose name starts
    its own), or None."""
    for base in cls.__mro__[1:]:
        pname = getattr(base, "name", None)
        if isinstance(pname, str) and tasks.get(pname) is base:
            return pname if name.startswith(pname + "_") else None
    return None


def family_of(name: str) -> str:
    from evalkit.dashboards.labels import task_family
    return task_family(name)


def task_section(f: TaskFacts, variants: list) -> list[str]:
    lines = [f"### `{f.name}`", "", f.description, "",
             f"- **metrics**: {f.metrics}",
             f"- **kind**: {code(f.output_type)}",
             f"- **data**: hub {f.hub}; `--data {f.name}=PATH`: {f.local}; `--data-root` folder {f.folder}",
             f"- **licence**: {f.licence}",
             f"- **defaults**: {f.fewshot}; generation {f.generation}",
             f"- **`--limit N`**: {f.limit}",
             f"- **options**: {f.options}"]
    if variants:
        lines += ["", f"{len(variants)} variants (subtasks, or the same benchmark on other data), each with the kind, licence, defaults and `--limit` "
                  f"rule above:", "", "| task | description | metrics | hub data | `--data-root` folder | options |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| `{v.name}` | {v.description.replace('|', '/')} | {v.metrics} | {v.hub} | {v.folder} | "
                  f"{v.options} |" for v in variants]
    return lines + [""]


def task_sections(tasks: dict, all_facts: dict) -> list[str]:
    """The families' sections: each task, its variants in its table."""
    variants = defaultdict(list)
    for name, cls in tasks.items():
        parent = parent_of(name, cls, tasks)
        if parent is not None and all_facts[parent].shared() == all_facts[name].shared():
            variants[parent].append(all_facts[name])
    listed = {v.name for vs in variants.values() for v in vs}
    families = defaultdict(list)
    for name in tasks:
        if name not in listed:
            families[family_of(name)].append(name)
    lines = ["## Tasks by family", ""]
    lines += [f"- [{fam}](#{anchor(fam)}): " + ", ".join(f"`{n}`" for n in names)
              for fam, names in sorted(families.items())]
    lines.append("")
    for fam, names in sorted(families.items()):
        lines += [f"## {fam}", ""]
        for name in names:
            lines += task_section(all_facts[name], variants.get(name, []))
    return lines


def anchor(title: str) -> str:
    """The anchor MkDocs gives a heading (lower case, spaces as dashes, other punctuation dropped)."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return "-".join(kept.split())


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in sorted(v.items())) + "}"
    return json.dumps(v)


def suite_section(name: str, limits: dict) -> list[str]:
    """``limits``: {task: its --limit rule} of the tasks whose rule is their own (per subtask, ...)."""
    s = suites.load_suite(name)
    settings = ", ".join(f"`{k} = {toml_value(v)}`" for k, v in sorted(s.settings.items())) or "none"
    native = [t.name for t in s.tasks if not t.name.startswith("lm-eval:")]
    offline = "add `--data-root DIR`" if native else "give each task `--data lm-eval:NAME=DIR`"
    own = [f"`{t}`: {limits[t].removeprefix(OWN_RULE).rstrip('.')}" for t in native if t in limits]
    lines = [f"### `{name}`", "", " ".join(s.description.split()) or "(no description)", "",
             f"- **run**: `evalkit run --model MODEL --suite {name}` (offline: {offline})",
             f"- **settings**: {settings} (flags given on the command line win)",
             f"- **summary**: {code(s.summary) if s.summary else 'none (each task reports its own figures)'}",
             "- **`--limit N`**: each member as the task alone: " + ("; ".join(own) + "; the others: " if own else "")
             + ("the first N docs" if native else "the first N docs of each leaf task (lm-eval's rule)"), "",
             "| task | `--data-root` folder | leaderboard-v2 benchmark | task options |", "| --- | --- | --- | --- |"]
    for t in s.tasks:
        folder = "—" if t.name.startswith("lm-eval:") else f"`{folder_of(t.name)}`"
        opts = ", ".join(f"`{k}={v}`" for k, v in sorted(t.task_args.items())) or "—"
        lines.append(f"| `{t.name}` | {folder} | {t.leaderboard_v2 or '—'} | {opts} |")
    return lines + [""]


def suite_sections(all_facts: dict) -> list[str]:
    names = suites.shipped()
    limits = {n: f.limit for n, f in all_facts.items() if f.limit.startswith(OWN_RULE)}
    lines = ["## Suites", "",
             "A suite is a list of tasks with the settings they run under: `evalkit tasks --suites` lists them; "
             "`--suite FILE.toml` runs your own (fields: `description`, `summary`, `apply_chat_template`, "
             "`fewshot_as_multiturn`, `num_fewshot`, `gen_kwargs`, `data_root` (relative to the file) and "
             "`[[task]]` tables with `name`, `leaderboard_v2`, `task_args`). lm-eval tasks (`lm-eval:NAME`) "
             "have no `--data-root` folder: give them `--data lm-eval:NAME=DIR`.", ""]
    for name in names:
        lines += suite_section(name, limits)
    return lines


def render() -> str:
    tasks = registry.all_tasks()
    all_facts = {n: facts(n, c) for n, c in tasks.items()}
    head = INTRO + f"\n{len(tasks)} tasks and {len(suites.shipped())} suites.\n\n"
    return head + "\n".join(suite_sections(all_facts) + task_sections(tasks, all_facts)) + "\n" + LM_EVAL
