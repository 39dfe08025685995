"""What a run is asked to do (``RunConfig``), encoded into and decoded from the run record in one place.

``RunConfig.to_record()`` is the record's ``config`` block and ``RunConfig.from_record()`` reads it
back (records of every schema version); ``RunConfig.context()`` is the ``RunContext`` tasks see.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from evalkit.taskapi.task import RunContext


@dataclass
class RunConfig:
    tasks: list
    limit: Optional[int] = None
    seed: int = 1234
    num_fewshot: Optional[int] = None
    apply_chat_template: bool = False
    system_prompt: Optional[str] = None
    data_paths: dict = field(default_factory=dict)
    task_options: dict = field(default_factory=dict)
    gen_overrides: dict = field(default_factory=dict)
    tags: list = field(default_factory=list)
    shard: Optional[tuple] = None  # (index, count)
    #: metrics the run appends to every generation task (``--metric evaluate:NAME``)
    metrics: list = field(default_factory=list)
    fewshot_paths: dict = field(default_factory=dict)  # task -> local file of its few-shot examples
    fewshot_as_multiturn: Optional[bool] = None  # None: multi-turn few-shot with a chat template
    #: how reasoning traces are separated (evalkit.scoring.thinking options: think_start, think_end, ...)
    thinking: dict = field(default_factory=dict)
    #: how tool calls are read from a model's text in agent tasks (``--tool-parser``; None: the default)
    tool_parser: Optional[str] = None
    #: with --suite: the suite's record entry (``evalkit.run.suites.Suite.to_record``)
    suite: Optional[dict] = None
    #: --thinking-budgets: {"budgets": [...], "answer_tokens": N} (``evalkit.run.budget_forcing``)
    budget_forcing: Optional[dict] = None
    #: --series NAME --step N: a checkpoint of a training run ({"name": ..., "step": ...}), drawn by the
    #: leaderboard's Series view as a metric-against-step curve
    series: Optional[dict] = None

    def context(self, render_chat: Optional[Callable[[list], str]] = None,
                tokenize: Optional[Callable[[str], list]] = None, max_length: Optional[int] = None) -> RunContext:
        """The run as tasks see it when they build prompts and requests."""
        return RunContext(seed=self.seed, num_fewshot=self.num_fewshot, apply_chat_template=self.apply_chat_template,
                          system_prompt=self.system_prompt, gen_overrides=self.gen_overrides, render_chat=render_chat,
                          fewshot_as_multiturn=self.fewshot_as_multiturn, tool_parser=self.tool_parser,
                          tokenize=tokenize, max_length=max_length)

    def to_record(self) -> dict:
        return {"tasks": list(self.tasks), "limit": self.limit, "seed": self.seed, "num_fewshot": self.num_fewshot,
                "apply_chat_template": self.apply_chat_template, "system_prompt": self.system_prompt,
                "gen_overrides": self.gen_overrides, "shard": list(self.shard) if self.shard else None,
                "tags": self.tags, "data_paths": self.data_paths, "task_options": self.task_options,
                "metrics": list(self.metrics),
                **({"fewshot_paths": self.fewshot_paths} if self.fewshot_paths else {}),
                # resolved whenever a chat template is on (None means multi-turn), so a record says what ran
                **({"fewshot_as_multiturn": self.fewshot_as_multiturn is not False} if self.apply_chat_template
                   else {"fewshot_as_multiturn": self.fewshot_as_multiturn} if self.fewshot_as_multiturn is not None
                   else {}),
                **({"thinking": self.thinking} if self.thinking else {}),
                **({"tool_parser": self.tool_parser} if self.tool_parser else {}),
                **({"suite": self.suite} if self.suite else {}),
                **({"budget_forcing": self.budget_forcing} if self.budget_forcing else {}),
                **({"series": self.series} if self.series else {})}

    @classmethod
    def from_record(cls, cfg: dict) -> "RunConfig":
        """The config block of a record. Schema-1 records carried ``--metric`` specs inside each
        generation task's options (``metrics``); they come back as the run's ``metrics``."""
        options = {t: dict(o or {}) for t, o in (cfg.get("task_options") or {}).items()}
        metrics = list(cfg.get("metrics") or [])
        for o in options.values():
            for spec in o.pop("metrics", None) or []:
                if spec not in metrics:
                    metrics.append(spec)
        options = {t: o for t, o in options.items() if o}
        return cls(tasks=list(cfg.get("tasks") or []), limit=cfg.get("limit"), seed=cfg.get("seed", 1234),
                   num_fewshot=cfg.get("num_fewshot"), apply_chat_template=bool(cfg.get("apply_chat_template")),
                   system_prompt=cfg.get("system_prompt"), data_paths=dict(cfg.get("data_paths") or {}),
                   task_options=options, gen_overrides=dict(cfg.get("gen_overrides") or {}),
                   tags=list(cfg.get("tags") or []), shard=tuple(cfg["shard"]) if cfg.get("shard") else None,
                   metrics=metrics, fewshot_paths=dict(cfg.get("fewshot_paths") or {}),
                   # a chat record without the key predates multi-turn few-shot: its prompts were one turn
                   fewshot_as_multiturn=cfg.get("fewshot_as_multiturn",
                                                False if cfg.get("apply_chat_template") else None),
                   thinking=dict(cfg.get("thinking") or {}), tool_parser=cfg.get("tool_parser"),
                   suite=cfg.get("suite"), budget_forcing=cfg.get("budget_forcing"), series=cfg.get("series"))
