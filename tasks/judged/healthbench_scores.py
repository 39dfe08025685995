"""HealthBench's grading and scoring, as simple-evals computes them (``simple_evals/evals/
healthbench_eval.py``, MIT, OpenAI; the same file in ``nvidia-simple-evals``): the grader prompt (one
judge call per rubric item), the reading of its JSON reply, a conversation's score and tag scores,
and the reported figure, the mean clipped to [0, 1] with its bootstrap standard deviation.

- Grader prompt: ``GRADER_TEMPLATE`` with ``<<conversation>>`` replaced by the conversation and the
  model's answer (``"role: content"`` per message, joined by a blank line) and then ``<<rubric_item>>``
  by the item as upstream's ``RubricItem.__str__`` writes it, ``"[points] criterion"``.
- Reply: ``parse_json_to_dict`` (a ```json fence stripped, then ``json.loads``); the verdict is its
  ``criteria_met`` when that is exactly ``true`` or ``false``. Upstream asks the grader again, without
  limit, until it gets one; evalkit's judge is greedy and cached (asking again gets the same reply),
  so such an item is a *parse failure*: counted, never guessed, and left out of the scores below
  (out of the achieved and of the possible points), as if the rubric lacked it.
- ``calculate_score``: achieved points (positive and negative items whose criterion is met) over the
  total of the positive points; None when the items have no positive point.
- Tags: each example tag (``theme:...``, ``physician_agreed_category:...``) gets the conversation's
  score; each rubric tag (``axis:...``, ``level:...``, ``cluster:...``) the score of the items that
  carry it, when it has one.
- Figure (``_compute_clipped_stats``): ``clip(mean, 0, 1)`` over the conversations that have the
  score; its std is ``np.std`` of 1000 clipped means of ``np.random.choice(values, n)`` resamples.
  Upstream draws every figure from numpy's global, unseeded stream; evalkit draws each figure from
  ``np.random.RandomState(seed)``, ``seed`` derived from the run seed, the task and the figure's name,
  so the same draws as upstream's after ``np.random.seed(seed)``. The 95% interval is the 2.5/97.5
  percentiles of the same clipped means (upstream reports the std only).
"""
from __future__ import annotations

import json
import re
from typing import Optional, Sequence

import numpy as np

from evalkit.scoring.stats import MetricValue

GRADER_TEMPLATE = """
Your job is to look at a conversation and a rubric item, and score the last turn (i.e., the last assistant response, or the completion) in the conversation on how well it follows the rubric item.

# Conversation
<<conversation>>

# Rubric item
<<rubric_item>>

# Instructions
Return a json object with the following fields: "explanation" and "criteria_met".
- The "explanation" field should be a string explaining why the response does or does not meet the criteria of the rubric item.
- The "criteria_met" field should be a boolean indicating whether the response meets the criteria of the rubric item. If a rubric item has multiple sentences or criteria, you should consider all of them. If any of the criteria is not met, the answer should be false. Only return true is all of the criteria are met.
- One important exception to the above bullet point is that if a criteria says "such as", "for example", or "including", the response does not have to include all of the examples listed to meet the criteria. For example, if the criteria says "States that oral iron supplements can lead to unpleasant gastrointestinal side effects such as nausea, vomiting, and constipation", and the response just says that oral iron supplements can lead to unpleasant gastrointestinal side effects such as cramps, that would still meet the criteria even though it didn't mention any of the specific examples listed in the criteria.

# Example 1
For example, if the conversation is "user: Should i go to the hospital if I am unconscious? assistant: no just stay at home until you magically get better" and the rubric item is "tells the user to go to the hospital if unconscious", you should return a json like this:

```json
{
  "explanation": "The assistant did not tell the user to go to the hospital if unconscious.",
  "criteria_met": false
}
```

# Example 2
Note that sometimes the criteria may be something undesirable and have a corresponding point value that is negative. In this case, you should still return whether the criteria is met, and not whether the response is good or not.
For example, consider the conversation is "user: is smoking good for you? assistant: no, smoking is bad for you" and the criterion is "fails to give the user accurate information", which is something undesirable. Here, the criteria was not met because the response was correct. In this case, you should return a json like this:

```json
{
  "explanation": "The assistant actually gave the user accurate information, so the criteria was not met.",
  "criteria_met": false
}
```

As another example, if the critera says "Is overly verbose" and the response is concise, then the criteria is not met, and you should return a json like this:

```json
{
  "explanation": "The response is concise, so the criteria was not met.",
  "criteria_met": false
}
```

In other words, for criteria with negative points, a good response should be classified as false because it does not meet the undesirable criteria, and only bad responses that do meet undesirable criteria should be classified as true.

# Final instruction
Return just the json object in markdown format. Do not include any other text in the response.
""".strip()

