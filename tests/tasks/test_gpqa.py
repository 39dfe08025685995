"""GPQA diamond: the encrypted zip, seeded per-question permutations, MC and CoT scoring, the gated
hub message, and a run on the real tiny model.

The GPQA authors ask that questions never appear in plain text: these tests assert on counts, ids,
hashes and shapes only, and never put question text in an assertion (pytest would print it).
"""
from __future__ import annotations

import hashlib
import random
import zipfile
from collections import Counter

import pytest

from evalkit.taskapi import registry
from evalkit.scoring.choices import extract_answer_letter, permutation
from evalkit.taskapi.data import DataError
from evalkit.taskapi.requests import Completion, LoglikelihoodResult
from evalkit.taskapi.task import RunContext
from tests.conftest import shared

CSV_SHA256 = "41d1213cd7a4998605a26c2798500652572007161b3a92817ba46b35befcd305"  # SOURCE.txt
IDS_SHA256 = "6e8758b1e52defc47915335343df7a878c73db2064abd39f275ab65df095677d"  # sorted Record IDs
DOCS_SHA256 = "96e390696bf33f21bca6443f0ac4b20ad641f0f671ae6c534285edc45d7ef3de"  # Doc.hash() in file order


def gpqa(name="gpqa_diamond", **kw):
    return registry.get_task_class(name)(**kw)


def sha(x: str) -> str:
    return hashlib.sha256(x.encode()).hexdigest()


class Redacted(list):
    """A list of docs whose repr never shows their text (pytest prints fixture values on failure)."""

    def __repr__(self):
        return f"<{len(self)} GPQA docs, text redacted>"


@pytest.fixture(scope="module")
def docs():
    return Redacted(gpqa(data_path=str(shared("gpqa"))).eval_docs())


def test_reads_the_encrypted_zip(docs):
    assert len(docs) == 198 and len({d.id for d in docs}) == 198
    assert sha("\n".join(sorted(d.id for d in docs))) == IDS_SHA256
    assert sha("\n".join(d.hash() for d in docs)) == DOCS_SHA256
    assert Counter(d.meta["domain"] for d in docs) == {"Chemistry": 93, "Physics": 86, "Biology": 19}
    assert all(len(d.choices) == 4 and d.gold == 0 and d.choices[0] not in d.choices[1:] for d in docs)
    # a real quirk: two questions repeat a wrong option; scoring tracks positions, not texts
    assert sorted(d.id for d in docs if len(set(d.choices)) < 4) == ["recZSGUkn56v9kEp1", "recnGEpF1srQpaqWq"]


def test_zip_file_plain_csv_and_folder_agree(tmp_path, docs):
    z = shared("gpqa", "gpqa_diamond.zip")
    with zipfile.ZipFile(z) as f:
        blob = f.read("gpqa_diamond.csv", pwd=b"deserted-untie-orchid")
    digest = hashlib.sha256(blob).hexdigest()
    assert digest == CSV_SHA256
    plain = tmp_path / "gpqa_diamond.csv"
    plain.write_bytes(blob)
    for path in (z, plain, tmp_path):
        got = gpqa(data_path=str(path)).eval_docs()
        assert sha("".join(d.hash() for d in got)) == sha("".join(d.hash() for d in docs)), path.name


def test_wrong_password_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("EVALKIT_GPQA_PASSWORD", "not-the-password")
    with pytest.raises(DataError, match="cannot decrypt .*EVALKIT_GPQA_PASSWORD"):
        gpqa(data_path=str(shared("gpqa"))).eval_docs()


def test_gated_hub_dataset_says_what_to_do(monkeypatch):
    import datasets

    def gated(*a, **k):
        raise ConnectionError("Dataset 'Idavidrein/gpqa' is a gated dataset on the Hub. "
                              "You must be authenticated to access it.")
    monkeypatch.setattr(datasets, "load_dataset", gated)
    with pytest.raises(DataError, match=r"gated.*huggingface-cli login.*--data"):
        gpqa().eval_docs()
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(DataError, match="offline"):
        gpqa().eval_docs()


