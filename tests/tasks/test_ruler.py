"""RULER's needle-in-a-haystack tasks: the generator against lm-eval's RULER port (its own
``prepare_niah.generate_samples`` in the same run, same seed, same tokenizer), determinism, needles
where the record says, and a short run on the bundled model."""
from __future__ import annotations

import random

import pytest

import evalkit
from _fakes import ScriptedBackend
from evalkit.tasks.ruler import niah
from evalkit.tasks.ruler.task import VARIANTS, effective_length

pytest.importorskip("wonderwords")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("lm_eval")
    from evalkit.util.nltk_punkt import ensure_punkt_tab
    ensure_punkt_tab()
    from lm_eval.tasks.ruler import prepare_niah
    return prepare_niah


@pytest.fixture(scope="module")
def essay(shared_data):
    text = (shared_data / "wikitext" / "wikitext-2-raw" / "wiki.test.raw").read_text(encoding="utf-8")
    return text[:400_000]  # a stand-in for Paul Graham's essays (not downloadable here)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_sequential_seeding_reproduces_lm_evals_samples(variant, reference, tokenizer, essay):
    from nltk import sent_tokenize
    kind, k_kind, v_kind, nk, nv, nq = VARIANTS[variant]
    assert niah.DEPTHS == [int(x) for x in reference.DEPTHS] and niah.words() == reference.WORDS
    hay_ref = reference.get_haystack(kind) if kind != "essay" else niah.haystack("essay", essay)
    kw = dict(max_seq_length=1024, type_haystack=kind, type_needle_k=k_kind, type_needle_v=v_kind,
              num_needle_k=nk, num_needle_v=nv, num_needle_q=nq, num_samples=3, template=niah.TEMPLATE)
    random.seed(7)
    want = reference.generate_samples(hay_ref, TOKENIZER=tokenizer, **kw)
    stream = random.Random(7)
    got = niah.generate(lambda t: len(tokenizer(t).input_ids), niah.haystack(kind, essay), size_rng=stream,
                        sample_rng=lambda i: stream, sent_tokenize=sent_tokenize, **kw)
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        assert {k: g[k] for k in w} == w  # input, outputs, length, max_length, gen_prefix, index


def test_item_seeding_is_deterministic_and_needles_are_where_the_record_says(tokenizer):
    count = lambda t: len(tokenizer(t, add_special_tokens=False).input_ids)  # noqa: E731
    make = lambda seed, n: niah.generate(  # noqa: E731
        count, niah.haystack("needle"), max_seq_length=2048, type_haystack="needle", type_needle_k="words",
        type_needle_v="numbers", num_samples=n, size_rng=random.Random(seed),
        sample_rng=lambda i: random.Random(seed * 1000 + i))
    a, b = make(3, 4), make(3, 2)
    assert [x["input"] for x in a[:2]] == [x["input"] for x in b]  # a sample does not depend on how many
    assert a != make(4, 4)
    for s in a:
        assert s["length"] <= 2048 and s["length"] > 1500
        for needle in s["needles"]:
            at = s["input"].find(needle)
            assert at > 0 and s["outputs"][0] in needle
            depth = count(s["input"][:at]) / count(s["input"])
            assert 0 <= depth <= 1


def test_effective_length_is_rulers_rule():
    assert effective_length({1024: 0.95, 2048: 0.9, 4096: 0.8, 8192: 0.9}, 0.856) == 2048
    assert effective_length({1024: 0.5}, 0.856) is None


@pytest.mark.slow
def test_the_bundled_model_finds_needles_at_1k_and_2k(tiny_model_dir, hf_backend, tmp_path):
    args = {"niah_single_1": {"lengths": "1024+2048", "samples": 2}}
    run = evalkit.evaluate(model=hf_backend, tasks=["niah_single_1"], output=str(tmp_path), cache_dir=str(tmp_path / "c"),
                           task_args=args, gen_kwargs={"max_tokens": 24})
    entry = run.tasks["niah_single_1"]
    assert set(entry.breakdowns) == {"length:1024", "length:2048"} and entry.metrics["score"].n == 4
    ruler = entry.extra["ruler"]
    assert set(ruler["per_length"]) == {"1024", "2048"} and ruler["threshold"] == 0.856
    assert ruler["effective_length"] in (None, 1024, 2048)
    rows = run.samples["niah_single_1"]
    assert all(r["extra"]["prompt_tokens"] < r["extra"]["length"] for r in rows)
    again = evalkit.evaluate(model=hf_backend, tasks=["niah_single_1"], output=None, cache_dir=str(tmp_path / "c"),
                             task_args=args, gen_kwargs={"max_tokens": 24})
    assert again.engine.get("computed", 0) == 0  # the same prompts: all from the cache
    assert [r["metrics"] for r in again.samples["niah_single_1"]] == [r["metrics"] for r in rows]


def test_the_leaderboard_draws_score_against_length(monkeypatch, tmp_path):
    """A RULER record (two models, scored by a scripted answerer) on the task page: the length curve."""
    import json
    import re
    from _dashboard_records import app_page
    from evalkit.dashboards.labels import task_family

    class Words:
        def encode(self, text, add_special_tokens=False):
            return text.split()

    def finder(reach: int) -> ScriptedBackend:
        """Finds the needle only in prompts shorter than ``reach`` characters."""
        def find(r):
            key = re.search(r"special magic number for (.+?) mentioned in the provided text\?", r.prompt).group(1)
            found = re.search(rf"for {re.escape(key)} is: (\d+)\.", r.prompt)
            return found.group(1) if found and len(r.prompt) < reach else "no idea"
        return ScriptedBackend(find, name="finder", identity={"model": f"finder-{reach}"}, tokenizer=Words())

    args = {"niah_multikey_2": {"lengths": "512+1024+2048", "samples": 3}}
    for reach in (4000, 50_000):
        evalkit.evaluate(model=finder(reach), tasks=["niah_multikey_2"], output=str(tmp_path), cache=False, task_args=args)
    at = app_page(tmp_path, monkeypatch)
    # RULER's tasks, its 13-task group, the depth x length grid and AA-LCR: one "long context" family
    assert {task_family(t) for t in ("niah_multikey_2", "ruler", "ruler_qa_squad", "niah_grid", "aa_lcr")} == {
        "long context"}
    at.sidebar.multiselect(key="f_family").set_value(["long context"])
    at.run()
    at.selectbox(key="bd_dim").set_value("length")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    curve = next(s for s in specs if "context length" in json.dumps(s))
    assert curve["layer"][1]["encoding"]["x"]["axis"]["values"] == [512, 1024, 2048]
    table = next(d.value for d in at.dataframe if "finder-4000" in d.value.columns)
    assert list(table.index) == ["1024", "2048", "512"] and "finder-50000" in table.columns
    assert table.loc["512", "finder-4000"].startswith("1") and table.loc["2048", "finder-4000"].startswith("0")
