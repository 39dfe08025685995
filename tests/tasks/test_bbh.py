"""BIG-Bench Hard as native tasks (``evalkit.tasks.bbh``): the paper's prompts byte for byte, the
answer extraction on the bundled model's real outputs, the hub layout's loader, the micro/macro
reporting, and item-by-item parity with lm-eval's ``bbh_cot_fewshot_<subtask>`` and
``leaderboard_bbh_<subtask>`` on the same responses (lm-eval's own evaluator, answered by a replay LM)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.run.cache import NullCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
from evalkit.taskapi.data import DataError
from evalkit.taskapi.items import RunContext
from evalkit.taskapi.registry import get_task_class
from evalkit.taskapi.requests import LoglikelihoodResult
from evalkit.tasks.bbh.cot import INVALID, extract_answer
from evalkit.tasks.bbh.data import SUBTASKS
from evalkit.tasks.bbh.mc import MC_SUBTASKS

from conftest import shared
from _fakes import ScriptedBackend, hashed_logprob

REAL = json.loads((Path(__file__).parents[1] / "data" / "bbh_smollm2_outputs.json").read_text(encoding="utf-8"))
CUE = "\nA: Let's think step by step.\n"


@pytest.fixture(scope="module")
def bbh_dir() -> Path:
    return shared("bbh")


def task(name, data):
    return get_task_class(name)(data_path=str(data))


def scripted(texts: dict) -> ScriptedBackend:
    """Answers from a table: a generation by its prompt, a loglikelihood from a hash of the request
    (deterministic, distinct values); keeps every answer as the parity replay needs."""
    return ScriptedBackend(lambda r: texts.get(r.prompt, "no idea"), hashed_logprob)


def run(backend, tasks, data, limit, **kw):
    return evaluate(backend, RunConfig(tasks=list(tasks), limit=limit, data_paths=data, **kw), NullCache(),
                    output_dir=None, progress=False)


# ---- prompts ----------------------------------------------------------------------------------
def test_cot_prompts_are_the_papers_files_byte_for_byte(bbh_dir):
    """Every subtask's 3-shot prompt is the paper's cot-prompts file after its ``-----`` line, as
    bytes, then the item as lm-eval's ``bbh_cot_fewshot`` asks it; fewer shots rebuild the same text."""
    t = task("bbh_cot", bbh_dir)
    docs = t.docs_within_limit(t.eval_docs(), 1)
    assert [d.meta["subtask"] for d in docs] == list(SUBTASKS)
    for doc in docs:
        raw = (bbh_dir / "cot-prompts" / f"{doc.meta['subtask']}.txt").read_bytes()
        body = raw.split(b"-----\n", 1)[1]
        prompt = t.prompt_text(doc, RunContext()).encode("utf-8")
        assert prompt == body + b"\n\nQ: " + doc.query.encode("utf-8") + CUE.encode(), doc.meta["subtask"]
        p = t.cot_prompt(doc.meta["subtask"])
        assert len(p.exemplars) == 3
        assert "\n\n".join([p.description, *(f"Q: {q}\nA: {a}" for q, a, _ in p.exemplars)]).encode() == body
        zero = t.prompt_text(doc, RunContext(num_fewshot=0))
        assert zero == f"{p.description}\n\nQ: {doc.query}{CUE}"


def test_limit_takes_the_first_items_of_every_subtask_and_ids_name_them(bbh_dir):
    t = task("bbh_mc", bbh_dir)
    docs = t.docs_within_limit(t.eval_docs(), 2)
    assert len(docs) == 2 * 24 and [d.id for d in docs[:3]] == ["boolean_expressions-0", "boolean_expressions-1",
                                                                 "causal_judgement-0"]
    assert not {"dyck_languages", "word_sorting", "multistep_arithmetic_two"} & {d.meta["subtask"] for d in docs}
    assert len(task("bbh_cot", bbh_dir).eval_docs()) == 6511


def test_cot_prompts_against_lm_evals_copies(bbh_dir, shared_data, tmp_path):
    """lm-eval's ``bbh_cot_fewshot_*`` YAMLs copy the paper's exemplars: the prompts are equal for 26
    subtasks; in sports_understanding the paper continues each exemplar's chain of thought after a
    space on the cue line, lm-eval after a newline (evalkit keeps the paper's bytes)."""
    pytest.importorskip("lm_eval")
    import _lm_eval_replay as R
    from evalkit.tasks.lm_eval_catalog import catalog
    tm = catalog.manager()
    hub = R.bbh_hub(shared_data, tmp_path / "hub", SUBTASKS)
    t = task("bbh_cot", bbh_dir)
    differ = []
    for doc in t.docs_within_limit(t.eval_docs(), 1):
        s = doc.meta["subtask"]
        lm = R.lm_eval_task(tm, f"bbh_cot_fewshot_{s}", {"test": str(hub / s / "test.jsonl")})
        theirs, ours = lm.fewshot_context(lm.test_docs()[0], num_fewshot=3), t.prompt_text(doc, RunContext())
        if theirs != ours:
            differ.append(s)
            assert theirs.count("step by step.\n") - ours.count("step by step.\n") == 3
            assert theirs.replace("step by step.\n", "step by step. ") == ours.replace("step by step.\n", "step by step. ")
    assert differ == ["sports_understanding"]


