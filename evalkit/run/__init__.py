"""The run: plan, answer, score, post-process; the engine, the response cache, parity, merge and rescoring."""
