"""The run: plan, answer, score, post-process; the engine and the response cache; the phases composed
for the other commands (rescore, merge, parity, reward pairs) in ``workflows/``."""
