"""Verifiable rewards for RL training: evalkit's verifiers as TRL, verl and OpenRLHF rewards.

- ``Verifier`` (``evalkit.rl.verifier``): (gold, completion) -> the task metric's value, the extracted
  answer and a reason, through the task's own scoring (``evalkit.rl.bridge``);
- ``trl_reward(task, **options)``: a TRL ``GRPOTrainer`` ``reward_funcs`` callable;
- ``evalkit.rl.verl``: ``compute_score`` / ``compute_score_batch`` for verl
  (``custom_reward_function.path=pkg://evalkit.rl.verl``);
- ``evalkit.rl.openrlhf_reward``: an OpenRLHF ``reward_func`` file; ``evalkit reward-server``: its HTTP server;
- ``evalkit.rl.diagnostics``: GRPO group figures of a run with ``n=G`` samples per prompt;
- ``verifier_hash(task)``: the parity certificate (also in run records and every adapter's logs).
"""
from evalkit.rl.version import verifier_hash
from evalkit.rl.verifier import Verdict, Verifier, shared_verifier


def trl_reward(task: str, **options):
    """A TRL ``reward_funcs`` entry for ``task`` (see ``evalkit.rl.trl``)."""
    from evalkit.rl.trl import TRLReward
    return TRLReward(task, **options)


__all__ = ["Verdict", "Verifier", "shared_verifier", "trl_reward", "verifier_hash"]
