"""The verifier core: (gold, completion) -> the task metric's value, the extracted answer, a reason.

``Verifier("gsm8k")`` wraps the task's own scoring (``evalkit.rl.bridge``): the reward of a
completion is the value the evaluation's metric gives it (GSM8K ``exact_match_numeric``, MATH
``math_verify``, MMLU/GPQA ``acc`` of the chain-of-thought variants, HumanEval/MBPP ``pass@1``),
after the guards of ``evalkit.rl.guards``. Math checks run in the task's worker processes
(``evalkit.scoring.math_equivalence``) and code in one long-lived ``evalkit.sandbox.Sandbox`` per
verifier, so a verifier may be called from any thread, from several at once, and from asyncio
(``averify_batch``): nothing depends on ``signal.alarm`` in the caller.
"""
from __future__ import annotations

import asyncio
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence

from evalkit.taskapi import registry
from evalkit.rl import bridge, guards
from evalkit.rl.gold import DocBuilder, GoldError
from evalkit.rl.version import verifier_hash


@dataclass(frozen=True)
class Verdict:
    reward: Optional[float]   # None: the gold is unusable (skip the item)
    metric: Optional[float]   # the task metric's value (None when a guard refused before scoring)
    extracted: Any
    reason: str
    metrics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class Verifier:
    def __init__(self, task: str, *, metric: Optional[str] = None, strip_think: bool = False,
                 use_guards: bool = True, max_chars: int = guards.DEFAULT_MAX_CHARS,
                 max_boxed: int = guards.DEFAULT_MAX_BOXED, chat: bool = False, seed: int = 1234,
                 sandbox_workers: int = 2, **task_options):
        if task not in bridge.SCORING_TASK:
            raise ValueError(f"evalkit.rl verifies {', '.join(sorted(bridge.SCORING_TASK))}; got task {task!r}")
        self.name = task
        self.scoring_task = bridge.SCORING_TASK[task]
        self.kind = bridge.KIND[self.scoring_task]
        self.metric = metric or bridge.PRIMARY_METRIC[self.scoring_task]
        self.strip_think, self.use_guards = bool(strip_think), bool(use_guards)
        self.max_chars, self.max_boxed = int(max_chars), int(max_boxed)
        self.chat, self.seed, self.sandbox_workers = bool(chat), int(seed), int(sandbox_workers)
        self.task_options = task_options
        self.task = registry.get_task_class(self.scoring_task)(**task_options)
        bridge.configure(self.task, self.metric)
        self.docs = DocBuilder(self.task, self.scoring_task)
        self.ctx = bridge.scoring_context(self.seed, self.chat)
        self._sandbox_lock = threading.Lock()
        self.version_hash = verifier_hash(task)

    # ---- what adapters log
    @property
    def options(self) -> dict:
        return {"task": self.name, "metric": self.metric, "strip_think": self.strip_think,
                "guards": self.use_guards, "max_chars": self.max_chars, "max_boxed": self.max_boxed,
                "chat": self.chat, "seed": self.seed, "task_options": self.task_options}

    def certificate(self) -> dict:
        return {"verifier_hash": self.version_hash, "verifier_options": self.options}

    # ---- scoring
    def verify(self, gold: Any, completion: Optional[str]) -> Verdict:
        return self.verify_batch([gold], [completion])[0]

    def verify_batch(self, golds: Sequence[Any], completions: Sequence[Optional[str]]) -> list[Verdict]:
        if len(golds) != len(completions):
            raise ValueError(f"{len(golds)} golds for {len(completions)} completions")
        out: list[Optional[Verdict]] = [None] * len(golds)
        todo, docs, texts = [], [], []
        for i, (gold, text) in enumerate(zip(golds, completions)):
            try:
                doc = self.docs.doc(gold)
            except GoldError as e:
                out[i] = Verdict(None, None, None, f"unusable gold: {e}")
                continue
            if not isinstance(text, str):
                out[i] = Verdict(0.0, None, None, "no completion text")
                continue
            if self.strip_think:
                text = guards.strip_think(text)
            why = guards.refusal(self.scoring_task, self.kind, text, self.max_chars, self.max_boxed) \
                if self.use_guards else None
            if why:
                out[i] = Verdict(0.0, None, None, why)
                continue
            todo.append(i)
            docs.append(doc)
            texts.append(text)
        if todo:
            self._ensure_sandbox()
            for i, item in zip(todo, bridge.score_with_task(self.task, docs, texts, self.ctx)):
                if self.metric not in item["metrics"]:
                    raise ValueError(f"task {self.scoring_task} has no metric {self.metric!r} "
                                     f"(it has {', '.join(item['metrics'])})")
                value = float(item["metrics"][self.metric])
                out[i] = Verdict(value, value, item["extracted"], bridge.reason_of(self.kind, value, item),
                                 item["metrics"])
        return out  # type: ignore[return-value]

    async def averify_batch(self, golds, completions) -> list[Verdict]:
        """The same verdicts without blocking the event loop (worker processes and the sandbox do the work)."""
        return await asyncio.to_thread(self.verify_batch, golds, completions)

    def rewards(self, golds, completions) -> list[Optional[float]]:
        return [v.reward for v in self.verify_batch(golds, completions)]

    # ---- resources
    def _ensure_sandbox(self) -> None:
        if self.kind != "code" or getattr(self.task, "sandbox", None) is not None:
            return
        from evalkit.sandbox import Sandbox
        with self._sandbox_lock:
            if self.task.sandbox is None:
                self.task.sandbox = Sandbox(workers=self.sandbox_workers, timeout=self.task.timeout)

    def close(self) -> None:
        sb = getattr(self.task, "sandbox", None)
        if sb is not None:
            sb.close()
            self.task.sandbox = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_SHARED: dict = {}
_SHARED_LOCK = threading.Lock()


def shared_verifier(task: str, **options) -> Verifier:
    """One verifier per (task, options) per process: adapters called per item reuse its pools."""
    key = (task, tuple(sorted((k, repr(v)) for k, v in options.items())))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Verifier(task, **options)
        return _SHARED[key]
