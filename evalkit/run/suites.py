"""Named suites: a list of tasks with the settings they run under, shipped as TOML data
(``evalkit/run/suites/<name>.toml``) or a user's own file (``--suite path/to/suite.toml``).

A suite file::

    description = "what it is"
    summary = "leaderboard-v2"            # optional: the leaderboard's normalised scores and average
    apply_chat_template = true            # optional run settings, as the CLI flags (the flags win)
    fewshot_as_multiturn = true
    num_fewshot = 0
    data_root = "../shared/data"          # optional: each task's folder in a root of benchmark copies
                                          # (relative to this file; --data-root and --data win)
    gen_kwargs = {max_tokens = 1024}

    [[task]]
    name = "lm-eval:leaderboard_ifeval"   # any task name the run takes
    leaderboard_v2 = "ifeval"             # with summary = "leaderboard-v2": which benchmark it is
    task_args = {}                        # optional --task-args for it

A bad file stops the run with one line naming the file and the field.
"""
from __future__ import annotations

from evalkit.util import toml as tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from evalkit.scoring import leaderboard_v2

SHIPPED = Path(__file__).with_name("suites")
SUMMARIES = ("leaderboard-v2",)
RUN_SETTINGS = {"apply_chat_template": bool, "fewshot_as_multiturn": bool, "num_fewshot": int, "gen_kwargs": dict,
                "data_root": str}


class SuiteError(ValueError):
    pass


@dataclass(frozen=True)
class SuiteTask:
    name: str
    leaderboard_v2: Optional[str] = None
    task_args: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    name: str
    path: str
    description: str = ""
    tasks: tuple = ()
    summary: Optional[str] = None
    settings: dict = field(default_factory=dict)

    def task_names(self) -> list[str]:
        return [t.name for t in self.tasks]

    def benchmarks(self) -> dict[str, str]:
        """{task name: leaderboard-v2 benchmark} of the tasks that have one."""
        return {t.name: t.leaderboard_v2 for t in self.tasks if t.leaderboard_v2}

    def to_record(self) -> dict:
        return {"name": self.name, "path": self.path, "summary": self.summary, "tasks": self.task_names(),
                "benchmarks": self.benchmarks()}


def shipped() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


def load_suite(name_or_path: str) -> Suite:
    path = Path(name_or_path)
    if not path.suffix == ".toml":
        path = SHIPPED / f"{name_or_path}.toml"
        if not path.is_file():
            raise SuiteError(f"--suite {name_or_path}: no such suite (shipped: {', '.join(shipped())}; or give a "
                             ".toml file)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"{path}: no such suite file") from None
    except tomllib.TOMLDecodeError as e:
        raise SuiteError(f"{path}: not valid TOML: {e}") from None
    return _parse(data, path)


def _parse(data: dict, path: Path) -> Suite:
    known = {"description", "summary", "task", *RUN_SETTINGS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SuiteError(f"{path}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    summary = data.get("summary")
    if summary is not None and summary not in SUMMARIES:
        raise SuiteError(f"{path}: field 'summary' must be one of {', '.join(SUMMARIES)}, got {summary!r}")
    settings = {}
    for key, kind in RUN_SETTINGS.items():
        if key in data:
            if not isinstance(data[key], kind) or (kind is int and isinstance(data[key], bool)):
                raise SuiteError(f"{path}: field {key!r} must be {kind.__name__}, got {data[key]!r}")
            settings[key] = data[key]
    if "data_root" in settings:  # relative to the suite file, so the file works from any folder
        settings["data_root"] = str(path.parent / settings["data_root"])
    tasks = data.get("task")
    if not isinstance(tasks, list) or not tasks:
        raise SuiteError(f"{path}: field 'task' must be a list of [[task]] tables with a 'name'")
    out = []
    for i, t in enumerate(tasks):
        where = f"{path}: task[{i}]"
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not t["name"]:
            raise SuiteError(f"{where}: field 'name' must be a task name")
        extra = sorted(set(t) - {"name", "leaderboard_v2", "task_args"})
        if extra:
            raise SuiteError(f"{where}: unknown field {extra[0]!r} (known: name, leaderboard_v2, task_args)")
        bench = t.get("leaderboard_v2")
        if bench is not None and bench not in leaderboard_v2.KINDS:
            raise SuiteError(f"{where}: field 'leaderboard_v2' must be one of {', '.join(leaderboard_v2.KINDS)}, "
                             f"got {bench!r}")
        if not isinstance(t.get("task_args", {}), dict):
            raise SuiteError(f"{where}: field 'task_args' must be a table")
        out.append(SuiteTask(t["name"], bench, dict(t.get("task_args", {}))))
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise SuiteError(f"{path}: task {next(n for n in names if names.count(n) > 1)!r} is listed twice")
    if summary == "leaderboard-v2":
        kinds = [t.leaderboard_v2 for t in out if t.leaderboard_v2]
        if len(set(kinds)) != len(kinds):
            raise SuiteError(f"{path}: two tasks are the same leaderboard-v2 benchmark")
    return Suite(path.stem, str(path), str(data.get("description", "")), tuple(out), summary, settings)
