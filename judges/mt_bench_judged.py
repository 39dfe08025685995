"""MT-Bench's two gradings as judged metrics of the shared judge layer (``evalkit.taskapi.judged``).

- ``SingleGrade`` (``mt_bench_single``, pointwise): each turn of one answer rated 1-10 with the
  template of its role (FastChat's ``single-v1``, ``single-math-v1`` with the reference for math,
  reasoning and coding, and their multi-turn forms); tags ``turn1``, ``turn2``.
- ``PairGrade`` (``mt_bench_pairwise``, pairwise): each turn of two answers judged in both orders
  (``turnK:g1`` shows model_1 as assistant A, ``turnK:g2`` model_2); the two orders agree when they
  name the same winner (a disagreement is a tie in the scores).

They build the asks (the layer's ``JudgeAsk``: the template's system message and filled-in prompt, the
judge's reply length) and read verdicts as the layer does; ``evalkit mt-bench`` sends them through
``judges.judge.Judge``, which adds what MT-Bench's judge has beyond the layer (seeded retries of a reply
with no verdict, then a constrained verdict), and records each sample's ``extra.judged`` and the
layer's reliability figures (asks, parse failures, swap consistency) beside MT-Bench's own.
"""
from __future__ import annotations

from typing import Optional, Sequence

from evalkit.scoring.thinking import separate
from evalkit.taskapi import judged
from evalkit.taskapi.judged import JudgedMetric

from .judge import JudgeCall, Judgment
from .parsing import parse
from .reliability import A_MAP, B_MAP
from .templates import TemplateSet


def _refs(ref: Optional[list]) -> dict:
    return {"ref_answer_1": ref[0], "ref_answer_2": ref[1] if len(ref) > 1 else ""} if ref else {}


def _turns(doc) -> int:
    return min(2, len(doc.meta["turns"]))


class _Graded(JudgedMetric):
    """What both gradings share: the run's templates and references, the judge's reply length."""

    output_format = "[[rating]]"

    def __init__(self, templates: TemplateSet, refs: dict, max_tokens: int = 512):
        self.templates, self.refs, self.max_tokens = templates, refs, int(max_tokens)

    def asks(self, doc, answer) -> list:
        return [c.ask(self.max_tokens) for c in self.calls(doc, answer)]

    def calls(self, doc, answer, meta: Optional[dict] = None) -> list[JudgeCall]:
        raise NotImplementedError

    def parse(self, ask, text):
        got = parse(self.output_format, separate(text).answer)
        return got.value if got.ok else None

    def declarations(self) -> tuple:
        return ()  # the figures are MT-Bench's (tasks/mt_bench.py declares them)

    def record(self, doc, answer, judgments: Sequence[Judgment]) -> dict:
        """The sample's record from the judge's final verdicts (after its retries): a verdict a retry
        found counts as parsed, a constrained one as a parse failure (as MT-Bench's figures count them)."""
        calls = self.calls(doc, answer)
        verdicts = {c.tag: j.value for c, j in zip(calls, judgments)}
        failed = [c.tag for c, j in zip(calls, judgments) if j.parse_failed]
        return judged.record_of(self, doc, answer, [c.ask(self.max_tokens) for c in calls], verdicts, failed)


class SingleGrade(_Graded):
    name = "mt_bench_single"
    kind = "pointwise"

    def calls(self, doc, answer, meta: Optional[dict] = None) -> list[JudgeCall]:
        q, ref = doc.meta["turns"], self.refs.get(doc.id)
        meta = {**(meta or {}), "qid": doc.id, "category": doc.meta["category"]}
        out = [JudgeCall(self.templates.pick("single", bool(ref), False),
                         {"question": q[0], "answer": answer[0], **_refs(ref)}, {**meta, "turn": 1}, tag="turn1")]
        if len(q) > 1:
            out.append(JudgeCall(self.templates.pick("single", bool(ref), True),
                                 {"question_1": q[0], "question_2": q[1], "answer_1": answer[0],
                                  "answer_2": answer[1], **_refs(ref)}, {**meta, "turn": 2}, tag="turn2"))
        return out

    def values(self, doc, answer, verdicts: dict) -> dict:
        return {f"score_{t}": v for t, v in verdicts.items() if v is not None}


