"""LLM-as-judge for evalkit (installed as ``evalkit.judges``).

- ``templates``: FastChat's eight MT-Bench judge prompts (bundled with their licence, see
  NOTICE.txt), versioned by hash; users add their own files.
- ``parsing``: the final ``[[rating]]`` / ``[[A]]``/``[[B]]``/``[[C]]`` of a judgment.
- ``judge``: runs a judge model through the engine and cache; retries, counts and optionally
  constrains unparsable verdicts.
- ``reliability``: parse-failure, position-swap and length figures for the run record.
- ``contestants``: model specs with ``@temperature=...`` overrides, imported FastChat answers.
- ``mt_bench``: the MT-Bench driver (``evalkit mt-bench``); ``arena``: judged arenas and ratings
  (``evalkit arena``).
"""
from .judge import Judge, JudgeCall, Judgment
from .parsing import Parsed, parse_rating, parse_verdict
from .templates import JudgeTemplate, TemplateSet, load_templates

__all__ = ["Judge", "JudgeCall", "Judgment", "JudgeTemplate", "Parsed", "TemplateSet", "load_templates",
           "parse_rating", "parse_verdict"]
