"""Judged metrics: figures a judge model computes about a task's answers, declared like any metric.

A task lists them in ``judged`` (a tuple of ``JudgedMetric`` objects, or ``judged_metrics()`` when
they depend on the task's options). Each one says

- what it asks the judge about one answer: ``asks(doc, answer) -> [JudgeAsk]``, chat prompts, each
  with a tag unique within the doc (``"ab"``/``"ba"`` for the two orders of a pairwise game, the
  rubric item's index, ...);
- how a reply becomes a verdict: ``parse(ask, text)`` (``None``: the reply has no verdict, a *parse
  failure*, counted and never guessed);
- what the verdicts give: ``values(doc, answer, verdicts) -> {metric: float}`` for the sample, and
  ``declarations()``, the ``Metric``/``MetricGroup`` objects the task reports from them (their names
  are checked against the samples like every other metric).

Three kinds, as a record shows them: ``pointwise`` (a rubric or criteria about the answer alone:
HealthBench, WritingBench), ``reference`` (correctness against the doc's reference answer: SimpleQA's
grader, AA-LCR's equality check) and ``pairwise`` (the answer against a baseline's, judged in both
orders: Arena-Hard, AlpacaEval); a pairwise metric also says whether the two orders agreed
(``consistent``).

The run's judge phase (``--judge SPEC``, ``evalkit.run.judge_phase``) sends every ask as one greedy
chat request to the judge's own backend, cached under the judge's identity; scoring (``apply``) parses
the replies and adds to each sample the metric's values and ``extra["judged"][name]``: the verdicts
by tag, the tags whose reply had no verdict, the sha256 of the judge prompts and, pairwise, whether
the orders agreed. ``reliability(samples)`` sums them up for the record (``extra["judge"]``): asks,
parse failures and their rate, position-swap consistency, and with a second judge
(``--second-judge``, asked the same) how often the two agree (share and Cohen's kappa). A task with judged metrics needs a judge:
a run without ``--judge`` stops before any model loads.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import ClassVar, Optional, Sequence

from evalkit.taskapi.requests import GenerateRequest, GenParams

KINDS = ("pointwise", "reference", "pairwise")
#: the task option (``--task-args TASK:judge_max_tokens=N``) that sets the judge's reply length for every
#: judged metric of a task (default: each metric's own, its reference's)
MAX_TOKENS_OPTION = "judge_max_tokens"


@dataclass(frozen=True)
class JudgeAsk:
    """One question to the judge: a chat (``((role, content), ...)``) and its reply's length budget."""

    tag: str
    messages: tuple
    max_tokens: int = 2048

    def request(self) -> GenerateRequest:
        """The greedy chat request the judge answers (its key is the cache's and ``ctx.judgments``')."""
        return GenerateRequest(messages=tuple((str(r), str(c)) for r, c in self.messages),
                               params=GenParams(max_tokens=int(self.max_tokens), temperature=0.0))


class JudgedMetric:
    """A metric a judge model computes (see the module's text). Subclass and set ``name`` and ``kind``."""

    name: str = ""
    kind: ClassVar[str] = "pointwise"
    #: asked only when the run names a judge; without one the metric is left out and the task scores
    #: the rest (τ²-bench's natural-language assertions). Otherwise a run without ``--judge`` stops.
    optional: ClassVar[bool] = False

    def asks(self, doc, answer: str) -> list[JudgeAsk]:
        raise NotImplementedError

    def parse(self, ask: JudgeAsk, text: str):
        """The verdict in the judge's reply, or None when it has none."""
        raise NotImplementedError

    def values(self, doc, answer: str, verdicts: dict) -> dict:
        """The sample's values from its verdicts by tag (an unparsed ask's verdict is None)."""
        raise NotImplementedError

    def declarations(self) -> tuple:
        """The ``Metric``/``MetricGroup`` objects this metric's sample values feed."""
        raise NotImplementedError

    def consistent(self, doc, verdicts: dict) -> Optional[bool]:
        """Pairwise: whether the two orders gave the same preference (None: not pairwise, or unparsed)."""
        return None

    def extra(self, doc, answer: str, verdicts: dict) -> dict:
        """Anything more the sample should record about this metric (default nothing)."""
        return {}


