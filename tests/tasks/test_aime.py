"""AIME 2024/2025 (``evalkit.tasks.aime``): every data layout, integer answer extraction, the
model-card recipe with repeats end to end on the bundled model (in memory and through the session's
vLLM engine), and ``aime24_greedy``'s per-item verdicts equal to lm-eval's ``aime24`` run through
evalkit's catalog (``lm-eval:aime24``) on the same responses."""
from __future__ import annotations

import json

import pytest

from evalkit.run.cache import NullCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
from evalkit.taskapi.data import DataError
from evalkit.taskapi.items import RunContext
from evalkit.taskapi.registry import get_task_class
from evalkit.tasks.aime import INSTRUCTION, extract_integer

from conftest import shared
from _fakes import ScriptedBackend

AIME25_ANSWERS = [70, 588, 16, 117, 279, 504, 821, 77, 62, 81, 259, 510, 204, 60, 735,
                  468, 49, 82, 106, 336, 293, 237, 610, 149, 907, 113, 19, 248, 104, 240]  # SOURCE.txt


def docs(name, path):
    return get_task_class(name)(data_path=str(path)).eval_docs()


def test_every_layout_gives_the_same_problems_and_answers(tmp_path):
    qwq = docs("aime24", shared("aime", "qwq"))
    qwen = docs("aime24", shared("aime", "qwen2.5-math"))
    assert len(qwq) == len(qwen) == 30
    assert [d.target for d in qwq] == [d.target for d in qwen] and qwq[0].target == 204
    # QwQ's instruction suffix is stripped; its copy drops the [asy] figure code of two problems
    assert [i for i, (a, b) in enumerate(zip(qwq, qwen)) if a.query != b.query] == [21, 28]
    assert all(b.query.startswith(a.query) for a, b in zip(qwq, qwen))
    assert not qwq[0].query.endswith(INSTRUCTION) and qwen[0].id == "60" and qwq[0].id == "0"
    assert [d.target for d in docs("aime25", shared("aime", "qwq"))] == AIME25_ANSWERS
    raw = [json.loads(x) for x in shared("aime", "qwen2.5-math", "aime24", "test.jsonl").read_text().splitlines()]
    hub24 = tmp_path / "hub24.jsonl"  # Maxwell-Jia/AIME_2024's fields
    hub24.write_text("".join(json.dumps({"ID": f"2024-{r['id']}", "Problem": r["problem"], "Solution": r["solution"],
                                         "Answer": int(r["answer"])}) + "\n" for r in raw))
    hub = docs("aime24_greedy", hub24)
    assert [d.target for d in hub] == [d.target for d in qwq] and hub[0].id == "2024-60"
    hub25 = tmp_path / "test.jsonl"  # math-ai/aime25's fields
    hub25.write_text(json.dumps({"problem": "P", "answer": "70", "id": "0"}) + "\n")
    assert [(d.id, d.query, d.target) for d in docs("aime25", tmp_path)] == [("0", "P", 70)]


def test_bad_input_is_one_line_naming_the_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"problem": "P", "answer": "x"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1: field 'answer' should be an integer, got 'x'") as e:
        docs("aime24", bad)
    assert "\n" not in str(e.value)
    bad.write_text(json.dumps({"answer": 3}) + "\n")
    with pytest.raises(DataError, match=r"field 'Problem' is missing \(looked for Problem, problem, question"):
        docs("aime24", bad)


@pytest.mark.parametrize("text,want", [
    ("so \\boxed{033}", 33), ("\\boxed{12} then \\boxed{45}", 45), ("\\boxed{m+n=110}", 110),
    ("\\boxed{\\text{25}}", 25), ("no box: 12, then 45.", 45), ("the answer is 1,000", 1000),
    ("\\boxed{25.0}", 25), ("$\\boxed{7}$.", 7), ("nothing here", None), ("", None), ("\\boxed{x}", None)])
def test_integer_extraction(text, want):
    assert extract_integer(text) == want


def test_recipes():
    t, g = get_task_class("aime24")(), get_task_class("aime24_greedy")()
    p = t.gen_params
    assert (p.temperature, p.top_p, p.n, p.max_tokens) == (0.6, 0.95, 16, 32768)
    assert g.gen_params.greedy and g.gen_params.n == 1 and "Question:" in g.gen_params.stop
    doc = docs("aime24", shared("aime", "qwq"))[0]
    (req,) = t.requests(doc, RunContext())
    assert req.prompt is None and req.messages == (("user", f"{doc.query}\n{INSTRUCTION}"),), "chat by default"
    (raw,) = get_task_class("aime24")(chat="false").requests(doc, RunContext())
    assert raw.prompt == f"{doc.query}\n{INSTRUCTION}"
    (greedy,) = g.requests(doc, RunContext())
    assert greedy.prompt == f"Question: {doc.query}\nAnswer:"


