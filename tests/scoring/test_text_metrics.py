"""Text metrics against their reference implementations, on real data.

References: sacrebleu's own ``corpus_score`` and its bootstrap (``significance._bootstrap_resample``,
the resampling of its paired bootstrap) for BLEU/chrF/TER on the WMT17 en-de system outputs that
ship with sacrebleu; sacrebleu 2.6.0 scores and signatures computed independently into
sacrebleu-2.6.0-scores.tsv; rouge-score's RougeScorer called directly for ROUGE.
"""
from __future__ import annotations

import math
import os
import textwrap

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from evalkit.scoring import hf_evaluate
from evalkit.scoring.text_metrics import (
    ROUGE_TYPES,
    RougeMetrics,
    SacreBLEUMetrics,
    parse_metric_list,
)
from evalkit.taskapi.task import Sample
from tests.conftest import shared

UEDIN = "uedin-nmt.4722.en-de"


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [x.rstrip("\n") for x in f]


@pytest.fixture(scope="module")
def wmt17():
    d = shared("wmt", "wmt17_en_de", "extracted")
    ref = lines(d / "newstest2017-ende-ref.de")
    return d, ref


def tsv_scores():
    path = shared("wmt", "wmt17_en_de", "sacrebleu-2.6.0-scores.tsv")
    rows, header = {}, ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# BLEU"):
            header = line
        elif line and not line.startswith(("#", "system")):
            name, b, c, t = line.split("\t")
            rows[name] = (float(b), float(c), float(t))
    return rows, header


def stats_table(metrics, hyps, refs_per_seg):
    per = [metrics.segment_stats(h, r) for h, r in zip(hyps, refs_per_seg)]
    return {n: np.array([p[n] for p in per], dtype=float) for n in metrics.names}


def test_corpus_scores_from_segment_statistics_equal_sacrebleu(wmt17):
    d, ref = wmt17
    hyp = lines(d / f"newstest2017.{'online-B.0.en-de'}")
    m = SacreBLEUMetrics()
    n = 600  # TER is slow; BLEU is checked on every system of the full set in test_score_cli
    stats = stats_table(m, hyp[:n], [[r] for r in ref[:n]])
    for name, cls in (("bleu", BLEU), ("chrf", CHRF), ("ter", TER)):
        assert m.corpus_value(name, stats[name]) == cls().corpus_score(hyp[:n], [ref[:n]]).score


def test_multi_reference_and_variable_reference_counts(wmt17):
    d, ref = wmt17
    hyp = lines(d / f"newstest2017.{UEDIN}")[:400]
    ref2 = lines(d / "newstest2017.online-B.0.en-de")[:400]  # a second "reference" stream
    m = SacreBLEUMetrics(("bleu", "chrf"))
    stats = stats_table(m, hyp, [[a, b] for a, b in zip(ref[:400], ref2)])
    assert m.corpus_value("bleu", stats["bleu"]) == sacrebleu.corpus_bleu(hyp, [ref[:400], ref2]).score
    assert m.corpus_value("chrf", stats["chrf"]) == sacrebleu.corpus_chrf(hyp, [ref[:400], ref2]).score
    assert m.corpus_value("bleu", stats["bleu"]) > SacreBLEUMetrics(("bleu",)).corpus_value(
        "bleu", stats_table(SacreBLEUMetrics(("bleu",)), hyp, [[a] for a in ref[:400]])["bleu"])
    sig = m.signatures({2})
    assert sig["bleu"].startswith("nrefs:2|")
    # variable counts (None pads a stream in sacrebleu) -> nrefs:var, same score
    refs_var = [[a, b] if i % 2 else [a] for i, (a, b) in enumerate(zip(ref[:400], ref2))]
    stats_v = stats_table(m, hyp, refs_var)
    stream2 = [b if i % 2 else None for i, b in enumerate(ref2)]
    assert m.corpus_value("bleu", stats_v["bleu"]) == sacrebleu.corpus_bleu(hyp, [ref[:400], stream2]).score
    assert m.signatures({1, 2})["bleu"].startswith("nrefs:var|")


def test_signatures_match_sacrebleu_and_the_published_table(wmt17):
    _, header = tsv_scores()
    sig = SacreBLEUMetrics().signatures({1})
    for name, cls in (("bleu", BLEU), ("chrf", CHRF), ("ter", TER)):
        metric = cls()
        metric.corpus_score(["a b c"], [["a b c"]])
        assert sig[name] == metric.get_signature().format()
    version = sacrebleu.__version__
    assert all(s.endswith(f"version:{version}") for s in sig.values())
    if version == "2.6.0":
        assert sig["bleu"] in header and sig["chrf"] in header and sig["ter"] in header