# ---- answer extraction --------------------------------------------------------------------------
HAND = ["So the answer is (B).", "So the answer is ] } ].", "the answer is True", "The answer is 7.",
        "So the answer is valid.\nQ: next", "so the answer is 3. But the answer is 4.", "the answer is .", ""]


def lm_eval_filter():
    """lm-eval's filter of ``bbh_cot_fewshot_*``, with the pattern read from its installed config."""
    pytest.importorskip("lm_eval")
    import lm_eval
    import yaml
    from lm_eval.filters.extraction import RegexFilter
    cfg = yaml.safe_load((Path(lm_eval.__file__).parent / "tasks" / "bbh" / "cot_fewshot" /
                          "_cot_fewshot_template_yaml").read_text())
    (steps,) = [f["filter"] for f in cfg["filter_list"] if f["name"] == "get-answer"]
    assert [s["function"] for s in steps] == ["regex", "take_first"]
    return RegexFilter(regex_pattern=steps[0]["regex_pattern"])


def test_extraction_on_real_outputs_equals_lm_evals_filter():
    """47 real outputs of the bundled model (16 from hf with 160 tokens, the 31 of the vLLM
    measurement that reached an answer) and hand-made edge cases: lm-eval's filter, answer for answer."""
    texts = list(REAL["hf"]["outputs"].values()) + list(REAL["vllm"]["outputs"].values()) + HAND
    assert len(texts) == 16 + 31 + len(HAND)
    ref = lm_eval_filter().apply([[x] for x in texts], [{}] * len(texts))
    assert [extract_answer(x) for x in texts] == [r[0] for r in ref]
    assert {extract_answer(x) for x in REAL["vllm"]["outputs"].values()} == {
        "Yes", "no", "yes", "12", *(f"({c})" for c in "BCDE")}
    got = {k: extract_answer(v) for k, v in REAL["hf"]["outputs"].items()}
    assert got["date_understanding-0"] == "(D)" and got["sports_understanding-1"] == "yes"
    assert got["word_sorting-0"] == INVALID  # cut at max_tokens before any answer
    assert [extract_answer(x) for x in HAND[:4]] == ["(B)", "] } ]", "Tru", INVALID]  # lm-eval's quirks kept


# ---- data: the hub layout ----------------------------------------------------------------------
def hub_fixture(root: Path, bbh_dir: Path, subtasks, n=3) -> Path:
    """``SaylorTwift/bbh``'s layout: ``<subtask>/test-00000-of-00001.parquet`` with input, target."""
    import datasets
    for s in subtasks:
        rows = json.loads((bbh_dir / "bbh" / f"{s}.json").read_text(encoding="utf-8"))["examples"][:n]
        (root / s).mkdir(parents=True)
        datasets.Dataset.from_list(rows).to_parquet(str(root / s / "test-00000-of-00001.parquet"))
    (root / "cot-prompts").symlink_to(bbh_dir / "cot-prompts")
    return root


def test_hub_layout_local_and_through_datasets(bbh_dir, tmp_path, monkeypatch):
    """The hub dataset's files read as a ``--data`` folder, and the hub loader (one config per
    subtask) on the same files: the same docs as the paper's JSON gives."""
    pytest.importorskip("datasets")
    import datasets
    root = hub_fixture(tmp_path / "bbh", bbh_dir, SUBTASKS)
    paper = task("bbh_cot", bbh_dir)
    want = paper.docs_within_limit(paper.eval_docs(), 3)
    assert task("bbh_cot", root).eval_docs() == want
    calls, real_load = [], datasets.load_dataset

    def load_dataset(path, name=None, split=None):
        calls.append((path, name, split))
        return real_load("parquet", data_files=str(root / name / "test-00000-of-00001.parquet"), split="train")
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    hub = get_task_class("bbh_cot")()
    assert hub.eval_docs() == want
    assert calls == [("SaylorTwift/bbh", s, "test") for s in SUBTASKS]
    mc = get_task_class("bbh_mc_snarks")(data_path=str(root)).eval_docs()
    assert [d.id for d in mc] == ["snarks-0", "snarks-1", "snarks-2"] and mc[0].choices == ["(A)", "(B)"]