def test_permutations_are_seeded_per_question_not_global(docs):
    t = gpqa(data_path=str(shared("gpqa")))
    ctx = RunContext(seed=1234)
    random.seed(0)
    a = [t.permuted(d, ctx, 0).meta["perm"] for d in docs]
    random.seed(1)
    b = [t.permuted(d, ctx, 0).meta["perm"] for d in reversed(docs)][::-1]
    other_seed = [t.permuted(d, RunContext(seed=1235), 0).meta["perm"] for d in docs]
    second = [t.permuted(d, ctx, 1).meta["perm"] for d in docs]
    assert a == b  # no global random state, no dependence on order
    assert a != other_seed
    assert sum(x != y for x, y in zip(a, second)) > 150
    golds = Counter(p.index(0) for p in a)
    assert set(golds) == {0, 1, 2, 3} and max(golds.values()) < 80  # roughly uniform over 198
    tracked = all(shown.choices[shown.gold] == d.choices[0] and sorted(shown.choices) == sorted(d.choices)
                  for d in docs for shown in [t.permuted(d, ctx, 0)])
    assert tracked, "the gold follows its option through the permutation"
    assert permutation(4, 1, "x") == permutation(4, 1, "x") and sorted(permutation(4, 2, "y")) == [0, 1, 2, 3]


def test_mc_prompt_requests_and_scoring_with_k_permutations(docs):
    t = gpqa(data_path=str(shared("gpqa")), permutations=3)
    ctx = RunContext()
    doc = docs[7]
    reqs = t.requests(doc, ctx)
    shape = (len(reqs), [r.continuation for r in reqs[:4]], len({r.context for r in reqs}))
    assert shape == (12, [" (A)", " (B)", " (C)", " (D)"], 3)
    c = reqs[0].context
    ok = c.startswith("What is the correct answer to this question:") and c.endswith("\nAnswer:") and \
        c.count("\n(A) ") == c.count("\n(D) ") == 1
    assert ok, "prompt shape (text not shown)"
    golds = [t.permuted(doc, ctx, r).gold for r in range(3)]
    right = [x for r in range(3) for x in _ll(golds[r])]
    metrics, target = _plain(t.score(doc, right, ctx))
    assert metrics == {"acc": 1.0, "acc_norm": 1.0} and target == ["ABCD"[g] for g in golds]
    always_a = [x for r in range(3) for x in _ll(0)]
    metrics, _ = _plain(t.score(doc, always_a, ctx))
    assert metrics["acc"] == pytest.approx(sum(g == 0 for g in golds) / 3)
    samples = [t.score(d, [x for r in range(3) for x in _ll(0)], ctx) for d in docs]
    extra = t.run_extra(samples)
    assert extra["permutations"] == 3 and len(extra["acc_by_permutation"]) == 3
    assert extra["spread"] == max(extra["acc_by_permutation"]) - min(extra["acc_by_permutation"])
    assert extra["predicted_letter_counts"] == {"A": 3 * 198}
    groups = set(t.breakdowns(samples))
    assert groups == {"domain:Biology", "domain:Chemistry", "domain:Physics"}
    with pytest.raises(ValueError):
        gpqa(permutations=0)


def _plain(sample):
    """(metrics, target) of a sample: asserting on the Sample itself could print its prompt."""
    return dict(sample.metrics), sample.target


def _ll(best):
    return [LoglikelihoodResult(-1.0 if i == best else -4.0, i == best) for i in range(4)]


@pytest.mark.parametrize("text,letter,first,differ", [
    ("Reasoning...\nAnswer: (B)", "B", "B", False),
    ("Answer: A\n...on reflection...\nAnswer: C", "C", "A", True),
    ("**Answer:** D", "D", "D", False),
    ("Answer: $C$", "C", "C", False),
    ("Answer: \\boxed{A}", "A", "A", False),
    ("ANSWER : [B]", "B", "B", False),
    ("Answer: Because the ring is aromatic", None, None, False),
    ("answer: b", None, None, False),
    ("The answer is (B)", None, None, False),  # no colon: simple-evals' format is "Answer: X"
    ("Answer: E", None, None, False),          # not one of the four letters
    ("", None, None, False),
])
def test_answer_letter_extraction(text, letter, first, differ):
    a = extract_answer_letter(text)
    assert (a.letter, a.first, a.first_last_differ) == (letter, first, differ)