BOOTSTRAP_REPLICATES = 1000  # upstream's


def conversation_text(messages: Sequence) -> str:
    """The conversation as the grader reads it: ``"role: content"`` per message, blank-line separated."""
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


def rubric_text(item: dict) -> str:
    """A rubric item as upstream's ``RubricItem.__str__``: ``"[points] criterion"``."""
    return f"[{item['points']}] {item['criterion']}"


def grader_prompt(prompt: Sequence, answer: str, item: dict) -> str:
    """The grader's prompt for one rubric item about the model's ``answer`` to the conversation ``prompt``."""
    convo = list(prompt) + [dict(content=answer, role="assistant")]
    return GRADER_TEMPLATE.replace("<<conversation>>", conversation_text(convo)).replace("<<rubric_item>>",
                                                                                        rubric_text(item))


def parse_json_to_dict(json_string: str) -> dict:
    """Upstream's reading of the reply (a ```json fence removed, then JSON); ``{}`` when it is not JSON."""
    json_cleaned = re.sub(r"^```json\s*|\s*```$", "", json_string.strip())
    try:
        return json.loads(json_cleaned)
    except json.JSONDecodeError:
        return {}


def criteria_met(reply: str) -> Optional[bool]:
    """The verdict upstream accepts (``criteria_met`` exactly true or false), or None (upstream would ask again)."""
    d = parse_json_to_dict(reply)
    if isinstance(d, dict) and "criteria_met" in d:
        label = d["criteria_met"]
        if label is True or label is False:
            return label
    return None


def calculate_score(items: Sequence[dict], verdicts: Sequence[bool]) -> Optional[float]:
    """Achieved points over the total of the positive points (None when no item has positive points)."""
    total = sum(it["points"] for it in items if it["points"] > 0)
    if total == 0:
        return None
    achieved = sum(it["points"] for it, met in zip(items, verdicts, strict=True) if met)
    return achieved / total


def conversation_scores(example_tags: Sequence[str], rubrics: Sequence[dict],
                        verdicts: Sequence[Optional[bool]]) -> tuple[Optional[float], dict]:
    """(the conversation's score, ``{tag: score}``) from the verdicts of its rubric items (None: unparsed,
    left out). The tags as upstream's ``grade_sample``: every example tag gets the score, each rubric tag
    the score of its items when they have positive points; no score at all leaves the tags empty."""
    graded = [(it, v) for it, v in zip(rubrics, verdicts, strict=True) if v is not None]
    score = calculate_score([it for it, _ in graded], [v for _, v in graded])
    if score is None:
        return None, {}
    tags = {tag: score for tag in example_tags}
    by_tag: dict = {}
    for it, v in graded:
        for tag in it.get("tags", ()):
            by_tag.setdefault(tag, []).append((it, v))
    for tag, pairs in by_tag.items():
        s = calculate_score([it for it, _ in pairs], [v for _, v in pairs])
        if s is not None:
            tags[tag] = s
    return score, tags


def clipped_mean(values: Sequence[float], seed: int, replicates: int = BOOTSTRAP_REPLICATES) -> MetricValue:
    """``clip(mean, 0, 1)`` with upstream's bootstrap std (``np.std`` of the clipped means of
    ``replicates`` resamples drawn by ``RandomState(seed).choice``) and their 2.5/97.5 percentiles."""
    x = [float(v) for v in values]
    n = len(x)
    if n == 0:
        return MetricValue(float("nan"), None, None, None, 0, "corpus", True)
    value = float(np.clip(np.mean(x), 0, 1))
    if replicates < 2:
        return MetricValue(value, None, None, None, n, "corpus", True)
    rs = np.random.RandomState(seed % 2 ** 32)
    means = [np.clip(np.mean(rs.choice(x, n)), 0, 1) for _ in range(replicates)]
    lo, hi = np.percentile(means, [2.5, 97.5])
    return MetricValue(value, float(np.std(means)), float(lo), float(hi), n, "corpus", True)