def test_bad_input_is_one_line_naming_file_and_field(bbh_dir, tmp_path):
    root = tmp_path / "bad"
    (root / "bbh").mkdir(parents=True)
    (root / "cot-prompts").symlink_to(bbh_dir / "cot-prompts")
    (root / "bbh" / "snarks.json").write_text(json.dumps({"examples": [{"input": "q", "target": "(A)"}, {"input": "q"}]}))
    with pytest.raises(DataError, match=r"snarks\.json:examples:2: field 'target' is missing"):
        task("bbh_cot_snarks", root).eval_docs()
    (root / "bbh" / "snarks.json").write_text(json.dumps([{"input": "q", "target": "(A)"}]))
    with pytest.raises(DataError, match=r"snarks\.json: field 'examples' is missing"):
        task("bbh_cot_snarks", root).eval_docs()
    with pytest.raises(DataError, match="no data for BBH subtask 'navigate'"):
        task("bbh_cot_navigate", root).eval_docs()
    t = get_task_class("bbh_cot_boolean_expressions")()
    with pytest.raises(DataError, match="cot-prompts are in no hub dataset"):
        t.cot_prompt("boolean_expressions")
    prompts = tmp_path / "p" / "cot-prompts"
    prompts.mkdir(parents=True)
    (prompts / "navigate.txt").write_text("canary\n-----\nTask.\n\nQ: x\nA: Let's think step by step.\nSo yes.")
    with pytest.raises(DataError, match=r"navigate\.txt: exemplar 1: does not end with 'So the answer is X\.'"):
        task("bbh_cot_navigate", prompts.parent).cot_prompt("navigate")
    (prompts / "navigate.txt").write_text("Task.\n\nQ: x\nA: y")
    with pytest.raises(DataError, match=r"navigate\.txt: no '-----' line"):
        task("bbh_cot_navigate", prompts.parent).cot_prompt("navigate")


# ---- scoring and reporting -----------------------------------------------------------------------
def test_micro_macro_and_subtask_breakdowns(bbh_dir):
    """All 27 subtasks, 2 items each, answered right for the first item of the first 9 subtasks:
    micro = 9/54, macro = mean of subtask means = (9 * 0.5) / 27, one breakdown per subtask."""
    t = task("bbh_cot", bbh_dir)
    docs = t.docs_within_limit(t.eval_docs(), 2)
    right = {t.prompt_text(d, RunContext()): f"... So the answer is {d.target}."
             for d in docs if d.id.endswith("-0") and SUBTASKS.index(d.meta["subtask"]) < 9}
    got = run(scripted(right), ["bbh_cot"], {"bbh_cot": str(bbh_dir)}, limit=2)
    entry = got.tasks["bbh_cot"]
    m = entry.metrics
    assert m["exact_match"]["n"] == 54 and m["exact_match"]["value"] == pytest.approx(9 / 54)
    assert m["exact_match_macro"]["value"] == pytest.approx(4.5 / 27) and m["exact_match_macro"]["n"] == 54
    for k in ("exact_match", "exact_match_macro"):
        assert m[k]["ci_low"] < m[k]["value"] < m[k]["ci_high"]
    assert m["no_answer"]["value"] == pytest.approx(45 / 54)
    assert sorted(entry.breakdowns) == sorted(f"subtask:{s}" for s in SUBTASKS)
    assert entry.breakdowns["subtask:boolean_expressions"]["exact_match"]["value"] == 0.5


def test_mc_item_whose_target_is_not_an_option_scores_wrong_as_in_lm_eval(bbh_dir):
    t = task("bbh_mc_ruin_names", bbh_dir)
    docs = t.eval_docs()
    bad = [d for d in docs if d.gold is None]
    assert [d.id for d in bad] == ["ruin_names-99", "ruin_names-144"]
    s = t.score(bad[0], [LoglikelihoodResult(-1.0, True)] + [LoglikelihoodResult(-9.0, False)] * 5, RunContext())
    assert s.metrics == {"acc": 0.0, "acc_norm": 0.0} and s.extra["target_not_an_option"]
    got = run(scripted({}), ["bbh_mc_ruin_names"], {"bbh_mc_ruin_names": str(bbh_dir)}, limit=150)
    assert got.tasks["bbh_mc_ruin_names"].extra == {"targets_not_an_option": ["ruin_names-99", "ruin_names-144"]}


# ---- parity with lm-eval on the same responses ---------------------------------------------------
def lm_eval_side(shared_data, tmp_path, names, subtasks, answers, limit):
    pytest.importorskip("lm_eval")
    import _lm_eval_replay as R
    from evalkit.tasks.lm_eval_catalog import catalog
    tm = catalog.manager()
    hub = R.bbh_hub(shared_data, tmp_path / "hub", subtasks)
    built = [R.lm_eval_task(tm, f"{n}{s}", {"test": str(hub / s / "test.jsonl")}) for n in names for s in subtasks]
    return R.lm_eval_run(built, limit, tm, lm=R.replay_lm(answers))


