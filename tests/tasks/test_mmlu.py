"""MMLU: both CSV layouts and the hub format, lm-eval's prompt, per-subject tasks, micro/macro
aggregation with breakdowns by subject and category, the CoT variant and one forward pass per
question on the real tiny model."""
from __future__ import annotations

import csv
from collections import Counter

import pytest

from evalkit.taskapi import registry
from evalkit.taskapi.data import DataError
from evalkit.taskapi.requests import Completion, LoglikelihoodResult
from evalkit.taskapi.task import RunContext
from evalkit.tasks.mmlu import CATEGORIES, SUBJECTS
from tests.conftest import shared

LETTERS = "ABCD"


def mmlu(name="mmlu", **kw):
    return registry.get_task_class(name)(**kw)


@pytest.fixture(scope="module")
def docs():
    return mmlu(data_path=str(shared("mmlu"))).eval_docs()


def test_loads_all_subjects_from_the_header_layout(docs):
    assert len(docs) == 14042 and len({d.id for d in docs}) == 14042
    per_subject = Counter(d.meta["subject"] for d in docs)
    assert set(per_subject) == set(SUBJECTS) and per_subject["abstract_algebra"] == 100
    assert per_subject["professional_law"] == 1534 and per_subject["anatomy"] == 135
    assert docs[0].id == "abstract_algebra-0" and docs[-1].id == "world_religions-170"
    assert Counter(d.gold for d in docs).keys() == {0, 1, 2, 3}
    assert set(Counter(SUBJECTS.values())) == set(CATEGORIES) and len(SUBJECTS) == 57


def test_every_subject_has_a_task():
    names = registry.all_tasks()
    assert all(f"mmlu_{s}" in names for s in SUBJECTS) and "mmlu_cot" in names
    t = mmlu("mmlu_anatomy", data_path=str(shared("mmlu")))
    d = t.eval_docs()
    assert len(d) == 135 and d[0].id == "anatomy-0" and {x.meta["subject"] for x in d} == {"anatomy"}
    assert len(registry.expand(["mmlu_high_school_*"])) == sum(s.startswith("high_school_") for s in SUBJECTS) == 14


def test_lm_eval_prompt_and_choices(docs):
    t = mmlu(data_path=str(shared("mmlu")))
    ctx = RunContext()
    doc = next(d for d in docs if d.id == "anatomy-3")
    prompt = t.prompt_text(doc, ctx)
    head = "The following are multiple choice questions (with answers) about anatomy.\n\n"
    assert prompt.startswith(head)
    blocks = prompt[len(head):].split("\n\n")
    assert len(blocks) == 6
    dev = [r for r in csv.reader(open(shared("mmlu", "dev", "anatomy_dev.csv"), encoding="utf-8"))][1:]
    for block, row in zip(blocks[:5], dev):  # the first five dev questions, in order, with their letters
        assert block == (f"{row[0].strip()}\nA. {row[1]}\nB. {row[2]}\nC. {row[3]}\nD. {row[4]}\n"
                         f"Answer: {LETTERS[int(row[5])]}")
    assert blocks[5] == f"{doc.query.strip()}\nA. {doc.choices[0]}\nB. {doc.choices[1]}\nC. {doc.choices[2]}\n" \
                        f"D. {doc.choices[3]}\nAnswer:"
    reqs = t.requests(doc, ctx)
    assert [r.continuation for r in reqs] == [" A", " B", " C", " D"] and len({r.context for r in reqs}) == 1
    assert t.requests(doc, RunContext(num_fewshot=0))[0].context == head + blocks[5]


def _write_original_layout(root, src):
    """The original data.tar layout: headerless CSVs with the answer as a letter."""
    for split in ("dev", "test"):
        (root / "data" / split).mkdir(parents=True)
        for f in sorted((src / split).glob("*.csv")):
            rows = list(csv.reader(open(f, encoding="utf-8", newline="")))[1:]
            with open(root / "data" / split / f.name, "w", encoding="utf-8", newline="") as out:
                csv.writer(out).writerows(r[:5] + [LETTERS[int(r[5])]] for r in rows)