def test_chinese_target_uses_sacrebleu_zh_tokenizer():
    import json
    path = shared("wmt", "wmt22_general", "test.jsonl")
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    zh = [r for r in rows if r["type"] == "en2zh"][:200]
    hyps = [r["tgr"][: max(1, len(r["tgr"]) // 2)] for r in zh]  # half of each reference: a partial match
    refs = [r["tgr"] for r in zh]
    from evalkit.taskapi import registry
    task = registry.get_task_class("wmt22_en_zh")()
    stats = stats_table(task.mt, hyps, [[r] for r in refs])
    assert task.mt.corpus_value("bleu", stats["bleu"]) == sacrebleu.corpus_bleu(hyps, [refs], tokenize="zh").score
    assert "tok:zh" in task.mt.signatures({1})["bleu"]


def _sacrebleu_bootstrap_width(stats: np.ndarray, metric, seeds=(12345, 1, 2)) -> float:
    """Mean 95% CI width of sacrebleu's own bootstrap over a few of its seeds (less Monte Carlo noise)."""
    from sacrebleu.significance import _bootstrap_resample, estimate_ci
    widths = []
    old = os.environ.get("SACREBLEU_SEED")
    try:
        for s in seeds:
            os.environ["SACREBLEU_SEED"] = str(s)
            _, scores = _bootstrap_resample(stats.tolist(), metric, 1000)
            widths.append(2 * estimate_ci(np.array([x.score for x in scores]))[1])
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old
    return float(np.mean(widths))


def test_bootstrap_ci_width_matches_sacrebleu_and_stderr_is_replicate_std(wmt17):
    d, ref = wmt17
    hyp = lines(d / f"newstest2017.{UEDIN}")
    m = SacreBLEUMetrics(("bleu", "chrf"))
    stats = stats_table(m, hyp, [[r] for r in ref])
    ter = SacreBLEUMetrics(("ter",))
    n_ter = 1000
    stats["ter"] = stats_table(ter, hyp[:n_ter], [[r] for r in ref[:n_ter]])["ter"]
    ours = {**m.aggregate({k: stats[k] for k in ("bleu", "chrf")}, seed=7),
            **ter.aggregate({"ter": stats["ter"]}, seed=7)}
    assert ours["bleu"].value == pytest.approx(28.30, abs=0.005)
    for name, metric in (("bleu", m.metrics["bleu"]), ("chrf", m.metrics["chrf"]), ("ter", ter.metrics["ter"])):
        v = ours[name]
        width = v.ci_high - v.ci_low
        theirs = _sacrebleu_bootstrap_width(stats[name], metric)
        assert abs(width / theirs - 1) < 0.10, (name, width, theirs)
        assert v.ci_low < v.value < v.ci_high
        # the stderr is the spread of the replicates (≈ width / 3.92), not that divided by sqrt(1000)
        assert v.stderr == pytest.approx(width / 3.92, rel=0.15)
        assert v.kind == "corpus" and v.n == len(stats[name])
    assert ours["ter"].higher_is_better is False and ours["bleu"].higher_is_better is True


def test_bootstrap_is_seeded_and_small_corpora_have_no_ci(wmt17):
    d, ref = wmt17
    hyp = lines(d / f"newstest2017.{UEDIN}")[:300]
    m = SacreBLEUMetrics(("bleu",))
    stats = stats_table(m, hyp, [[r] for r in ref[:300]])
    a, b, c = (m.aggregate(stats, seed=s)["bleu"] for s in (1, 1, 2))
    assert (a.ci_low, a.ci_high, a.stderr) == (b.ci_low, b.ci_high, b.stderr)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    one = m.aggregate({"bleu": stats["bleu"][:1]}, seed=1)["bleu"]
    assert one.n == 1 and one.stderr is None and one.ci_low is None
    empty = m.aggregate({"bleu": np.zeros((0, 1))}, seed=1)["bleu"]
    assert empty.n == 0 and math.isnan(empty.value)


def test_rouge_equals_rouge_score_directly():
    import json

    from rouge_score import rouge_scorer
    rows = [json.loads(x) for x in shared("xsum", "test.jsonl").read_text(encoding="utf-8").splitlines()[:150]]
    preds = [r["document"].split("\n")[0] for r in rows]  # lead-1
    ours = RougeMetrics()
    ref_scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    for p, r in zip(preds, rows):
        got = ours.scores(p, [r["summary"]])
        want = ref_scorer.score(r["summary"], p)
        assert got == {t: want[t].fmeasure for t in ROUGE_TYPES}
    # several references: the best one per type, as rouge-score's score_multi
    got = ours.scores(preds[0], [rows[1]["summary"], rows[0]["summary"]])
    assert got["rouge1"] == ref_scorer.score(rows[0]["summary"], preds[0])["rouge1"].fmeasure


def test_rouge_lsum_splits_sentences_on_newlines():
    r = RougeMetrics()
    ref = "the cat sat on the mat\nthe dog ran in the park"
    pred_lines = "the dog ran in the park\nthe cat sat on the mat"
    a = r.scores(pred_lines, [ref])
    assert a["rougeLsum"] == pytest.approx(1.0)  # every sentence found, order across sentences free
    assert a["rougeL"] == pytest.approx(0.5)
    flat = r.scores(pred_lines.replace("\n", " "), [ref.replace("\n", " ")])  # no newlines: Lsum is L
    assert flat["rougeLsum"] == flat["rougeL"] == pytest.approx(0.5)
    assert a["rouge1"] == flat["rouge1"] == pytest.approx(1.0)
    # stemming on: "running" ~ "run"
    assert r.scores("dogs running", ["dog runs"])["rouge1"] == pytest.approx(1.0)


def test_metric_names_are_checked():
    assert parse_metric_list("bleu+CHRF", ("bleu", "chrf", "ter")) == ("bleu", "chrf")
    assert parse_metric_list(["rougelsum"], ROUGE_TYPES) == ("rougeLsum",)
    with pytest.raises(ValueError, match="unknown metric"):
        parse_metric_list("bleu+meteor", ("bleu", "chrf", "ter"))


# ---- evaluate:NAME ----

METRIC_SCRIPT = textwrap.dedent('''
    import datasets
    import evaluate


    class LengthGap(evaluate.Metric):
        def _info(self):
            return evaluate.MetricInfo(
                description="test metric", citation="", inputs_description="",
                features=datasets.Features({"predictions": datasets.Value("string"),
                                            "references": datasets.Value("string")}))

        def _compute(self, predictions, references, scale=1.0):
            gaps = [scale * abs(len(p.split()) - len(r.split())) for p, r in zip(predictions, references)]
            return {"gap": gaps, "total_words": float(sum(len(p.split()) for p in predictions)),
                    "orders": [1.0, 2.0, 3.0, 4.0], "hashcode": "lengap-v1"}
''')


@pytest.fixture
def metric_script(tmp_path):
    pytest.importorskip("evaluate")
    path = tmp_path / "length_gap.py"
    path.write_text(METRIC_SCRIPT)
    return str(path)


class _Task:
    name = "t"
    higher_is_better = {}


def test_evaluate_metric_per_sample_corpus_and_other_outputs(metric_script):
    preds = ["a b c", "a", "a b", "x y z w"]
    refs = ["a b", "a b c", "a b", "x"]
    samples = [Sample(str(i), "h", None, [p], r, {}) for i, (p, r) in enumerate(zip(preds, refs))]
    res = hf_evaluate.compute(_Task(), samples, [f"evaluate:{metric_script}:scale=2"], seed=3)
    corpus, info = res.corpus, res.info
    gaps = [2.0 * abs(len(p.split()) - len(r.split())) for p, r in zip(preds, refs)]
    assert [row["length_gap_gap"] for row in res.per_sample] == gaps
    assert all(s.metrics == {} for s in samples)  # the samples are read, never changed
    # 4 samples and a 4-long "orders" list: the one-sample probe keeps it out of the per-sample metrics
    assert "length_gap_orders" not in res.per_sample[0] and info["length_gap"]["orders"] == [1.0, 2.0, 3.0, 4.0]
    assert info["length_gap"]["hashcode"] == "lengap-v1"
    tw = corpus["length_gap_total_words"]
    assert tw.value == 10.0 and tw.kind == "corpus" and tw.ci_low <= tw.ci_high and tw.stderr > 0


def test_evaluate_metric_unknown_offline_gives_a_clear_error(monkeypatch):
    pytest.importorskip("evaluate")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="could not load evaluate metric 'no_such_metric_xyz'.*local metric script"):
        hf_evaluate.load("no_such_metric_xyz")
    with pytest.raises(ValueError, match="expected evaluate:NAME"):
        hf_evaluate.parse_spec("bertscore")


def test_run_cli_metric_option_reaches_generation_tasks_only(metric_script):
    from evalkit.cli import build_parser
    from evalkit.cli.run import build_config
    parser = build_parser()
    args = parser.parse_args(["run", "--model", "hf:x", "--tasks", "gsm8k,wikitext",
                              "--metric", f"evaluate:{metric_script}:bootstrap=0"])
    cfg = build_config(args)
    assert cfg.metrics == [f"evaluate:{metric_script}:bootstrap=0"]  # the run appends it to generation tasks
    assert "metrics" in cfg.to_record() and not cfg.task_options
    with pytest.raises(ValueError, match="applies to generation tasks"):
        build_config(parser.parse_args(["run", "--model", "hf:x", "--tasks", "wikitext",
                                        "--metric", f"evaluate:{metric_script}"]))
    with pytest.raises(ValueError, match="could not load evaluate metric"):  # fails before any model time
        build_config(parser.parse_args(["run", "--model", "hf:x", "--tasks", "gsm8k",
                                        "--metric", "evaluate:/nonexistent/metric.py"]))
