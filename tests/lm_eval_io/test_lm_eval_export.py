"""``evalkit export --format lm-eval`` details lm-eval's tools and the way back depend on: the
filtered answer of each filter (GSM8K's strict and flexible extractions, not the raw completion),
``metric_list``/``filter_list`` in the task configs, and the entry's figures beside the metrics
(MMLU's breakdowns, GSM8K's generation budget and verifier hash) coming back on import. A scripted
model answers (no model needed): the export does not care who answered."""
from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from evalkit.cli import main
from evalkit.records import load_run
from evalkit.run.cache import NullCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
from _fakes import ScriptedBackend, hashed_logprob

ANSWERS = ["Natalia sold 48/2 = 24 clips in May. #### 72", "The answer is 10 dollars, I think 12", "no idea"]


@pytest.fixture(scope="module")
def record(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("export")
    config = RunConfig(tasks=["gsm8k", "mmlu"], limit=1,
                       data_paths={"gsm8k": str(shared_data / "gsm8k"), "mmlu": str(shared_data / "mmlu")})
    backend = ScriptedBackend(ANSWERS, hashed_logprob, identity={"model": "scripted-export"})
    run = evaluate(backend, config, NullCache(), str(out / "results"), progress=False)
    return out, load_run(run.path)


def test_export_keeps_filters_configs_and_figures_for_the_way_back(record):
    out, rec = record
    assert main(["export", "--format", "lm-eval", str(rec.path), "--output", str(out / "lm")]) == 0
    results = json.load(open(glob.glob(str(out / "lm" / "**" / "results_*.json"), recursive=True)[0]))
    gsm = results["configs"]["gsm8k"]
    assert {m["metric"] for m in gsm["metric_list"]} == {"exact_match", "exact_match_numeric"}
    assert {f["name"] for f in gsm["filter_list"]} == {"strict-match", "flexible-extract"}
    assert all(set(m) == {"metric", "aggregation", "higher_is_better"} for m in gsm["metric_list"])
    assert [m["metric"] for m in results["configs"]["mmlu"]["metric_list"]][:2] == ["acc", "acc_norm"]
    lines = [json.loads(x) for f in Path(out / "lm").glob("**/samples_gsm8k_*.jsonl") for x in open(f)]
    row = next(rec.samples("gsm8k"))
    by_filter = {ln["filter"]: ln["filtered_resps"] for ln in lines}
    assert by_filter["strict-match"] == [row["extracted"]["strict"]]            # the extraction, not the text
    assert by_filter["flexible-extract"] == [row["extracted"]["flexible"]]
    assert main(["import", "lm-eval", str(out / "lm"), "--output", str(out / "back")]) == 0
    back = {t: e for p in (out / "back").iterdir() for t, e in load_run(p).tasks.items()}
    mmlu, gsm8k = rec.tasks["mmlu"], rec.tasks["gsm8k"]
    assert mmlu.breakdowns and back["mmlu"].breakdowns == mmlu.breakdowns      # subjects and categories
    assert gsm8k.budget and back["gsm8k"].budget == gsm8k.budget
    assert back["gsm8k"].verifier_hash == gsm8k.verifier_hash
    again = next(load_run(p) for p in (out / "back").iterdir() if "gsm8k" in load_run(p).tasks)
    got = next(again.samples("gsm8k"))["extracted"]    # plus the "none" filter's answer (the numeric metric's line)
    assert {k: got[k] for k in row["extracted"]} == row["extracted"]