class PairGrade(_Graded):
    """``answer``: the two contestants' turns, ``(model_1's, model_2's)``."""

    name = "mt_bench_pairwise"
    kind = "pairwise"
    output_format = "[[A]]"

    def calls(self, doc, answer, meta: Optional[dict] = None) -> list[JudgeCall]:
        (a, b), ref, out = answer, self.refs.get(doc.id), []
        for turn in range(1, _turns(doc) + 1):
            t = self.templates.pick("pairwise", bool(ref), turn == 2)
            m = {**(meta or {}), "qid": doc.id, "turn": turn}
            out.append(JudgeCall(t, {**_pair_values(doc, a, b, turn), **_refs(ref)}, {**m, "order": "g1"},
                                 tag=f"turn{turn}:g1"))
            out.append(JudgeCall(t, {**_pair_values(doc, b, a, turn), **_refs(ref)}, {**m, "order": "g2"},
                                 tag=f"turn{turn}:g2"))
        return out

    def consistent(self, doc, verdicts: dict) -> Optional[bool]:
        """Whether both orders named the same winner on every turn (None: a turn lacks a verdict)."""
        agree = []
        for turn in range(1, _turns(doc) + 1):
            v1, v2 = verdicts.get(f"turn{turn}:g1"), verdicts.get(f"turn{turn}:g2")
            if v1 is None or v2 is None:
                return None
            agree.append(A_MAP[v1] == B_MAP[v2])
        return all(agree)

    def values(self, doc, answer, verdicts: dict) -> dict:
        return {}  # win rates come from the pairs (judges/mt_bench_scores.py)


def _pair_values(d, a: list, b: list, turn: int) -> dict:
    q = d.meta["turns"]
    if turn == 1:
        return {"question": q[0], "answer_a": a[0], "answer_b": b[0]}
    return {"question_1": q[0], "question_2": q[1], "answer_a_1": a[0], "answer_a_2": a[1],
            "answer_b_1": b[0], "answer_b_2": b[1]}


def layer_records(templates: TemplateSet, refs: dict, docs: Sequence, answers: dict, single: dict,
                  pairs: Sequence) -> dict:
    """``{model: {question id: {metric name: record}}}``: each contestant's samples' records of the judge
    layer, from the final verdicts (``single``: model -> its rating judgments in call order; ``pairs``:
    the ``PairResult`` objects; a question judged against several opponents merges their records)."""
    rate, duel = SingleGrade(templates, refs), PairGrade(templates, refs)
    by_id = {d.id: d for d in docs}
    out: dict = {}
    for model, js in single.items():
        for d in docs:
            mine = [j for j in js if j.meta["qid"] == d.id]
            if mine:
                out.setdefault(model, {}).setdefault(d.id, {})[rate.name] = rate.record(d, answers[model][d.id], mine)
    games: dict = {}
    for p in pairs:
        games.setdefault((p.model_1, p.model_2, p.qid), []).extend((p.g1, p.g2))
    merged: dict = {}
    for (m1, m2, qid), js in games.items():
        d = by_id[qid]
        rec = duel.record(d, (answers[m1][qid], answers[m2][qid]), js)
        for model in (m1, m2):
            merged.setdefault((model, qid), []).append(rec)
    for (model, qid), recs in merged.items():
        out.setdefault(model, {}).setdefault(qid, {})[duel.name] = judged.merge_records(recs)
    return out


def layer_figures(records: dict) -> dict:
    """The layer's reliability figures of one contestant's records (``layer_records()[model]``)."""
    out = {}
    for metric in (SingleGrade, PairGrade):
        recs = [r[metric.name] for r in records.values() if metric.name in r]
        if recs:
            out[metric.name] = judged.figures_of(metric, recs)
    return out