# ---- lm-eval parity on the same responses ------------------------------------------------------
STYLES = ["so \\boxed{%d}", "$%d$", "\\boxed{0%d}", "The answer is %d", "\\fbox{%d} $x$ and $%d$",
          "\\boxed{%d} \\boxed{1}", "$\\boxed{%d}$", "\\boxed %d$", "answer: $m+n = %d$"]


def by_prompt(rows: list) -> ScriptedBackend:
    """Greedy answers in many styles (boxed, $...$, zero-padded, \\fbox, bare), some wrong."""
    def reply(r):
        i = [x["Problem"] for x in rows].index(r.prompt[len("Question: "):-len("\nAnswer:")])
        answer = rows[i]["Answer"] + (i % 2 if i >= 18 else 0)
        return STYLES[i % len(STYLES)].replace("%d", str(answer))
    return ScriptedBackend(reply, name="by-prompt")


def test_greedy_verdicts_equal_lm_evals_aime24_through_the_catalog(tmp_path):
    """``aime24_greedy`` and ``lm-eval:aime24`` (lm-eval's own config and ``process_results``) on a
    copy in Maxwell-Jia/AIME_2024's layout: the same 30 requests (the engine sends each once: same
    prompt, same parameters) and the same verdict on every item."""
    pytest.importorskip("lm_eval")
    raw = [json.loads(x) for x in shared("aime", "qwen2.5-math", "aime24", "test.jsonl").read_text().splitlines()]
    rows = [{"ID": f"2024-{r['id']}", "Problem": r["problem"], "Solution": r["solution"], "Answer": int(r["answer"])}
            for r in raw]
    hub = tmp_path / "hub"
    hub.mkdir()
    (hub / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    backend = by_prompt(rows)
    run = evaluate(backend, RunConfig(tasks=["aime24_greedy", "lm-eval:aime24"], gen_overrides={"max_tokens": 64},
                                      data_paths={"aime24_greedy": str(hub), "lm-eval:aime24": str(hub)}),
                   NullCache(), output_dir=None, progress=False)
    assert len(backend.prompts) == 30, "both tasks make the same 30 requests"
    ours = [r["metrics"]["exact_match"] for r in run.samples["aime24_greedy"]]
    theirs = [r["metrics"]["exact_match"] for r in run.samples["lm-eval:aime24"]]
    assert ours == theirs and sum(ours) == 11
    integer = [r["metrics"]["exact_match_integer"] for r in run.samples["aime24_greedy"]]
    assert sum(integer) > sum(ours), "zero-padded and bare answers are right as integers, wrong for lm-eval"


# ---- the bundled model, end to end ---------------------------------------------------------------
@pytest.mark.slow
def test_in_memory_model_with_repeats_and_a_larger_k_from_the_cache(tiny_model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import evalkit
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    opts = dict(tasks=["aime24"], limit=2, data={"aime24": str(shared("aime", "qwq"))},
                gen_kwargs={"max_tokens": 12}, cache_dir=str(tmp_path / "c"), progress=False)
    run2 = evalkit.evaluate(model=model, tokenizer=tok, repeats=2, output=str(tmp_path / "r"), **opts)
    assert run2.engine["computed"] == 4
    t = run2.tasks["aime24"]
    assert {"exact_match", "avg@2", "pass@1", "pass@2", "pass^2", "maj@2"} <= set(t.metrics)
    assert t.metrics["avg@2"]["n"] == 2 and t.extra["repeats"]["samples"] == 4
    rows = run2.samples["aime24"]
    assert all(len(r["responses"]) == 2 and r["extra"]["repeats"]["k"] == 2 for r in rows)
    run3 = evalkit.evaluate(model=(model, tok), repeats=3, output=None, **opts)
    assert run3.engine["cached"] == 4 and run3.engine["computed"] == 2, "only sample 3 of each problem is new"
    assert [r["responses"][:2] for r in run3.samples["aime24"]] == [r["responses"] for r in rows]


@pytest.mark.slow
@pytest.mark.vllm
def test_repeats_through_vllm(vllm_backend):
    cfg = RunConfig(tasks=["aime25"], limit=2, gen_overrides={"n": 2, "max_tokens": 16},
                    data_paths={"aime25": str(shared("aime", "qwq"))})
    out = evaluate(vllm_backend, cfg, NullCache(), None, progress=False)
    t = out.tasks["aime25"]
    assert t.metrics["avg@2"]["n"] == 2 and {"pass@2", "pass^2", "maj@2"} <= set(t.metrics)
    rows = out.samples["aime25"]
    assert all(len(r["responses"]) == 2 and len(r["extra"]["repeats"]["correct"]) == 2 for r in rows)
    assert len({x for r in rows for x in r["responses"]}) > 1, "sampled, with a seed per sample"
    again = evaluate(vllm_backend, cfg, NullCache(), None, progress=False).samples["aime25"]
    assert [r["responses"] for r in again] == [r["responses"] for r in rows], "seeded: the same samples"
