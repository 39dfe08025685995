"""lm-eval's tasks through evalkit equal lm-eval itself, item by item, in the same test.

evalkit runs each task on the bundled SmolLM2 (transformers backend) from local copies of
``../shared/data`` in the hub layouts; lm-eval's own ``simple_evaluate`` then runs the same task
config on the same files with an LM that replays evalkit's recorded answers and fails on any
request evalkit did not make. Equal: every prompt (lm-eval's ``prompt_hash``), every per-doc metric
under every filter, every aggregate (means of 0/1 values exactly; other means to 1e-12, numpy's
pairwise sum against lm-eval's ``sum/len``), and a group's ``weight_by_size`` aggregate.
"""
from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("lm_eval")

import _lm_eval_replay as R  # noqa: E402
from evalkit.run.cache import NullCache  # noqa: E402
from evalkit.run.config import RunConfig  # noqa: E402
from evalkit.run.runner import evaluate  # noqa: E402

pytestmark = pytest.mark.slow

MMLU_SUBJECTS = ("abstract_algebra", "anatomy", "astronomy")


@pytest.fixture(scope="module")
def hub(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("hub")
    return {"mmlu": R.mmlu_hub(shared_data, root / "mmlu", MMLU_SUBJECTS),
            "gsm8k": R.gsm8k_hub(shared_data, root / "gsm8k"),
            "wikitext": R.wikitext_hub(shared_data, root / "wikitext"),
            "bbh": R.bbh_hub(shared_data, root / "bbh", ["boolean_expressions"])}


@pytest.fixture(scope="module")
def tm():
    from evalkit.tasks.lm_eval_catalog import catalog
    return catalog.manager()


@pytest.fixture(scope="module")
def recorder(hf_backend):
    return R.Recording(hf_backend)


def run_evalkit(recorder, tasks, data, limit, output_dir=None, **cfg):
    config = RunConfig(tasks=list(tasks), limit=limit, data_paths=data, **cfg)
    return evaluate(recorder, config, NullCache(), output_dir=output_dir, progress=False)


def metric_of(row: dict, name: str):
    if name in row["metrics"]:
        return row["metrics"][name]
    return row["extra"]["lm_eval"]["values"][name]


def same(a, b) -> bool:
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return float(a) == float(b)
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def assert_parity(run, ek_task: str, lm: dict, lm_task: str, rows_key=lambda r: int(r["extra"]["lm_eval"]["doc_id"])):
    rows = {rows_key(r): r for r in run.samples[ek_task]}
    lm_samples = lm["samples"][lm_task]
    assert lm_samples and len({s["doc_id"] for s in lm_samples}) == len(rows)
    compared = 0
    for s in lm_samples:
        row = rows[s["doc_id"]]
        assert row["extra"]["lm_eval"]["prompt_hash"] == s["prompt_hash"], (lm_task, s["doc_id"])
        for m in s["metrics"]:
            name = m if s["filter"] == "none" else f"{m},{s['filter']}"
            assert same(metric_of(row, name), s[m]), (lm_task, s["doc_id"], name, metric_of(row, name), s[m])
            compared += 1
    entry = run.tasks[ek_task]
    for key, value in lm["results"][lm_task].items():
        if "," not in key or "_stderr" in key:
            continue
        m, f = key.split(",", 1)
        name = m if f == "none" else key
        got = entry.metrics[name]["value"] if name in entry.metrics else entry.breakdowns[lm_task][name]["value"]
        assert math.isclose(got, value, rel_tol=1e-12, abs_tol=0), (lm_task, key, got, value)
    return compared


def test_mmlu_subject_and_a_weight_by_size_group(recorder, hub, tm, tmp_path):
    """lm-eval's ``mmlu_abstract_algebra`` (2-shot, first_n examples from dev) and a user's group of three
    subjects from an ``--include-path`` folder, aggregated ``weight_by_size`` as lm-eval's mmlu is."""
    inc = tmp_path / "inc"
    inc.mkdir()
    for s in MMLU_SUBJECTS:
        (inc / f"mini_{s}.yaml").write_text(
            f"include: {tm.task_index['mmlu_' + s].yaml_path.parent / '_default_template_yaml'}\n"
            f"task: mini_{s}\ndataset_path: json\ndataset_name: null\n"
            f"dataset_kwargs:\n  data_files:\n    test: {hub['mmlu'] / s / 'test.jsonl'}\n"
            f"    dev: {hub['mmlu'] / s / 'dev.jsonl'}\n"
            f"description: \"About {s}.\\n\\n\"\n")
    (inc / "mini_group.yaml").write_text(
        "group: mini_mmlu\ntask:\n" + "".join(f"  - mini_{s}\n" for s in MMLU_SUBJECTS) +
        "aggregate_metric_list:\n  - metric: acc\n    weight_by_size: true\nmetadata:\n  version: 1\n")
    from evalkit.taskapi import registry
    registry.include_path(str(inc))
    from evalkit.tasks.lm_eval_catalog import catalog
    run = run_evalkit(recorder, ["lm-eval:mmlu_abstract_algebra", "lm-eval:mini_mmlu"],
                      {"lm-eval:mmlu_abstract_algebra": str(hub["mmlu"])}, limit=4, num_fewshot=2,
                      output_dir=str(tmp_path / "results"))
    lm_tm = catalog.manager()  # now with the include folder
    mmlu = R.lm_eval_task(lm_tm, "mmlu_abstract_algebra", {"test": str(hub["mmlu"] / "abstract_algebra" / "test.jsonl"),
                                                            "dev": str(hub["mmlu"] / "abstract_algebra" / "dev.jsonl")})
    lm = R.lm_eval_run([mmlu, "mini_mmlu"], 4, lm_tm, lm=R.replay_lm(recorder.answers), num_fewshot=2)
    assert assert_parity(run, "lm-eval:mmlu_abstract_algebra", lm, "mmlu_abstract_algebra") == 4
    n = 0
    for s in MMLU_SUBJECTS:
        rows = [r for r in run.samples["lm-eval:mini_mmlu"] if r["extra"]["lm_eval"]["task"] == f"mini_{s}"]
        for ls in lm["samples"][f"mini_{s}"]:
            row = next(r for r in rows if int(r["extra"]["lm_eval"]["doc_id"]) == ls["doc_id"])
            assert row["extra"]["lm_eval"]["prompt_hash"] == ls["prompt_hash"]
            assert row["metrics"]["acc"] == ls["acc"]
            n += 1
        leaf = run.tasks["lm-eval:mini_mmlu"].breakdowns[f"mini_{s}"]["acc"]
        assert math.isclose(leaf["value"], lm["results"][f"mini_{s}"]["acc,none"], rel_tol=1e-12)
    assert n == 12
    group = run.tasks["lm-eval:mini_mmlu"].metrics["acc"]
    assert math.isclose(group["value"], lm["results"]["mini_mmlu"]["acc,none"], rel_tol=1e-12)
    assert group["n"] == 12 and group["ci_low"] <= group["value"] <= group["ci_high"]
    assert run.tasks["lm-eval:mini_mmlu"].extra["lm_eval"]["kind"] == "group"
    # `evalkit export --format lm-eval`: lm-eval's names, figures and sample hashes
    from evalkit.lm_eval_io.exporter import export_run
    from evalkit.records import load_run
    res_file = export_run(load_run(run.path), tmp_path / "export")
    exported = json.loads(res_file.read_text())
    for name in ("mmlu_abstract_algebra", "mini_mmlu", *(f"mini_{s}" for s in MMLU_SUBJECTS)):
        assert math.isclose(exported["results"][name]["acc,none"], lm["results"][name]["acc,none"], rel_tol=1e-12)
    assert exported["group_subtasks"]["mini_mmlu"] == [f"mini_{s}" for s in MMLU_SUBJECTS]
    lines = [json.loads(x) for x in next(res_file.parent.glob("samples_mini_anatomy_*.jsonl")).read_text().splitlines()]
    ref = {x["doc_id"]: x for x in lm["samples"]["mini_anatomy"]}
    assert len(lines) == 4
    for x in lines:
        for k in ("doc_hash", "prompt_hash", "target_hash", "acc", "filtered_resps", "resps"):
            assert json.loads(json.dumps(ref[x["doc_id"]][k])) == x[k], (k, x[k], ref[x["doc_id"]][k])


GEN_TASKS = ("gsm8k", "gsm8k_cot", "bbh_cot_fewshot_boolean_expressions", "minerva_math_algebra", "ifeval")


def test_generation_tasks_with_filters_and_python_hooks(recorder, hub, tm, shared_data, tmp_path):
    """``gsm8k`` (two regex filters), ``gsm8k_cot`` (few-shot from the config's samples),
    ``bbh_cot_fewshot_*`` (regex filter), ``minerva_math_algebra`` (Python ``process_docs``,
    ``doc_to_text`` and ``process_results`` with sympy/math-verify), ``ifeval`` (Python
    ``process_results`` and a Python aggregation, NLTK punkt_tab): one evalkit run, one batch."""
    math_dir = R.math_hub(shared_data, tmp_path / "math", ["algebra"])
    ifeval_dir = R.ifeval_hub(shared_data, tmp_path / "ifeval")
    data = {"lm-eval:gsm8k": str(hub["gsm8k"]), "lm-eval:gsm8k_cot": str(hub["gsm8k"]),
            "lm-eval:bbh_cot_fewshot_boolean_expressions": str(hub["bbh"]),
            "lm-eval:minerva_math_algebra": str(math_dir), "lm-eval:ifeval": str(ifeval_dir)}
    run = run_evalkit(recorder, [f"lm-eval:{t}" for t in GEN_TASKS], data, limit=2, gen_overrides={"max_tokens": 32})
    assert run.engine["computed_generate"] == 10  # one batch of every task's generations
    files = {"gsm8k": {"train": str(hub["gsm8k"] / "train.jsonl"), "test": str(hub["gsm8k"] / "test.jsonl")},
             "bbh": {"test": str(hub["bbh"] / "boolean_expressions" / "test.jsonl")},
             "math": {"test": str(math_dir / "algebra" / "test.jsonl"), "train": str(math_dir / "algebra" / "train.jsonl")},
             "ifeval": {"train": str(ifeval_dir / "train.jsonl")}}
    lm_tasks = [R.lm_eval_task(tm, "gsm8k", files["gsm8k"]), R.lm_eval_task(tm, "gsm8k_cot", files["gsm8k"]),
                R.lm_eval_task(tm, "bbh_cot_fewshot_boolean_expressions", files["bbh"]),
                R.lm_eval_task(tm, "minerva_math_algebra", files["math"]), R.lm_eval_task(tm, "ifeval", files["ifeval"])]
    lm = R.lm_eval_run(lm_tasks, 2, tm, lm=R.replay_lm(recorder.answers), gen_kwargs={"max_gen_toks": 32})
    counts = {t: assert_parity(run, f"lm-eval:{t}", lm, t) for t in GEN_TASKS}
    assert counts == {"gsm8k": 4, "gsm8k_cot": 4, "bbh_cot_fewshot_boolean_expressions": 2,
                      "minerva_math_algebra": 4, "ifeval": 8}, counts
    assert run.tasks["lm-eval:gsm8k"]["num_fewshot"] == 5 and run.tasks["lm-eval:ifeval"]["num_fewshot"] == 0
    gsm = run.tasks["lm-eval:gsm8k"]
    assert set(gsm.metrics) == {"exact_match,strict-match", "exact_match,flexible-extract"}
    ife = run.tasks["lm-eval:ifeval"].metrics
    assert ife["inst_level_strict_acc"]["kind"] != "mean" and ife["prompt_level_strict_acc"]["kind"] == "mean"


def test_loglikelihood_rolling_and_a_leaderboard_multiple_choice(recorder, hub, tm):
    """``wikitext`` (loglikelihood_rolling, word/byte perplexity and bits per byte: corpus metrics
    with a bootstrap CI) and ``leaderboard_bbh_boolean_expressions`` (3-shot MC, acc_norm)."""
    data = {"lm-eval:wikitext": str(hub["wikitext"]), "lm-eval:leaderboard_bbh_boolean_expressions": str(hub["bbh"])}
    run = run_evalkit(recorder, list(data), data, limit=1)
    lm_tasks = [R.lm_eval_task(tm, "wikitext", {s: str(hub["wikitext"] / f"{s}.jsonl") for s in ("train", "validation", "test")}),
                R.lm_eval_task(tm, "leaderboard_bbh_boolean_expressions", {"test": str(hub["bbh"] / "boolean_expressions" / "test.jsonl")})]
    lm = R.lm_eval_run(lm_tasks, 1, tm, lm=R.replay_lm(recorder.answers))
    assert assert_parity(run, "lm-eval:wikitext", lm, "wikitext") == 3
    assert assert_parity(run, "lm-eval:leaderboard_bbh_boolean_expressions", lm, "leaderboard_bbh_boolean_expressions") == 1
    ppl = run.tasks["lm-eval:wikitext"].metrics["word_perplexity"]
    assert ppl["kind"] != "mean" and ppl["higher_is_better"] is False and ppl["value"] > 1


def test_hub_layout_fixtures_of_datasets_not_here(recorder, tm, tmp_path):
    """HellaSwag (Python ``process_docs``), ARC-Easy (a dataset config folder, parquet shards) and
    TruthfulQA MC2 (Python ``process_results`` over many true/false answers) from small fixtures in
    their hub datasets' layouts: the loaders are the real ones; equal to lm-eval item by item."""
    fx = R.unavailable_hub(tmp_path)
    data = {f"lm-eval:{t}": str(folder) for t, (folder, _) in fx.items()}
    run = run_evalkit(recorder, list(data), data, limit=None)
    lm_tasks = [R.lm_eval_task(tm, t, files, fmt="parquet") for t, (_, files) in fx.items()]
    lm = R.lm_eval_run(lm_tasks, None, tm, lm=R.replay_lm(recorder.answers))
    assert assert_parity(run, "lm-eval:hellaswag", lm, "hellaswag") == 6
    assert assert_parity(run, "lm-eval:arc_easy", lm, "arc_easy") == 6
    assert assert_parity(run, "lm-eval:truthfulqa_mc2", lm, "truthfulqa_mc2") == 2


def test_a_group_mixing_request_kinds(recorder, hub, tm, tmp_path):
    """A user's group (``--include-path``) of a multiple-choice leaf and a generation leaf with
    filters: one evalkit task whose requests go out as two batches, equal to lm-eval per leaf and
    for the group's ``weight_by_size`` aggregate."""
    fx = R.unavailable_hub(tmp_path / "fx")
    arc_files = fx["arc_easy"][1]
    lm_tasks = tm.task_index
    (tmp_path / "inc").mkdir()
    inc = tmp_path / "inc"
    (inc / "mixed_arc.yaml").write_text(
        f"include: {lm_tasks['arc_easy'].yaml_path}\ntask: mixed_arc\ntag: []\ndataset_path: parquet\n"
        "dataset_name: null\ndataset_kwargs:\n  data_files:\n" + "".join(f"    {k}: {v}\n" for k, v in arc_files.items()))
    (inc / "mixed_gsm8k.yaml").write_text(
        f"include: {lm_tasks['gsm8k'].yaml_path}\ntask: mixed_gsm8k\ntag: []\ndataset_path: json\n"
        "dataset_name: null\nnum_fewshot: 1\ndataset_kwargs:\n  data_files:\n"
        f"    train: {hub['gsm8k'] / 'train.jsonl'}\n    test: {hub['gsm8k'] / 'test.jsonl'}\n")
    (inc / "mixed.yaml").write_text(
        "group: mixed_kinds\ntask:\n  - mixed_arc\n  - mixed_gsm8k\n"
        "aggregate_metric_list:\n  - metric: acc\n    weight_by_size: true\n"
        "  - metric: exact_match\n    weight_by_size: false\nmetadata:\n  version: 1\n")
    from evalkit.taskapi import registry
    from evalkit.tasks.lm_eval_catalog import catalog
    registry.include_path(str(tmp_path / "inc"))
    run = run_evalkit(recorder, ["lm-eval:mixed_kinds"], {}, limit=2, gen_overrides={"max_tokens": 16})
    assert run.tasks["lm-eval:mixed_kinds"].output_type == "mixed"
    assert run.engine["computed_generate"] == 2 and run.engine["computed_loglikelihood"] >= 6
    lm = R.lm_eval_run(["mixed_kinds"], 2, catalog.manager(), lm=R.replay_lm(recorder.answers),
                       gen_kwargs={"max_gen_toks": 16})
    entry = run.tasks["lm-eval:mixed_kinds"]
    for key in ("acc,none", "exact_match,strict-match", "exact_match,flexible-extract"):
        m, f = key.split(",")
        name = m if f == "none" else key
        assert math.isclose(entry.metrics[name]["value"], lm["results"]["mixed_kinds"][key], rel_tol=1e-12), key
    assert entry.metrics["exact_match,strict-match"]["kind"] != "mean"  # unweighted: bootstrap over docs
    for leaf in ("mixed_arc", "mixed_gsm8k"):
        for key, value in lm["results"][leaf].items():
            if "," in key and "_stderr" not in key:
                m, f = key.split(",")
                assert math.isclose(entry.breakdowns[leaf][m if f == "none" else key]["value"], value, rel_tol=1e-12)


def test_chat_template_with_few_shot_turns(recorder, hub, tm, hf_backend):
    """``--apply-chat-template``: the backend's template renders lm-eval's messages, few-shot
    examples as user/assistant turns (lm-eval's ``--fewshot_as_multiturn``), for a multiple-choice
    and a generation task; prompts and metrics equal lm-eval's with its ``hf`` model's rendering."""
    data = {"lm-eval:mmlu_abstract_algebra": str(hub["mmlu"]), "lm-eval:gsm8k": str(hub["gsm8k"])}
    run = run_evalkit(recorder, list(data), data, limit=2, num_fewshot=2, apply_chat_template=True,
                      gen_overrides={"max_tokens": 16})
    assert run.samples["lm-eval:gsm8k"][0]["prompt"].count("<|im_start|>user") == 3
    lm_tasks = [R.lm_eval_task(tm, "mmlu_abstract_algebra", {s: str(hub["mmlu"] / "abstract_algebra" / f"{s}.jsonl")
                                                            for s in ("test", "dev")}),
                R.lm_eval_task(tm, "gsm8k", {s: str(hub["gsm8k"] / f"{s}.jsonl") for s in ("train", "test")})]
    lm = R.lm_eval_run(lm_tasks, 2, tm, lm=R.replay_lm(recorder.answers, hf_backend.tokenizer), num_fewshot=2,
                       apply_chat_template=True, fewshot_as_multiturn=True, gen_kwargs={"max_gen_toks": 16})
    assert assert_parity(run, "lm-eval:mmlu_abstract_algebra", lm, "mmlu_abstract_algebra") == 2
    assert assert_parity(run, "lm-eval:gsm8k", lm, "gsm8k") == 4


def test_multiple_inputs_loglikelihood_mutual_info_repeats_and_a_custom_filter(recorder, hub, tm, tmp_path):
    """``winogrande`` (multiple inputs: one context per option), ``lambada_openai`` (loglikelihood;
    perplexity and acc), ``acc_mutual_info`` (unconditional requests with an empty context), and
    ``repeats`` with sampling (lm-eval's self-consistency config at 3 samples: ``majority_vote`` and
    ``take_first_k``) plus a user's own filter class (``!function``) from an include folder."""
    fx = R.more_kinds_hub(tmp_path / "fx")
    arc = R.unavailable_hub(tmp_path / "arc")["arc_easy"][1]
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "my_filters.py").write_text(
        "from lm_eval.api.filter import Filter\n\nclass LastWord(Filter):\n"
        "    def apply(self, resps, docs):\n"
        "        return [[(r.split() or [''])[-1] for r in rs] for rs in resps]\n")
    (inc / "arc_mi.yaml").write_text(
        f"include: {tm.task_index['arc_easy'].yaml_path}\ntask: arc_mi\ntag: []\ndataset_path: parquet\n"
        "dataset_name: null\ndataset_kwargs:\n  data_files:\n" + "".join(f"    {k}: {v}\n" for k, v in arc.items()) +
        "metric_list:\n  - metric: acc\n  - metric: acc_mutual_info\n")
    (inc / "sc.yaml").write_text(
        f"include: {tm.task_index['gsm8k_cot_self_consistency'].yaml_path}\ntask: sc3\ntag: []\ndataset_path: json\n"
        "dataset_name: null\nrepeats: 3\nnum_fewshot: 1\ndataset_kwargs:\n  data_files:\n"
        f"    train: {hub['gsm8k'] / 'train.jsonl'}\n    test: {hub['gsm8k'] / 'test.jsonl'}\n"
        "filter_list:\n  - name: maj@3\n    filter:\n      - function: take_first_k\n        k: 3\n"
        "      - function: regex\n        regex_pattern: \"(-?[0-9]+)\"\n      - function: majority_vote\n"
        "      - function: take_first\n  - name: last-word\n    filter:\n      - function: !function my_filters.LastWord\n"
        "      - function: take_first\n")
    from evalkit.taskapi import registry
    from evalkit.tasks.lm_eval_catalog import catalog
    registry.include_path(str(inc))
    data = {f"lm-eval:{t}": str(folder) for t, (folder, _) in fx.items()}
    run = run_evalkit(recorder, [*data, "lm-eval:arc_mi", "lm-eval:sc3"], data, limit=2,
                      gen_overrides={"max_tokens": 24})
    assert all(len(r["responses"][0]) == 3 for r in run.samples["lm-eval:sc3"])  # 3 samples per doc
    assert run.samples["lm-eval:sc3"][0]["responses"][0][0] != run.samples["lm-eval:sc3"][0]["responses"][0][1]
    mgr = catalog.manager()
    lm_tasks = [R.lm_eval_task(mgr, t, files, fmt="parquet") for t, (_, files) in fx.items()]
    lm = R.lm_eval_run([*lm_tasks, "arc_mi", "sc3"], 2, mgr, lm=R.replay_lm(recorder.answers),
                       gen_kwargs={"max_gen_toks": 24})
    assert assert_parity(run, "lm-eval:winogrande", lm, "winogrande") == 2
    assert assert_parity(run, "lm-eval:lambada_openai", lm, "lambada_openai") == 4
    assert assert_parity(run, "lm-eval:arc_mi", lm, "arc_mi") == 4
    assert assert_parity(run, "lm-eval:sc3", lm, "sc3") == 4
    assert any(r.context == "" for r in recorder.answers if hasattr(r, "context"))  # the unconditional requests
