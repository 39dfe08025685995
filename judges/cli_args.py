"""Command-line options shared by ``evalkit mt-bench`` and ``evalkit arena run``."""
from __future__ import annotations

import argparse


from .contestants import imported, parse_models
from .templates import TemplateSet, parse_roles


def add_contestant_args(p: argparse.ArgumentParser, flag: str = "--model") -> None:
    p.add_argument(flag, action="append", default=[], metavar="SPEC[@k=v...]",
                   help="model(s) that answer, comma-separated or repeated, e.g. hf:smollm2-135m or "
                        "hf:smollm2-135m@temperature=0.7@seed=1 (a distinct contestant; @name=... renames it)")
    p.add_argument("--model-args", default="", metavar="K=V,...", help="backend options for the answering models")
    p.add_argument("--answers", action="append", default=[], metavar="FILE",
                   help="imported answers: FastChat model_answer JSONL (repeatable); named after the file")


JUDGE_MAX_TOKENS = 512


def add_judge_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judge")
    g.add_argument("--judge", required=True, metavar="SPEC",
                   help="the judge model: vllm:..., hf:... or openai:... (any backend evalkit runs), or a reward "
                        "model: reward:hf:PATH / reward:vllm:PATH (higher reward wins; --judge-args margin=M ties)")
    g.add_argument("--judge-args", default=None, metavar="K=V,...",
                   help="backend options for the judge (default: --model-args)")
    g.add_argument("--judge-max-tokens", type=int, default=JUDGE_MAX_TOKENS,
                   help=f"judge output length (default {JUDGE_MAX_TOKENS}: a verdict with its reasons fits; FastChat "
                        "allowed 2048, which a small local judge that never stops spends on every call)")
    g.add_argument("--judge-retries", type=int, default=2,
                   help="resample an unparsable judgment up to N times before counting it as a parse failure")
    g.add_argument("--constrain", choices=("auto", "on", "off"), default="auto",
                   help="after the retries, pick the verdict the judge finds most likely (auto: where the backend "
                        "can score text); counted apart from parsed verdicts")
    g.add_argument("--judge-prompts", action="append", default=[], metavar="FILE",
                   help="extra judge templates (FastChat judge_prompts.jsonl format); same name replaces")
    g.add_argument("--judge-template", action="append", default=[], metavar="ROLE=NAME",
                   help="use template NAME for ROLE (single, single-ref, single-multi, single-ref-multi, pair, "
                        "pair-ref, pair-multi, pair-ref-multi)")


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=None, metavar="DIR",
                   help="MT-Bench folder (question.jsonl, reference_answer/gpt-4.jsonl); "
                        "default: hub lighteval/mt-bench")
    p.add_argument("--references", default="gpt-4", metavar="gpt-4|corrected|FILE",
                   help="reference answers for math/reasoning/coding: FastChat's GPT-4 answers (default), the "
                        "corrected human-written set in question.jsonl, or a model_answer JSONL file")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--questions", default=None, metavar="ID,...", help="only these question ids, in this order")
    p.add_argument("--max-tokens", type=int, default=1024, help="answer length per turn (FastChat: 1024)")
    p.add_argument("--system-prompt", default=None, help="system message for the answering models")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--output", default="results", help="results folder")
    p.add_argument("--no-output", action="store_true", help="write no run record")
    p.add_argument("--cache-dir", default=None, help="response cache folder (default ~/.cache/evalkit)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument("--tag", action="append", default=[], help="tag the run record(s)")


def contestants_from(args, flag_values) -> list:
    out = parse_models(flag_values)
    out += [imported(path) for item in args.answers for path in item.split(",") if path.strip()]
    return out


def judge_setup(args) -> tuple:
    """(judge model args, judge options, template set), all checked before any model loads."""
    if "@" in args.judge:
        raise ValueError(f"--judge {args.judge!r}: a judge takes no @overrides (it always decodes greedily)")
    if args.limit is not None and args.limit < 1:
        raise ValueError("--limit must be >= 1")
    judge = judge_role(args.judge, args.judge_args)
    judge_args = None if args.judge_args is None else judge.args
    if args.judge_max_tokens < 1:
        raise ValueError(f"--judge-max-tokens {args.judge_max_tokens}: expected an integer >= 1")
    options = {"max_tokens": args.judge_max_tokens, "retries": args.judge_retries, "constrain": args.constrain}
    templates = TemplateSet(args.judge_prompts, parse_roles(args.judge_template))
    return judge_args, options, templates


def judge_role(spec: str, args_text):
    """The judge (``--judge``, ``--judge-args``) checked before any model loads: a model, or with
    ``reward:`` a reward model (its margin= is the judge's own option)."""
    from evalkit.run.roles import ModelRole, RewardRole
    if spec.startswith("reward:"):
        return RewardRole.of("reward judge", spec[len("reward:"):], args_text or "", "--judge reward:", "--judge-args")
    return ModelRole.of("judge", spec, args_text or "", "--judge", "--judge-args")


def question_ids(args):
    return [x.strip() for x in args.questions.split(",") if x.strip()] if args.questions else None
