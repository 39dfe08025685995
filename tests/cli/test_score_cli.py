"""``evalkit score`` (saved outputs, no model) and the translation/summarization tasks end to end.

References: sacrebleu run directly on the WMT17 en-de system outputs (and the independently
computed sacrebleu-2.6.0-scores.tsv: uedin-nmt 28.30 BLEU, the published figure); sacrebleu's own
bootstrap for the CI width; rouge-score run directly for XSum / CNN-DM ROUGE.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sacrebleu

from evalkit.cli import main
from evalkit.records import load_run
from evalkit.run.workflows.rescore import ScoreConfig, rescore
from tests.conftest import shared
from tests.scoring.test_text_metrics import _sacrebleu_bootstrap_width, lines, tsv_scores

UEDIN = "newstest2017.uedin-nmt.4722.en-de"


@pytest.fixture(scope="module")
def wmt17():
    d = shared("wmt", "wmt17_en_de", "extracted")
    return d, d / "newstest2017-ende-ref.de"


def only_run(results: Path):
    runs = [p for p in results.iterdir() if (p / "run.json").exists()]
    assert len(runs) == 1, runs
    return load_run(runs[0])


def test_score_cli_reproduces_sacrebleu_for_uedin_nmt(wmt17, tmp_path, capsys):
    d, ref = wmt17
    rc = main(["score", "--task", "translation", "--predictions", str(d / UEDIN), "--references", str(ref),
               "--output", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "28.3012" in out and "run record:" in out
    run = only_run(tmp_path)
    t = run.tasks["translation"]
    m = t["metrics"]
    hyp, refs = lines(d / UEDIN), lines(ref)
    for name, fn in (("bleu", sacrebleu.corpus_bleu), ("chrf", sacrebleu.corpus_chrf)):  # TER: via the table
        assert m[name]["value"] == fn(hyp, [refs]).score, name
    for name in ("bleu", "chrf", "ter"):
        assert m[name]["n"] == 3004 and m[name]["kind"] == "corpus"
        assert m[name]["ci_low"] < m[name]["value"] < m[name]["ci_high"]
    table, _ = tsv_scores()
    assert (round(m["bleu"]["value"], 2), round(m["chrf"]["value"], 2), round(m["ter"]["value"], 2)) == table[UEDIN]
    assert round(m["bleu"]["value"], 2) == 28.30
    # CI width vs sacrebleu's own bootstrap (resampling the same segment statistics)
    from evalkit.scoring.text_metrics import SacreBLEUMetrics
    mt = SacreBLEUMetrics(("bleu",))
    stats = np.array([r["extra"]["sacrebleu"]["bleu"] for r in run.samples("translation")], dtype=float)
    theirs = _sacrebleu_bootstrap_width(stats, mt.metrics["bleu"])
    assert abs((m["bleu"]["ci_high"] - m["bleu"]["ci_low"]) / theirs - 1) < 0.10
    sig = t["extra"]["sacrebleu"]["signatures"]
    metric = sacrebleu.metrics.BLEU()
    metric.corpus_score(hyp[:2], [refs[:2]])
    assert sig["bleu"] == metric.get_signature().format()
    assert run.model["backend"] == "predictions" and run.model["name"] == "newstest2017.uedin-nmt.4722"
    assert t["rescored"]["format"] == "text" and t["rescored"]["n_scored"] == 3004


def test_every_wmt17_system_bleu_is_exact(wmt17):
    """All 16 systems through the scoring core's BLEU path (segment statistics summed) against the
    sacrebleu table; the three extremes also through `evalkit score` itself, equal to sacrebleu."""
    from evalkit.scoring.text_metrics import SacreBLEUMetrics
    d, ref = wmt17
    table, _ = tsv_scores()
    assert len(table) == 16
    refs = lines(ref)
    mt = SacreBLEUMetrics(("bleu",))
    for system, (bleu, _, _) in table.items():
        stats = np.array([mt.segment_stats(h, [r])["bleu"] for h, r in zip(lines(d / system), refs)], dtype=float)
        assert round(mt.corpus_value("bleu", stats), 2) == bleu, system
    ranked = sorted(table, key=lambda s: table[s][0])
    for system in (ranked[0], ranked[len(ranked) // 2], ranked[-1]):
        cfg = ScoreConfig(task="translation", predictions=str(d / system), references=[str(ref)],
                          task_options={"mt_metrics": "bleu", "bootstrap": 0})
        got = rescore(cfg, output_dir=None).to_dict()["tasks"]["translation"]["metrics"]["bleu"]["value"]
        assert got == sacrebleu.corpus_bleu(lines(d / system), [refs]).score, system
        assert round(got, 2) == table[system][0], system


def test_jsonl_predictions_by_id_subset_and_several_references(wmt17, tmp_path):
    d, ref = wmt17
    hyp = lines(d / UEDIN)
    ids = random.Random(0).sample(range(3004), 300)
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"doc_id": str(i), "prediction": hyp[i]}) + "\n" for i in ids))
    ref2 = tmp_path / "ref2.de"
    ref2.write_text("".join(x + "\n" for x in lines(d / "newstest2017.online-B.0.en-de")))
    cfg = ScoreConfig(task="translation", predictions=str(path), references=[str(ref), str(ref2)],
                      task_options={"mt_metrics": "bleu+chrf", "bootstrap": 0})
    run = rescore(cfg, output_dir=None).to_dict()
    m = run["tasks"]["translation"]["metrics"]
    order = sorted(ids)  # scored in doc order
    r1, r2 = lines(ref), lines(ref2)
    want = sacrebleu.corpus_bleu([hyp[i] for i in order], [[r1[i] for i in order], [r2[i] for i in order]])
    assert m["bleu"]["value"] == want.score and m["bleu"]["n"] == 300
    assert run["tasks"]["translation"]["extra"]["sacrebleu"]["signatures"]["bleu"].startswith("nrefs:2|")


def test_rescoring_a_previous_run_gives_the_same_record(wmt17, tmp_path):
    d, ref = wmt17
    first = rescore(ScoreConfig(task="translation", predictions=str(d / UEDIN), references=[str(ref)],
                                task_options={"mt_metrics": "bleu"}, limit=500), output_dir=str(tmp_path))
    again = rescore(ScoreConfig(task="translation", predictions=first.path), output_dir=None).to_dict()
    a, b = first.to_dict()["tasks"]["translation"], again["tasks"]["translation"]
    assert a["metrics"] == b["metrics"] and b["n_docs"] == 500
    assert again["model"]["rescored_from"] == first.to_dict()["run_id"]
    assert b["rescored"]["format"] == "samples" and b["rescored"]["n_docs_changed_since_run"] == 0


def test_score_errors_are_clear(wmt17, tmp_path, capsys):
    d, ref = wmt17
    short = tmp_path / "short.txt"
    short.write_text("".join(x + "\n" for x in lines(d / UEDIN)[:10]))
    assert main(["score", "--task", "translation", "--predictions", str(short), "--references", str(ref),
                 "--no-output"]) == 2
    assert "10 predictions (lines) but the task has 3004 docs" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "0", "prediction": "x"}\n{"doc_id": "nope", "prediction": "y"}\n')
    assert main(["score", "--task", "translation", "--predictions", str(bad), "--references", str(ref),
                 "--no-output"]) == 2
    assert "name no doc of the task" in capsys.readouterr().err
    noid = tmp_path / "noid.jsonl"
    noid.write_text('{"prediction": "x"}\n')
    assert main(["score", "--task", "translation", "--predictions", str(noid), "--references", str(ref),
                 "--no-output"]) == 2
    assert "noid.jsonl:1: no doc id" in capsys.readouterr().err
    assert main(["score", "--task", "gsm8k", "--predictions", str(short), "--references", str(ref),
                 "--no-output"]) == 2
    assert "reads its references from its data" in capsys.readouterr().err
    assert main(["score", "--task", "translation", "--predictions", str(short), "--no-output"]) == 2
    assert "--data" in capsys.readouterr().err


def _rouge_direct(preds, refs):
    from rouge_score import rouge_scorer
    sc = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    per = [sc.score(r, p) for p, r in zip(preds, refs)]
    return {t: [s[t].fmeasure for s in per] for t in ("rouge1", "rouge2", "rougeL", "rougeLsum")}


def test_xsum_rouge_on_saved_predictions_equals_rouge_score(tmp_path):
    rows = [json.loads(x) for x in shared("xsum", "test.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = rows[:200]
    preds = {r["id"]: r["document"].split("\n")[0] for r in rows}  # lead-1 baseline
    path = tmp_path / "lead1.jsonl"
    path.write_text("".join(json.dumps({"id": k, "prediction": v}) + "\n" for k, v in preds.items()))
    run = rescore(ScoreConfig(task="xsum", predictions=str(path), data_path=str(shared("xsum"))),
                  output_dir=str(tmp_path / "out")).to_dict()
    m = run["tasks"]["xsum"]["metrics"]
    want = _rouge_direct([preds[r["id"]] for r in rows], [r["summary"] for r in rows])
    for t, vals in want.items():
        assert m[t]["value"] == pytest.approx(float(np.mean(vals)), abs=1e-12)
        assert m[t]["stderr"] == pytest.approx(float(np.std(vals, ddof=1) / np.sqrt(len(vals))), abs=1e-12)
        assert m[t]["n"] == 200 and m[t]["kind"] == "mean"
    samples = list(load_run(run["path"]).samples("xsum"))
    assert samples[0]["metrics"]["rouge1"] == pytest.approx(want["rouge1"][0])


def test_cnn_dailymail_lead3_rouge_equals_rouge_score(tmp_path):
    from evalkit.taskapi import registry
    zip_path = shared("cnn_dailymail", "train_sample.zip")
    docs = registry.get_task_class("cnn_dailymail")(data_path=str(zip_path)).eval_docs()
    assert len(docs) == 100
    lead3 = {d.id: "\n".join(d.query.replace("\n", " ").split(". ")[:3]) for d in docs}  # sentences on lines
    path = tmp_path / "lead3.jsonl"
    path.write_text("".join(json.dumps({"doc_id": k, "prediction": v}) + "\n" for k, v in lead3.items()))
    assert main(["score", "--task", "cnn_dailymail", "--predictions", str(path), "--data", str(zip_path),
                 "--output", str(tmp_path / "out")]) == 0
    m = only_run(tmp_path / "out").metrics("cnn_dailymail")
    want = _rouge_direct([lead3[d.id] for d in docs], [d.target[0] for d in docs])
    for t, vals in want.items():
        assert m[t]["value"] == pytest.approx(float(np.mean(vals)), abs=1e-12)
    assert m["rougeLsum"]["value"] != m["rougeL"]["value"]  # highlights are one sentence per line


def test_evaluate_metric_on_score_cli(tmp_path):
    pytest.importorskip("evaluate")
    from tests.scoring.test_text_metrics import METRIC_SCRIPT
    script = tmp_path / "length_gap.py"
    script.write_text(METRIC_SCRIPT)
    rows = [json.loads(x) for x in shared("xsum", "test.jsonl").read_text(encoding="utf-8").splitlines()[:20]]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": r["document"].split("\n")[0]}) + "\n"
                            for r in rows))
    assert main(["score", "--task", "xsum", "--predictions", str(path), "--data", str(shared("xsum")),
                 "--metric", f"evaluate:{script}:bootstrap=20", "--output", str(tmp_path / "out")]) == 0
    run = only_run(tmp_path / "out")
    m = run.metrics("xsum")
    gaps = [abs(len(r["document"].split("\n")[0].split()) - len(r["summary"].split())) for r in rows]
    assert m["length_gap_gap"]["value"] == pytest.approx(np.mean(gaps)) and m["length_gap_gap"]["n"] == 20
    assert m["length_gap_total_words"]["kind"] == "corpus"
    assert run.tasks["xsum"]["extra"]["evaluate"]["length_gap"]["hashcode"] == "lengap-v1"
    assert "rouge1" in m  # the task's own metrics stay


def test_local_files_for_hub_translation_tasks(tmp_path):
    """wmt14_en_de / wmt16_de_en read local files in the hub layout ({"translation": {...}})."""
    from evalkit.taskapi import registry
    from evalkit.taskapi.task import RunContext
    rows = [json.loads(x) for x in shared("wmt", "wmt22_general", "test.jsonl").read_text(encoding="utf-8")
            .splitlines() if '"en2de"' in x][:5]
    folder = tmp_path / "wmt14"
    folder.mkdir()
    for split in ("test", "validation"):
        (folder / f"{split}.jsonl").write_text("".join(
            json.dumps({"translation": {"en": r["src"], "de": r["tgr"]}}) + "\n" for r in rows))
    task = registry.get_task_class("wmt14_en_de")(data_path=str(folder))
    docs = task.eval_docs()
    assert [d.query for d in docs] == [r["src"] for r in rows] and docs[0].target == [rows[0]["tgr"]]
    prompt = task.prompt_text(docs[1], RunContext(num_fewshot=1))
    assert prompt == f"English phrase: {rows[0]['src']}\nGerman phrase: {rows[0]['tgr']}\n\n" \
                     f"English phrase: {rows[1]['src']}\nGerman phrase:"
    back = registry.get_task_class("wmt16_de_en")(data_path=str(folder)).eval_docs()
    assert back[0].query == rows[0]["tgr"] and back[0].target == [rows[0]["src"]]
    msgs = task.messages(docs[1], RunContext(num_fewshot=1, apply_chat_template=True))
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"] and msgs[1]["content"] == rows[0]["tgr"]
    assert "\n" not in task.params(docs[1], RunContext(apply_chat_template=True)).stop
    assert task.params(docs[1], RunContext()).stop == ("\n",)


# ---- end to end with the tiny model ----

def _run_cli(args, tmp_path):
    env_cmd = [sys.executable, "-m", "evalkit"] + args
    r = subprocess.run(env_cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.mark.slow
@pytest.mark.parametrize("chat", [False, True], ids=["base-0shot", "chat-1shot"])
def test_translation_and_xsum_end_to_end_on_tiny_model(tiny_model_dir, tmp_path, chat):
    wmt22, xsum = shared("wmt", "wmt22_general"), shared("xsum", "test.jsonl")  # a file serves every split
    out = tmp_path / "results"
    args = ["run", "--model", f"hf:{tiny_model_dir}", "--tasks", "wmt22_en_de,xsum",
            "--data", f"wmt22_en_de={wmt22}", "--data", f"xsum={xsum}", "--limit", "3",
            "--gen-kwargs", "max_tokens=12", "--output", str(out), "--cache-dir", str(tmp_path / "cache")]
    if chat:
        args += ["--apply-chat-template", "--num-fewshot", "1"]
    _run_cli(args, tmp_path)
    run = only_run(out)
    mt, xs = run.tasks["wmt22_en_de"], run.tasks["xsum"]
    assert set(mt["metrics"]) == {"bleu", "chrf", "ter"} and mt["metrics"]["bleu"]["n"] == 3
    assert set(xs["metrics"]) == {"rouge1", "rouge2", "rougeL", "rougeLsum"} and xs["n_docs"] == 3
    assert mt["extra"]["sacrebleu"]["signatures"]["bleu"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    samples = list(run.samples("wmt22_en_de"))
    hyps = [s["extracted"] for s in samples]
    assert mt["metrics"]["bleu"]["value"] == sacrebleu.corpus_bleu(hyps, [[s["target"][0] for s in samples]]).score
    if chat:
        assert isinstance(samples[0]["prompt"], list) and len(samples[0]["prompt"]) == 3
    else:
        assert samples[0]["prompt"].endswith("\nGerman phrase:")
    # re-scoring the run's saved outputs reproduces it without the model
    for task in ("wmt22_en_de", "xsum"):
        again = rescore(ScoreConfig(task=task, predictions=str(run.path)), output_dir=None).to_dict()
        assert again["tasks"][task]["metrics"] == run.tasks[task]["metrics"]
        assert again["tasks"][task]["prompt_hash"] == run.tasks[task]["prompt_hash"]
        assert again["model"]["identity_hash"] == run.model["identity_hash"]