def metrics_of(task) -> tuple:
    """The task's judged metrics (``judged_metrics()`` when it has one, else ``judged``)."""
    fn = getattr(task, "judged_metrics", None)
    out = tuple(fn() if callable(fn) else getattr(task, "judged", ()) or ())
    for m in out:
        if not isinstance(m, JudgedMetric) or not m.name or m.kind not in KINDS:
            raise TypeError(f"task {getattr(task, 'name', task)}: judged metric {m!r} needs a name and a kind "
                            f"in {', '.join(KINDS)}")
    return out


def declarations_of(task) -> tuple:
    return tuple(d for m in metrics_of(task) for d in m.declarations())


def answer_text(responses: list) -> str:
    """The answer a judge reads: the text of the doc's first completion (after the trace split)."""
    try:
        first = responses[0][0]
    except (IndexError, TypeError):
        return ""
    return first if isinstance(first, str) else (getattr(first, "text", "") or "")


def asks_of(task, metric: JudgedMetric, doc, answer: str) -> list:
    """The metric's asks about one answer, with the task's ``judge_max_tokens`` when set."""
    asks = metric.asks(doc, answer)
    cap = (getattr(task, "options", None) or {}).get(MAX_TOKENS_OPTION)
    if cap is None:
        return asks
    try:
        cap = int(cap)
    except (TypeError, ValueError):
        raise ValueError(f"--task-args {task.name}:{MAX_TOKENS_OPTION}={cap!r}: expected a whole number") from None
    return [dataclasses.replace(a, max_tokens=cap) for a in asks]


def requests(task, doc, responses: list) -> list:
    """The judge requests of one doc's answer, every judged metric of the task."""
    answer = answer_text(responses)
    return [a.request() for m in metrics_of(task) for a in asks_of(task, m, doc, answer)]


