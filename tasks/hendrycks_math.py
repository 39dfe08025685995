r"""MATH (Hendrycks et al. 2021): the full 5,000-problem test set (``math``) and the MATH-500 subset
of Lightman et al. (2023) (``math500``).

Two prompts, picked by ``--task-args math:prompt=minerva|chat`` (default ``auto``: chat when the
run applies the chat template, minerva otherwise):

- ``minerva`` (base models): lm-eval's minerva_math 4-shot prompt, "Problem:\n...\n\nSolution:",
  greedy until "Problem:"; the exemplars end with "Final Answer: The final answer is X. I hope it
  is correct.".
- ``chat`` (chat models): zero-shot, "... Please reason step by step, and put your final answer
  within \boxed{}.".

Scoring (``evalkit.scoring.math_equivalence``, in worker processes): ``math_verify`` (math-verify on the
whole completion against the reference solution, as lm-eval calls it) and ``exact_match``
(lm-eval's minerva rule on the "Final Answer" line -- with the chat prompt on the last
``\boxed{}`` instead, since that prompt asks for a box). ``extracted`` holds the last ``\boxed{}``
or the "Final Answer" line. Breakdowns by subject and by level.

Data: the hub (``EleutherAI/hendrycks_math``, 7 configs; ``HuggingFaceH4/MATH-500``) or local
files in the original layouts: ``MATH/test/<subject>/<n>.json`` and MATH-500's ``test.jsonl``.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Iterable

from evalkit.taskapi.data import DataError, DataSource, FieldError, Provenance, Record, read_records, require
from evalkit.scoring.math_equivalence import (INVALID_ANSWER, JudgeItem, boxed_answer, extract_answer, get_unnormalized_answer,
                                      judge_many, judge_one, minerva_gold, normalize_final_answer)
from evalkit.taskapi.requests import GenParams
from evalkit.scoring.metric import Metric
from evalkit.scoring.stats import derive_seed, mean_metric
from evalkit.taskapi.task import Doc, GenerationTask, Scored, register_task

SUBJECT_DIRS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                "prealgebra", "precalculus")

# lm-eval minerva_math list_fewshot_samples() (from Lewkowycz et al. 2022).
MINERVA_FEWSHOT = [
    ("Find the domain of the expression  $\\frac{\\sqrt{x-2}}{\\sqrt{5-x}}$.",
     "The expressions inside each square root must be non-negative. Therefore, $x-2 \\ge 0$, so $x\\ge2$, and $5 - x "
     "\\ge 0$, so $x \\le 5$. Also, the denominator cannot be equal to zero, so $5-x>0$, which gives $x<5$. Therefore, "
     "the domain of the expression is $\\boxed{[2,5)}$.\nFinal Answer: The final answer is $[2,5)$. I hope it is "
     "correct."),
    ("If $\\det \\mathbf{A} = 2$ and $\\det \\mathbf{B} = 12,$ then find $\\det (\\mathbf{A} \\mathbf{B}).$",
     "We have that $\\det (\\mathbf{A} \\mathbf{B}) = (\\det \\mathbf{A})(\\det \\mathbf{B}) = (2)(12) = "
     "\\boxed{24}.$\nFinal Answer: The final answer is $24$. I hope it is correct."),
    ("Terrell usually lifts two 20-pound weights 12 times. If he uses two 15-pound weights instead, how many times "
     "must Terrell lift them in order to lift the same total weight?",
     "If Terrell lifts two 20-pound weights 12 times, he lifts a total of $2\\cdot 12\\cdot20=480$ pounds of weight.  "
     "If he lifts two 15-pound weights instead for $n$ times, he will lift a total of $2\\cdot15\\cdot n=30n$ pounds "
     "of weight.  Equating this to 480 pounds, we can solve for $n$:\n\\begin{align*}\n30n&=480\\\\\n\\Rightarrow"
     "\\qquad n&=480/30=\\boxed{16}\n\\end{align*}\nFinal Answer: The final answer is $16$. I hope it is correct."),
    ("If the system of equations\n\n\\begin{align*}\n6x-4y&=a,\\\\\n6y-9x &=b.\n\\end{align*}has a solution $(x, y)$ "
     "where $x$ and $y$ are both nonzero,\nfind $\\frac{a}{b},$ assuming $b$ is nonzero.",
     "If we multiply the first equation by $-\\frac{3}{2}$, we obtain\n\n$$6y-9x=-\\frac{3}{2}a.$$Since we also know "
     "that $6y-9x=b$, we have\n\n$$-\\frac{3}{2}a=b\\Rightarrow\\frac{a}{b}=\\boxed{-\\frac{2}{3}}.$$\nFinal Answer: "
     "The final answer is $-\\frac{2}{3}$. I hope it is correct."),
]
CHAT_SUFFIX = "\nPlease reason step by step, and put your final answer within \\boxed{}."
PROMPTS = ("auto", "minerva", "chat")
MINERVA_PARAMS = GenParams(max_tokens=512, temperature=0.0, stop=("Problem:",))
CHAT_PARAMS = GenParams(max_tokens=2048, temperature=0.0)


def _math_split_dir(path: Path, split: str) -> Path:
    for cand in (path / split, path / "MATH" / split, path):
        if cand.is_dir() and any((cand / s).is_dir() for s in SUBJECT_DIRS):
            return cand
    raise DataError(f"{path}: no MATH {split}/<subject>/<n>.json folders (the original MATH.tar layout)")


def read_math(path: Path, split: str) -> Iterable[Record]:
    """The original MATH layout (one JSON per problem), or any JSONL/JSON/Parquet records file."""
    if path.is_file():
        yield from read_records(path)
        return
    root = _math_split_dir(path, split)
    for subject in SUBJECT_DIRS:
        folder = root / subject
        if not folder.is_dir():
            raise DataError(f"{root}: subject folder {subject}/ is missing")
        files = sorted(folder.glob("*.json"), key=lambda p: (int(p.stem) if p.stem.isdigit() else 1 << 62, p.stem))
        for f in files:
            try:
                obj = json.loads(f.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise DataError(f"{f}:{e.lineno}: invalid JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{f}: expected a JSON object")
            obj.setdefault("unique_id", f"{split}/{subject}/{f.name}")
            yield Record(obj, Provenance(str(f), 1))


class MathHubSource(DataSource):
    """EleutherAI/hendrycks_math has one config per subject: read all seven in order."""

    def _load_hub(self, split):
        for subject in SUBJECT_DIRS:
            src = DataSource(hub_path=self.hub_path, hub_name=subject, hub_splits=self.hub_splits)
            for i, rec in enumerate(src._load_hub(split)):
                rec.data.setdefault("unique_id", f"{subject}-{i}")
                yield rec


def _level(value):
    s = str(value).replace("Level", "").strip()
    return int(s) if s.isdigit() else s or "?"


@register_task
class HendrycksMath(GenerationTask):
    name = "math"
    vote_kind = "math"  # maj@K over repeats votes on the extracted final answer
    description = ("MATH test (5,000): minerva 4-shot or zero-shot chat \\boxed{} prompt; "
                   "math-verify + minerva exact_match")
    version = "1"
    dataset = MathHubSource(hub_path="EleutherAI/hendrycks_math", local_reader=read_math, data_dir="math")
    eval_split = "test"
    num_fewshot = 4
    fewshot_delimiter = "\n\n"
    target_delimiter = " "
    gen_params = MINERVA_PARAMS
    metrics = (Metric("math_verify"), Metric("exact_match"))
    #: the worker-side judge (default: math-verify and minerva; RL rewards may judge math-verify only)
    judge_fn = None

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.prompt_style = str(options.get("prompt", "auto"))
        if self.prompt_style not in PROMPTS:
            raise ValueError(f"task {self.name}: prompt must be one of {', '.join(PROMPTS)}, got {self.prompt_style!r}")

    def record_to_doc(self, record, index):
        problem, solution = require(record, "problem"), require(record, "solution")
        subject = record.get("subject") or record.get("type")
        if not isinstance(subject, str):
            raise FieldError("type", "is missing (the subject: 'type' in MATH, 'subject' in MATH-500)")
        answer = record.get("answer")
        if not isinstance(answer, str):
            answer = boxed_answer(solution)
            if answer is None:
                raise FieldError("solution", "has no \\boxed{} answer")
        uid = record.get("unique_id") or f"{index}"
        return Doc(id=str(uid), query=problem, target=answer, fewshot_target=solution,
                   meta={"subject": subject, "level": _level(record.get("level", "?")), "solution": solution,
                         "minerva_gold": minerva_gold(solution)})

    # ---- prompts ----
    def style(self, ctx) -> str:
        if self.prompt_style == "auto":
            return "chat" if ctx.apply_chat_template else "minerva"
        return self.prompt_style

    def fewshot_pool(self):
        return [Doc(id=f"minerva-{i}", query=p, fewshot_target=s) for i, (p, s) in enumerate(MINERVA_FEWSHOT)]

    def doc_to_text(self, doc):
        return "Problem:\n" + doc.query + "\n\nSolution:"

    def build_prompt_text(self, doc, ctx):
        if self.style(ctx) == "chat":
            return doc.query + CHAT_SUFFIX
        return super().build_prompt_text(doc, ctx)

    def params(self, doc, ctx):
        """The style's defaults (minerva: 512 tokens until "Problem:"; chat: 2048) + --gen-kwargs."""
        base = CHAT_PARAMS if self.style(ctx) == "chat" else MINERVA_PARAMS
        p = {**asdict(base), **{k: v for k, v in ctx.gen_overrides.items() if k in asdict(base)}}
        if p["temperature"] and p.get("seed") is None:
            p["seed"] = derive_seed(ctx.seed, self.name, "sample", doc.id) % (2 ** 31)
        p["stop"] = tuple(p["stop"])
        return GenParams(**p)

    def requests(self, doc, ctx):
        if self.style(ctx) == "chat":
            if ctx.num_fewshot:
                raise ValueError(f"task {self.name}: the chat prompt is zero-shot; use --task-args "
                                 f"{self.name}:prompt=minerva for the few-shot prompt")
            self.num_fewshot = 0  # what run.json records
        return super().requests(doc, ctx)

    def config_fingerprint(self):
        return {**super().config_fingerprint(), "prompt": self.prompt_style}

    # ---- scoring ----
    def score_batch(self, docs, texts, ctx):
        """Extract in-process, then judge every item in the worker pool at once."""
        chat = self.style(ctx) == "chat"
        items, extracted = [], []
        for doc, outs in zip(docs, texts):
            text = outs[0] if outs else ""
            raw = (boxed_answer(text) or INVALID_ANSWER) if chat else get_unnormalized_answer(text)
            items.append(JudgeItem(doc.meta["solution"], text, normalize_final_answer(raw), doc.meta["minerva_gold"]))
            extracted.append({"answer": extract_answer(text), "minerva": raw})
        verdicts = judge_many(items, fn=self.judge_fn or judge_one) if items else []
        return [Scored({"math_verify": v["math_verify"], "exact_match": v["exact_match"]},
                       extracted={**ext, "minerva_normalized": item.minerva_pred},
                       extra={"subject": doc.meta["subject"], "level": doc.meta["level"], "judge_status": v["status"]})
                for doc, item, ext, v in zip(docs, items, extracted, verdicts)]

    def breakdowns(self, samples):
        out = {}
        for key in ("subject", "level"):
            groups = defaultdict(list)
            for s in samples:
                groups[s.extra[key]].append(s)
            for g in sorted(groups, key=str):
                out[f"{key}:{g}"] = {m: mean_metric([s.metrics[m] for s in groups[g]])
                                     for m in ("math_verify", "exact_match")}
        return out

    def run_extra(self, samples):
        status = defaultdict(int)
        for s in samples:
            status[s.extra["judge_status"]] += 1
        return {"judge_status": dict(status)}


@register_task
class Math500(HendrycksMath):
    name = "math500"
    description = "MATH-500 (Lightman et al. 2023): same prompts and scoring as `math`"
    dataset = DataSource(hub_path="HuggingFaceH4/MATH-500", local_files={"test": ["test.jsonl", "MATH-500/test.jsonl"]},
                         data_dir="math")