def test_original_headerless_letter_csvs_give_the_same_docs(tmp_path, docs):
    _write_original_layout(tmp_path, shared("mmlu"))
    t = mmlu(data_path=str(tmp_path))
    orig = t.eval_docs()
    assert [d.hash() for d in orig] == [d.hash() for d in docs]
    ctx = RunContext()
    ref = mmlu(data_path=str(shared("mmlu")))
    assert t.prompt_text(orig[500], ctx) == ref.prompt_text(docs[500], ctx)


def test_bad_rows_name_the_file_and_line(tmp_path):
    for split in ("dev", "test"):
        (tmp_path / split).mkdir()
        (tmp_path / split / f"virology_{split}.csv").write_text("question,choice0,choice1,choice2,choice3,answer\n"
                                                                 "Q1,a,b,c,d,2\nQ2,a,b,c,d,E\n")
    with pytest.raises(DataError, match=r"virology_test.csv:3: .*answer.*'E'"):
        mmlu("mmlu_virology", data_path=str(tmp_path)).eval_docs()
    (tmp_path / "test" / "virology_test.csv").write_text("Q1,a,b,c,B\n")
    with pytest.raises(DataError, match=r"virology_test.csv:1: expected 6 columns"):
        mmlu("mmlu_virology", data_path=str(tmp_path)).eval_docs()
    with pytest.raises(DataError, match="missing 56 subject"):
        mmlu(data_path=str(tmp_path)).eval_docs()


def test_hub_records(monkeypatch):
    import datasets
    calls = []

    def fake_load(path, name=None, split=None):
        calls.append((path, name, split))
        rows = [{"question": f"q{i}?", "subject": s, "choices": ["w", "x", "y", "z"], "answer": i % 4}
                for s in ("anatomy", "virology") for i in range(6)]
        return rows
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    t = mmlu()
    d = t.eval_docs()
    assert calls == [("cais/mmlu", "all", "test")]
    assert [x.id for x in d[:2]] == ["anatomy-0", "anatomy-1"] and d[6].id == "virology-0" and d[3].gold == 3
    assert t.prompt_text(d[6], RunContext()).count("Answer: ") == 5 and calls[-1] == ("cais/mmlu", "all", "dev")
    assert [x.id for x in mmlu("mmlu_virology").eval_docs()] == [f"virology-{i}" for i in range(6)]
    assert calls[-1] == ("cais/mmlu", "virology", "test")


def _ll(best: int):
    return [LoglikelihoodResult(-1.0 if i == best else -3.0, i == best) for i in range(4)]


def test_micro_macro_and_breakdowns(docs):
    t = mmlu(data_path=str(shared("mmlu")))
    ctx = RunContext(num_fewshot=0)
    pick = [d for d in docs if d.meta["subject"] == "anatomy"][:4] + \
           [d for d in docs if d.meta["subject"] == "philosophy"][:2]
    # anatomy: 4/4 right, philosophy: 0/2 right
    preds = [d.gold for d in pick[:4]] + [(d.gold + 1) % 4 for d in pick[4:]]
    samples = t.score_all(pick, [_ll(p) for p in preds], ctx)
    assert [s.extracted for s in samples] == [LETTERS[p] for p in preds]
    m = t.aggregate(samples, seed=1)
    assert m["acc"].value == pytest.approx(4 / 6) and m["acc"].n == 6
    assert m["acc_macro"].value == pytest.approx(0.5) and m["acc_macro"].kind == "macro"
    assert 0 <= m["acc_macro"].ci_low < 0.5 < m["acc_macro"].ci_high <= 1
    assert m["acc_norm"].value == m["acc"].value
    b = t.breakdowns(samples)
    assert set(b) == {"category:stem", "category:humanities", "subject:anatomy", "subject:philosophy"}
    assert b["subject:anatomy"]["acc"].value == 1.0 and b["category:humanities"]["acc"].value == 0.0
    assert b["category:stem"]["acc_macro"].value == 1.0 and b["subject:philosophy"]["acc"].n == 2