def prompt_hash(asks: Sequence[JudgeAsk]) -> str:
    blob = json.dumps([[a.tag, [list(x) for x in a.messages]] for a in asks], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def verdicts_of(metric: JudgedMetric, asks: Sequence[JudgeAsk], judgments: dict) -> tuple[dict, list]:
    """{tag: verdict} from the judge's replies, and the tags with no verdict (or no reply)."""
    verdicts, failed = {}, []
    for a in asks:
        reply = judgments.get(a.request().key())
        text = answer_text([reply]) if reply is not None else None
        v = metric.parse(a, text) if text is not None else None
        verdicts[a.tag] = v
        if v is None:
            failed.append(a.tag)
    return verdicts, failed


def judge_answer(task, metric: JudgedMetric, doc, answer, judgments: dict,
                 second: Optional[dict] = None) -> tuple[dict, dict]:
    """One answer's values from the judge's replies, and its record (``extra["judged"][name]``): the
    verdicts by tag, the tags with no verdict, the prompts' sha256, the asks, pairwise consistency and,
    with ``second``, the second judge's verdicts."""
    asks = asks_of(task, metric, doc, answer)
    verdicts, failed = verdicts_of(metric, asks, judgments)
    rec = record_of(metric, doc, answer, asks, verdicts, failed)
    if second:
        rec["second_verdicts"] = verdicts_of(metric, asks, second)[0]
    return metric.values(doc, answer, verdicts), rec


def record_of(metric: JudgedMetric, doc, answer, asks: Sequence[JudgeAsk], verdicts: dict, failed: list) -> dict:
    """What a sample records of one judged metric (``extra["judged"][name]``), from its asks and verdicts
    (a judge that retries, MT-Bench's, gives its final verdicts here)."""
    return {"kind": metric.kind, "verdicts": verdicts, "parse_failures": list(failed),
            "prompt_sha256": prompt_hash(asks), "asks": len(asks), "consistent": metric.consistent(doc, verdicts),
            **metric.extra(doc, answer, verdicts)}


def merge_records(records: Sequence[dict]) -> dict:
    """One sample's record from the records of its several answers (τ²-bench's trials): tags become
    ``"K:tag"`` (K the answer's index), asks add up; a pairwise game is consistent when every answer's was."""
    if len(records) == 1:
        return records[0]
    tagged = lambda key: {f"{k}:{t}": v for k, r in enumerate(records) for t, v in (r.get(key) or {}).items()}  # noqa: E731
    out = {"kind": records[0]["kind"], "verdicts": tagged("verdicts"),
           "parse_failures": [f"{k}:{t}" for k, r in enumerate(records) for t in r["parse_failures"]],
           "prompt_sha256": hashlib.sha256("".join(r["prompt_sha256"] for r in records).encode()).hexdigest(),
           "asks": sum(r["asks"] for r in records), "answers": len(records)}
    flags = [r["consistent"] for r in records]
    out["consistent"] = None if any(f is None for f in flags) else all(flags)
    if any("second_verdicts" in r for r in records):
        out["second_verdicts"] = tagged("second_verdicts")
    return out


def apply(task, docs: Sequence, responses: Sequence[list], samples: list, judgments: dict,
          second: Optional[dict] = None) -> list:
    """Each sample with its judged metrics' values and ``extra["judged"]`` (samples are changed in place).
    ``second``: a second judge's replies to the same asks; each record then also holds its verdicts
    (``second_verdicts``); the figures are the first judge's. A metric the task has recorded itself
    (per trial, τ²-bench) is left as it is, and an optional one is left out without a judge."""
    metrics = [m for m in metrics_of(task) if judgments or not m.optional]
    if not metrics:
        return samples
    for doc, resp, s in zip(docs, responses, samples):
        answer = answer_text(resp)
        rec = s.extra.setdefault("judged", {})
        for m in metrics:
            if m.name in rec:
                continue
            values, rec[m.name] = judge_answer(task, m, doc, answer, judgments, second)
            s.metrics.update(values)
    return samples


def agreement(pairs: Sequence[tuple]) -> dict:
    """How often two judges gave the same verdict, over the asks both answered with one: the share
    (``agreement``), Cohen's kappa (chance agreement from each judge's own verdict frequencies; None when
    both always gave one and the same verdict) and their number."""
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    if not both:
        return {"agreement": None, "kappa": None, "agreement_asks": 0}
    key = lambda v: json.dumps(v, sort_keys=True, default=str)  # noqa: E731 (verdicts may be dicts or lists)
    n = len(both)
    observed = sum(key(a) == key(b) for a, b in both) / n
    first, second = {}, {}
    for a, b in both:
        first[key(a)] = first.get(key(a), 0) + 1
        second[key(b)] = second.get(key(b), 0) + 1
    chance = sum(first[k] * second.get(k, 0) for k in first) / n ** 2
    kappa = (observed - chance) / (1 - chance) if chance < 1 else None
    return {"agreement": observed, "kappa": kappa, "agreement_asks": n}


def reliability(task, samples: Sequence) -> dict:
    """Per judged metric: asks, parse failures and their rate, and pairwise the share of games whose
    two orders agreed (over games with both verdicts)."""
    out = {}
    for m in metrics_of(task):
        recs = [s.extra.get("judged", {}).get(m.name) for s in samples]
        recs = [r for r in recs if r]
        if not recs and m.optional:  # not asked: the run had no judge
            continue
        out[m.name] = figures_of(m, recs)
    return out


def figures_of(metric: JudgedMetric, records: Sequence[dict]) -> dict:
    """One judged metric's reliability over its samples' records (see ``reliability``)."""
    asks = sum(r["asks"] for r in records)
    failed = sum(len(r["parse_failures"]) for r in records)
    fig = {"kind": metric.kind, "asks": asks, "parse_failures": failed,
           "parse_failure_rate": failed / asks if asks else None}
    if metric.kind == "pairwise":
        both = [r["consistent"] for r in records if r["consistent"] is not None]
        fig["swap_consistency"] = sum(both) / len(both) if both else None
        fig["swap_games"] = len(both)
    if any("second_verdicts" in r for r in records):
        fig.update(agreement([(r["verdicts"].get(t), r["second_verdicts"].get(t)) for r in records
                              for t in r["verdicts"]]))
    return fig