def test_cot_prompt_and_scoring(docs):
    t = gpqa("gpqa_diamond_cot", data_path=str(shared("gpqa")), permutations=2)
    ctx = RunContext()
    doc = docs[3]
    reqs = t.requests(doc, ctx)
    ok = len(reqs) == 2 and reqs[0].prompt.startswith("Answer the following multiple choice question.") and \
        reqs[0].prompt.count("\nA) ") == 1 and reqs[0].params.max_tokens == 2048
    assert ok, "prompt shape (text not shown)"
    # the same permutation as the loglikelihood task shows
    same = t.permuted(doc, ctx, 1).meta["perm"] == gpqa().permuted(doc, ctx, 1).meta["perm"]
    assert same
    golds = ["ABCD"[t.permuted(doc, ctx, r).gold] for r in range(2)]
    wrong = "ABCD"[("ABCD".index(golds[1]) + 1) % 4]
    resp = [[Completion(f"Answer: {wrong}\nAnswer: ({golds[0]})", "stop")], [Completion(f"Answer: {wrong}", "stop")]]
    s = t.score(doc, resp, ctx)
    metrics, preds = dict(s.metrics), list(s.extra["pred_letters"])
    assert metrics == {"acc": 0.5, "first_last_differ": 0.5 if wrong != golds[0] else 0.0, "no_answer": 0.0}
    assert preds == [golds[0], wrong]


@pytest.mark.slow
def test_gpqa_end_to_end_on_the_tiny_model(hf_backend, tmp_path):
    from evalkit.run.cache import ResponseCache
    from evalkit.records import load_run
    from evalkit.run.runner import RunConfig, evaluate
    z = str(shared("gpqa", "gpqa_diamond.zip"))
    cfg = RunConfig(tasks=["gpqa_diamond", "gpqa_diamond_cot"], limit=2, gen_overrides={"max_tokens": 8},
                    data_paths={"gpqa_diamond": z, "gpqa_diamond_cot": z},
                    task_options={"gpqa_diamond": {"permutations": 2}})
    cache = ResponseCache(tmp_path / "cache" / "responses.sqlite")
    out = evaluate(hf_backend, cfg, cache, str(tmp_path / "results"), progress=False)
    cache.close()
    run = load_run(out.path)
    mc = run.tasks["gpqa_diamond"]
    assert mc["n_docs"] == 2 and mc["extra"]["permutations"] == 2 and len(mc["extra"]["acc_by_permutation"]) == 2
    assert sum(mc["extra"]["predicted_letter_counts"].values()) == 4
    rows = list(run.samples("gpqa_diamond"))
    assert all(len(r["responses"]) == 2 and len(r["responses"][0]) == 4 for r in rows)
    assert run.data["engine"]["requested"] == 2 * 8 + 2
    cot = run.tasks["gpqa_diamond_cot"]
    assert cot["n_docs"] == 2 and {"acc", "first_last_differ", "no_answer"} <= set(cot["metrics"])


@pytest.mark.slow
@pytest.mark.vllm
def test_gpqa_through_vllm_agrees_with_hf(vllm_backend, hf_backend):
    from evalkit.run.cache import NullCache
    from evalkit.run.runner import RunConfig, evaluate
    z = str(shared("gpqa", "gpqa_diamond.zip"))
    cfg = RunConfig(tasks=["gpqa_diamond", "gpqa_diamond_cot"], limit=2, gen_overrides={"max_tokens": 8},
                    data_paths={"gpqa_diamond": z, "gpqa_diamond_cot": z},
                    task_options={"gpqa_diamond": {"permutations": 2}})
    ours = evaluate(vllm_backend, cfg, NullCache(), None, progress=False)
    ref = evaluate(hf_backend, cfg, NullCache(), None, progress=False)
    preds = [s["extracted"] for s in ours.samples["gpqa_diamond"]]
    assert preds == [s["extracted"] for s in ref.samples["gpqa_diamond"]] and all(len(p) == 2 for p in preds)
    cot = ours.to_dict()["tasks"]["gpqa_diamond_cot"]
    assert cot["n_docs"] == 2 and ours.to_dict()["model"]["backend"] == "vllm"