def test_cot_prompt_and_scoring(docs):
    t = mmlu("mmlu_cot", data_path=str(shared("mmlu")))
    doc = docs[0]
    (req,) = t.requests(doc, RunContext())
    assert req.prompt.startswith("Answer the following multiple choice question.") and "\nA) " in req.prompt
    assert req.params.max_tokens == 2048
    gold = LETTERS[doc.gold]
    wrong = LETTERS[(doc.gold + 1) % 4]
    cases = [(f"Let me think. Answer: {wrong}\nWait, no.\nAnswer: ({gold})", 1.0, 1.0),
             (f"**Answer:** {gold}", 1.0, 0.0), ("I am not sure.", 0.0, 0.0)]
    for text, acc, flag in cases:
        s = t.score(doc, [[Completion(text, "stop")]], RunContext())
        assert s.metrics["acc"] == acc and s.metrics["first_last_differ"] == flag
    assert s.metrics["no_answer"] == 1.0 and s.extra["category"] == "stem"


@pytest.mark.slow
def test_mmlu_end_to_end_one_forward_pass_per_question(hf_backend, tmp_path, monkeypatch):
    from evalkit.run.cache import ResponseCache
    from evalkit.records import load_run
    from evalkit.run.runner import RunConfig, evaluate
    rows, prefixes = [], []
    real, real_shared = hf_backend._forward_logits, hf_backend._forward_shared_prefix
    monkeypatch.setattr(hf_backend, "_forward_logits", lambda seqs: rows.append(len(seqs)) or real(seqs))
    monkeypatch.setattr(hf_backend, "_forward_shared_prefix", lambda inputs, conts, p, members, read:
                        rows.append(len(members)) or prefixes.append(p) or real_shared(inputs, conts, p, members, read))
    data = str(shared("mmlu"))
    cache = ResponseCache(tmp_path / "cache" / "responses.sqlite")
    cfg = RunConfig(tasks=["mmlu"], limit=3, num_fewshot=1, data_paths={"mmlu": data})
    out = evaluate(hf_backend, cfg, cache, str(tmp_path / "results"), progress=False)
    assert sum(rows) == 3  # 3 questions x 4 one-token choices: one row per question
    assert len(prefixes) == 1 and prefixes[0] > 50, "the subject's header and 1-shot example run once"
    run = load_run(out.path)
    t = run.tasks["mmlu"]
    assert t["n_docs"] == 3 and {"acc", "acc_norm", "acc_macro", "acc_norm_macro"} <= set(t["metrics"])
    assert set(t["breakdowns"]) == {"category:stem", "subject:abstract_algebra"}
    samples = list(run.samples("mmlu"))
    assert [s["doc_id"] for s in samples] == ["abstract_algebra-0", "abstract_algebra-1", "abstract_algebra-2"]
    assert all(s["extracted"] in LETTERS and len(s["responses"]) == 4 for s in samples)
    # the chat-model variant, through the chat template
    cfg = RunConfig(tasks=["mmlu_cot"], limit=2, apply_chat_template=True, data_paths={"mmlu_cot": data},
                    gen_overrides={"max_tokens": 12})
    out = evaluate(hf_backend, cfg, cache, str(tmp_path / "results"), progress=False)
    cache.close()
    cot = list(load_run(out.path).samples("mmlu_cot"))
    assert len(cot) == 2 and all(isinstance(s["extracted"], dict) for s in cot)
    assert cot[0]["prompt"][-1]["content"].startswith("Answer the following multiple choice question.")


@pytest.mark.slow
@pytest.mark.vllm
def test_mmlu_through_vllm_agrees_with_hf(vllm_backend, hf_backend, tmp_path):
    from evalkit.run.cache import NullCache
    from evalkit.run.runner import RunConfig, evaluate
    cfg = RunConfig(tasks=["mmlu_anatomy"], limit=4, num_fewshot=2, data_paths={"mmlu_anatomy": str(shared("mmlu"))})
    before = vllm_backend.stats.get("engine_requests", 0)
    ours = evaluate(vllm_backend, cfg, NullCache(), None, progress=False).samples["mmlu_anatomy"]
    assert vllm_backend.stats["engine_requests"] - before == 4  # one engine request (pass) per question
    ref = evaluate(hf_backend, cfg, NullCache(), None, progress=False).samples["mmlu_anatomy"]
    assert [s["extracted"] for s in ours] == [s["extracted"] for s in ref]
    for a, b in zip(ours, ref):
        assert [x[0] for x in a["responses"]] == pytest.approx([x[0] for x in b["responses"]], abs=2e-3)
