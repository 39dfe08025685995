"""Writes real Inspect logs offline (run as a script: ``python _make_logs.py OUT_DIR``): Inspect's
``mockllm/model`` provider answers from a fixed table, no network, no model.

- ``OUT/tiny_eval/*.eval`` and ``OUT/tiny_json/*.json``: task ``tiny_task``, 3 samples x 2 epochs,
  scorers ``match()`` (letters C/I) and ``length_score`` (a number); every answer sets its usage.
- ``OUT/gsm/*.eval``: task ``gsm_inspect``, GSM8K questions as Inspect datasets hold them (raw question,
  numeric target, ids 1..N), 1 epoch, scorer ``match(numeric=True)``.
"""
from __future__ import annotations

import collections
import json
import sys

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, match, mean, scorer, stderr
from inspect_ai.solver import generate

#: question -> the answers of epoch 1 and 2 (concurrent epochs get them in either order)
ANSWERS = {"What is 1+1?": ["2", "2"], "What is 2+2?": ["4", "5"], "Capital of France?": ["Lyon", "Lyon"]}
TINY = [("a", "What is 1+1?", "2"), ("b", "What is 2+2?", "4"), ("c", "Capital of France?", "Paris")]


@scorer(metrics=[mean(), stderr()])
def length_score():
    async def score(state, target):
        return Score(value=len(state.output.completion) / 10.0, answer=state.output.completion)
    return score


def mock(table):
    seen = collections.Counter()

    def outputs(messages, tools, tool_choice, config):
        q = messages[-1].text
        k = seen[q]
        seen[q] += 1
        text = table[q][k % len(table[q])]
        words = len(q.split())
        return ModelOutput(model="mockllm/model", choices=[{"message": {"role": "assistant", "content": text,
                                                                         "source": "generate"}, "stop_reason": "stop"}],
                           usage=ModelUsage(input_tokens=words, output_tokens=len(text),
                                            total_tokens=words + len(text)))
    return get_model("mockllm/model", custom_outputs=outputs)


def main(out: str, gsm_json: str) -> None:
    tiny = Task(dataset=MemoryDataset([Sample(input=q, target=t, id=i) for i, q, t in TINY], name="tiny"),
                solver=[generate()], scorer=[match(), length_score()], name="tiny_task")
    for fmt in ("eval", "json"):
        [log] = inspect_eval(tiny, model=mock(ANSWERS), epochs=2, log_dir=f"{out}/tiny_{fmt}", log_format=fmt,
                             display="none")
        assert log.status == "success", log.error
    gsm = json.loads(gsm_json)  # [[question, answer, model's answer], ...]
    task = Task(dataset=MemoryDataset([Sample(input=q, target=a) for q, a, _ in gsm], name="gsm_local"),
                solver=[generate()], scorer=match(numeric=True), name="gsm_inspect")
    [log] = inspect_eval(task, model=mock({q: [m] for q, _, m in gsm}), log_dir=f"{out}/gsm", log_format="eval",
                         display="none")
    assert log.status == "success", log.error


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