def assert_same_verdicts(got, lm, pairs, metrics):
    n = 0
    for ek, lm_task, subtask in pairs:
        rows = {r["doc_id"]: r for r in got.samples[ek]}
        for s in lm["samples"][lm_task]:
            row = rows[f"{subtask}-{s['doc_id']}"]
            for m in metrics:
                assert row["metrics"][m] == s[m], (ek, s["doc_id"], m, row["metrics"][m], s[m])
                n += 1
            if "filtered_resps" in s and isinstance(s["filtered_resps"][0], str):
                assert row["extracted"] == s["filtered_resps"][0]
    return n


@pytest.mark.parametrize("source,subtasks,limit,right", [
    ("hf", ["boolean_expressions", "date_understanding"], 2, 1),
    ("vllm", ["causal_judgement", "logical_deduction_three_objects", "snarks", "temporal_sequences"], 5, 5)])
def test_cot_verdicts_equal_lm_evals_on_the_models_real_outputs(source, subtasks, limit, right, bbh_dir, shared_data,
                                                                 tmp_path):
    """evalkit's requests answered with the bundled model's recorded outputs (an item whose output
    reached no answer is not stored: "no idea" stands in); lm-eval's ``bbh_cot_fewshot_*`` asks for
    exactly the same prompts (the replay fails otherwise) and gives the same extracted answers and
    verdicts per item."""
    texts = {}
    for s in subtasks:
        t = task(f"bbh_cot_{s}", bbh_dir)
        for d in t.eval_docs()[:limit]:
            texts[t.prompt_text(d, RunContext())] = REAL[source]["outputs"].get(d.id, "no idea")
    backend = scripted(texts)
    names = [f"bbh_cot_{s}" for s in subtasks]
    got = run(backend, names, {n: str(bbh_dir) for n in names}, limit=limit)
    assert sum(r["metrics"]["exact_match"] for n in names for r in got.samples[n]) == right
    lm = lm_eval_side(shared_data, tmp_path, ["bbh_cot_fewshot_"], subtasks, backend.answers, limit)
    pairs = [(f"bbh_cot_{s}", f"bbh_cot_fewshot_{s}", s) for s in subtasks]
    assert assert_same_verdicts(got, lm, pairs, ["exact_match"]) == limit * len(subtasks)
    for ek, lm_task, _ in pairs:
        assert got.tasks[ek].metrics["exact_match"]["value"] == lm["results"][lm_task]["exact_match,get-answer"]


def test_mc_verdicts_equal_the_leaderboards_on_the_real_model(hf_backend, bbh_dir, shared_data, tmp_path):
    """bbh_mc_{boolean_expressions,date_understanding} on the bundled model (real loglikelihoods):
    lm-eval's ``leaderboard_bbh_*`` makes the same requests and gives the same acc and acc_norm."""
    import _lm_eval_replay as R
    subtasks = ["boolean_expressions", "date_understanding"]
    names = [f"bbh_mc_{s}" for s in subtasks]
    rec = R.Recording(hf_backend)
    got = run(rec, names, {n: str(bbh_dir) for n in names}, limit=2)
    lm = lm_eval_side(shared_data, tmp_path, ["leaderboard_bbh_"], subtasks, rec.answers, 2)
    pairs = [(f"bbh_mc_{s}", f"leaderboard_bbh_{s}", s) for s in subtasks]
    assert assert_same_verdicts(got, lm, pairs, ["acc_norm"]) == 4
    for ek, lm_task, _ in pairs:
        assert got.tasks[ek].metrics["acc_norm"]["value"] == lm["results"][lm_task]["acc_norm,none"]


def test_mc_prompts_equal_the_leaderboards_for_all_24_subtasks(bbh_dir, shared_data, tmp_path):
    """Every subtask's requests (context and each option) are lm-eval's ``leaderboard_bbh_*``'s,
    hashed loglikelihoods standing in for a model."""
    backend = scripted({})
    got = run(backend, ["bbh_mc"], {"bbh_mc": str(bbh_dir)}, limit=1)
    lm = lm_eval_side(shared_data, tmp_path, ["leaderboard_bbh_"], list(MC_SUBTASKS), backend.answers, 1)
    pairs = []
    for s in MC_SUBTASKS:
        got.samples[f"bbh_mc_{s}"] = got.samples["bbh_mc"]
        pairs.append((f"bbh_mc_{s}", f"leaderboard_bbh_{s}", s))
    assert assert_same_verdicts(got, lm, pairs, ["acc_norm"]) == 24  # the leaderboard reports acc_norm only
    assert got.tasks["bbh_mc"].metrics["acc_norm"]["n"] == 24
