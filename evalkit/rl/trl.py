"""TRL ``GRPOTrainer`` rewards: ``evalkit.rl.trl_reward("gsm8k")`` is a ``reward_funcs`` entry.

TRL (``trl/trainer/grpo_trainer.py``, ``_calculate_rewards``) calls each reward function once per
batch of B*G completions as ``f(prompts=..., completions=..., completion_ids=..., **columns,
trainer_state=..., log_extra=..., log_metric=...)``, every other dataset column passed as a list;
``None`` means "no reward for this one" (TRL turns it into NaN and ignores it). Completions are
strings, or ``[{"role": "assistant", "content": ...}]`` for conversational datasets. An ``async``
``__call__`` is awaited (``trl.trainer.utils.is_async_callable``); ``asynchronous=True`` gives that.

The gold comes from the dataset column ``gold_column`` (default ``"gold"``, as ``evalkit export-rl
--format trl`` writes it; ``"solution"`` or ``"answer"`` columns with plain answers work too). The
callable's ``__name__`` is ``evalkit_<task>``, so TRL logs ``rewards/evalkit_<task>/mean``; each
verdict's reason and the verifier hash go into TRL's completions table through ``log_extra``, and
``log_metric`` gets the number of unusable golds per batch.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from evalkit.rl.verifier import Verdict, shared_verifier

log = logging.getLogger(__name__)


def completion_text(c: Any) -> Optional[str]:
    """A TRL completion as text: a string, or the assistant content of a message list."""
    if isinstance(c, str):
        return c
    if isinstance(c, dict):
        return c.get("content") if isinstance(c.get("content"), str) else None
    if isinstance(c, (list, tuple)):
        parts = [m.get("content") for m in c if isinstance(m, dict) and m.get("role", "assistant") == "assistant"]
        parts = [p for p in parts if isinstance(p, str)]
        return "".join(parts) if parts else None
    return None


class _Base:
    def __init__(self, task: str, gold_column: str = "gold", log_reasons: bool = True, **options):
        self.task, self.gold_column, self.log_reasons = task, gold_column, log_reasons
        self.verifier = shared_verifier(task, **options)
        self.__name__ = f"evalkit_{task}"
        self.last_verdicts: list[Verdict] = []
        log.info("evalkit reward %s: verifier %s %s", self.__name__, self.verifier.version_hash,
                 self.verifier.options)

    def _golds(self, n: int, columns: dict) -> list:
        for name in (self.gold_column, "solution", "answer", "ground_truth"):
            if name in columns and columns[name] is not None:
                golds = list(columns[name])
                if len(golds) != n:
                    raise ValueError(f"{self.__name__}: column {name!r} has {len(golds)} values for {n} completions")
                return golds
        raise ValueError(f"{self.__name__}: the dataset needs a {self.gold_column!r} column with the gold data "
                         f"(have: {', '.join(sorted(columns)) or 'none'}); see `evalkit export-rl --format trl`")

    def _inputs(self, completions, kwargs):
        columns = {k: v for k, v in kwargs.items() if k not in ("prompts", "completion_ids", "trainer_state",
                                                               "log_extra", "log_metric", "environments")}
        return self._golds(len(completions), columns), [completion_text(c) for c in completions]

    def _finish(self, verdicts: list[Verdict], kwargs) -> list[Optional[float]]:
        self.last_verdicts = verdicts
        log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
        if self.log_reasons and callable(log_extra):
            log_extra(f"{self.__name__}_reason", [v.reason for v in verdicts])
            log_extra(f"{self.__name__}_verifier", [self.verifier.version_hash] * len(verdicts))
        if callable(log_metric):
            usable = [v for v in verdicts if v.reward is not None]
            log_metric(f"{self.__name__}/unusable_gold", float(len(verdicts) - len(usable)))
        return [v.reward for v in verdicts]

    def certificate(self) -> dict:
        return self.verifier.certificate()


class TRLReward(_Base):
    """Synchronous ``reward_funcs`` entry; ``asynchronous=True`` returns ``AsyncTRLReward``."""

    def __new__(cls, task: str, asynchronous: bool = False, **options):
        if asynchronous and cls is TRLReward:
            return super().__new__(AsyncTRLReward)
        return super().__new__(cls)

    def __init__(self, task: str, asynchronous: bool = False, **options):
        super().__init__(task, **options)

    def __call__(self, prompts=None, completions=None, **kwargs) -> list[Optional[float]]:
        golds, texts = self._inputs(completions or [], kwargs)
        return self._finish(self.verifier.verify_batch(golds, texts), kwargs)


class AsyncTRLReward(TRLReward):
    """The same rewards from ``async def __call__`` (TRL awaits it alongside other async rewards)."""

    async def __call__(self, prompts=None, completions=None, **kwargs) -> list[Optional[float]]:
        golds, texts = self._inputs(completions or [], kwargs)
        return self._finish(await self.verifier.averify_batch(golds, texts), kwargs)
