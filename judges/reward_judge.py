"""A reward model as the judge: ``--judge reward:hf:PATH``, ``reward:vllm:PATH`` or
``reward:vllm-server:URL`` (a running vLLM pooling server).

It stands in for ``Judge`` (same ``run(calls)``, ``describe()``, ``name``): each call's question(s)
and answer(s) become the conversation the reward model scores (no judge prompt, no text to parse).
Single grading: the rating is the answer's reward (raw by default, so not on MT-Bench's 1-10
scale). Pairwise: the higher reward wins, a difference within ``margin`` (``--judge-args
margin=0.1``, default 0) is a tie ("C"). Both orders are still judged (they give the same rewards,
which is what the swap-consistency figure then shows), and the reliability figures the LLM judges
report (parse figures, correlation of the rating with answer length, position and length bias)
come out of the same code. Rewards go through the engine: cached by the reward model's identity.
"""
from __future__ import annotations

from typing import Sequence

from evalkit.run.engine import Engine
from evalkit.taskapi.requests import RewardRequest

from .judge import JudgeCall, Judgment

PREFIX = "reward:"


def is_reward_judge(spec: str) -> bool:
    return str(spec).startswith(PREFIX)


def _conversation(values: dict, side: str = "") -> tuple:
    """(role, content) pairs of one call's turns; ``side`` is "a"/"b" for pairwise values."""
    ans = (lambda k: values[f"answer_{side}_{k}"]) if side else (lambda k: values[f"answer_{k}"])
    if "question" in values:  # turn 1
        return (("user", values["question"]), ("assistant", values[f"answer_{side}"] if side else values["answer"]))
    return (("user", values["question_1"]), ("assistant", ans(1)), ("user", values["question_2"]), ("assistant", ans(2)))


class RewardJudge:
    def __init__(self, spec: str, judge_args: dict | None, cache, progress=False, **_llm_judge_options):
        from evalkit.backends.reward_catalog import make_reward_backend
        args = dict(judge_args or {})
        self.margin = float(args.pop("margin", 0.0))
        if self.margin < 0:
            raise ValueError(f"--judge-args margin={self.margin}: expected a number >= 0")
        self.backend = make_reward_backend(spec[len(PREFIX):], args, "--judge")
        self.spec = PREFIX + self.backend.record_spec  # a server URL's userinfo redacted
        self.engine = Engine(self.backend, cache, progress=progress)
        self.name = f"reward:{self.backend.display_name}"

    def close(self) -> None:
        self.backend.close()

    def describe(self) -> dict:
        return {"spec": self.spec, "name": self.name, "backend": self.backend.name, "kind": "reward_model",
                "identity": self.backend.identity(), "identity_hash": self.backend.identity_hash(),
                "pooling": self.backend.pooling_info(), "tie_margin": self.margin,
                "rating_scale": "the reward model's reward (raw unless activation=sigmoid), not 1-10"}

    def run(self, calls: Sequence[JudgeCall]) -> list[Judgment]:
        plans = []
        for c in calls:
            pairwise = c.template.output_format == "[[A]]"
            sides = ("a", "b") if pairwise else ("",)
            plans.append([RewardRequest(messages=_conversation(c.values, s)) for s in sides])
        answers = self.engine.run([r for p in plans for r in p])
        out = []
        for c, reqs in zip(calls, plans):
            rewards = [answers[r.key()] for r in reqs]
            j = Judgment(c.template.name, c.template.version, f"reward model over {len(reqs[0].messages)} messages",
                         meta=dict(c.meta), source="parsed")
            if len(rewards) == 2:
                ra, rb = rewards
                j.value = "C" if abs(ra - rb) <= self.margin else ("A" if ra > rb else "B")
                j.outputs = [f"reward A {ra:.6f}, reward B {rb:.6f}"]
            else:
                j.value = float(rewards[0])
                j.outputs = [f"reward {rewards[0]:.6f}"]
            out.append(j)
        return out


def close_judge(judge) -> None:
    """Stop a reward judge's own engine (an LLM judge's backend belongs to the pool, closed with it)."""
    if isinstance(judge, RewardJudge):
        judge.close()


def make_judge(pool, judge_spec: str, judge_args, cache, seed: int, progress, judge_options: dict | None):
    """The LLM judge (``Judge``) or, for ``reward:...``, the reward-model judge."""
    if is_reward_judge(judge_spec):
        return RewardJudge(judge_spec, judge_args, cache, progress)
    from .judge import Judge
    return Judge(pool.backend(judge_spec, judge_args), cache, judge_spec, seed=seed, progress=progress,
                 **(judge_options or {}))
