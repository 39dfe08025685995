"""Scoring: metrics as objects and the numbers behind them.

- ``metric``: ``Metric`` and ``MetricGroup`` (one corpus computation, several names) a task declares,
  checked against its samples (``MetricDeclarationError``); ``stats``: uncertainty for every number.
- ``answers``, ``choices``, ``math_equivalence``: answer extraction and matching.
- ``passk``, ``best_of_n``, ``step_agg``, ``budgets``: figures over samples.
- ``thinking``: separating a reasoning trace from its answer.
- ``text_metrics``: BLEU, chrF and TER through sacrebleu as corpus statistics (per-segment sufficient
  statistics, summed; a seeded segment bootstrap for the CI) and ROUGE through rouge-score.
- ``hf_evaluate``: any Hugging Face ``evaluate`` metric named as ``evaluate:NAME`` on a generation
  task, loaded lazily.

Heavy imports (rouge-score pulls in nltk, ``evaluate`` pulls in ``datasets``) happen inside the
functions that need them, so listing tasks stays fast.
"""
