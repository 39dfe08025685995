"""Text-generation metrics shared by tasks.

- ``text``: BLEU, chrF and TER through sacrebleu as corpus statistics (per-segment sufficient
  statistics, summed; a seeded segment bootstrap for the CI) and ROUGE through rouge-score.
- ``hf_evaluate``: any Hugging Face ``evaluate`` metric named as ``evaluate:NAME`` on a generation
  task, loaded lazily.

Heavy imports (rouge-score pulls in nltk, ``evaluate`` pulls in ``datasets``) happen inside the
functions that need them, so listing tasks stays fast.
"""
