"""An OpenRLHF ``reward_func`` file: ``--remote_rm_url $(python -m evalkit.rl.openrlhf_reward)``.

OpenRLHF loads this file by path and calls ``reward_func(queries, prompts, labels)`` from a worker
thread. Which tasks it scores and how come from the environment:
``EVALKIT_REWARD_TASKS=gsm8k,math`` (required), ``EVALKIT_REWARD_STRIP_THINK=1``,
``EVALKIT_REWARD_GUARDS=0``, ``EVALKIT_REWARD_CHAT=1``. Running the module prints its path.
"""
import os
import sys

from evalkit.rl.openrlhf import score


def _options() -> dict:
    flag = lambda name, default: os.environ.get(name, default).strip().lower() in ("1", "true", "yes")  # noqa: E731
    return {"strip_think": flag("EVALKIT_REWARD_STRIP_THINK", "0"), "use_guards": flag("EVALKIT_REWARD_GUARDS", "1"),
            "chat": flag("EVALKIT_REWARD_CHAT", "0")}


def reward_func(queries, prompts, labels, **kwargs):
    tasks = [t for t in os.environ.get("EVALKIT_REWARD_TASKS", "").split(",") if t.strip()]
    if not tasks:
        raise RuntimeError("set EVALKIT_REWARD_TASKS (e.g. gsm8k,math) for evalkit's OpenRLHF reward_func")
    out = score(queries, prompts, labels, [t.strip() for t in tasks], **_options())
    out.pop("reasons")
    return out


if __name__ == "__main__":
    print(os.path.abspath(__file__))
    sys.exit(0)
