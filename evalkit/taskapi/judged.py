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


def apply(task, docs: Sequence, responses: Sequence[list], samples: list, judgments: dict,
          second: Optional[dict] = None) -> list:
    """Each sample with its judged metrics' values and ``extra["judged"]`` (samples are changed in place).
    ``second``: a second judge's replies to the same asks; each record then also holds its verdicts
    (``second_verdicts``); the figures are the first judge's."""
    metrics = metrics_of(task)
    if not metrics:
        return samples
    for doc, resp, s in zip(docs, responses, samples):
        answer = answer_text(resp)
        rec = s.extra.setdefault("judged", {})
        for m in metrics:
            asks = asks_of(task, m, doc, answer)
            verdicts, failed = verdicts_of(m, asks, judgments)
            s.metrics.update(m.values(doc, answer, verdicts))
            rec[m.name] = {"kind": m.kind, "verdicts": verdicts, "parse_failures": failed,
                           "prompt_sha256": prompt_hash(asks), "asks": len(asks),
                           "consistent": m.consistent(doc, verdicts), **m.extra(doc, answer, verdicts)}
            if second:
                rec[m.name]["second_verdicts"] = verdicts_of(m, asks, second)[0]
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
        asks = sum(r["asks"] for r in recs)
        failed = sum(len(r["parse_failures"]) for r in recs)
        fig = {"kind": m.kind, "asks": asks, "parse_failures": failed,
               "parse_failure_rate": failed / asks if asks else None}
        if m.kind == "pairwise":
            both = [r["consistent"] for r in recs if r["consistent"] is not None]
            fig["swap_consistency"] = sum(both) / len(both) if both else None
            fig["swap_games"] = len(both)
        if any("second_verdicts" in r for r in recs):
            fig.update(agreement([(r["verdicts"].get(t), r["second_verdicts"].get(t)) for r in recs
                                  for t in r["verdicts"]]))
        out[m.name] = fig
    return out
