"""Metrics are declared and checked, one way (evalkit.scoring.metric): a sample metric a task does not
declare, or a declared one no sample carries, is an error naming the task; one grouped corpus
metric (one computation, several names, a direction each) with one seeded bootstrap; tasks written
with the older class dicts keep working; the record says what each task declares."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from evalkit.scoring.metric import Metric, MetricDeclarationError, MetricGroup, UndeclaredMetricWarning
from evalkit.scoring.stats import bootstrap_corpus, bootstrap_group, derive_seed
from evalkit.taskapi.requests import Completion, LoglikelihoodResult
from evalkit.taskapi.task import Doc, GenerationTask, RunContext, Sample, Task


def samples_of(rows):
    return [Sample(str(i), f"h{i}", "q", ["r"], "t", dict(m), extra=dict(e or {}))
            for i, (m, e) in enumerate((r if isinstance(r, tuple) else (r, None)) for r in rows)]


class Toy(GenerationTask):
    name = "toy"
    metrics = (Metric("exact_match"), Metric("wrong_answer", higher_is_better=False))


# ---- declarations are checked ------------------------------------------------------------------
def test_a_misspelt_sample_metric_is_an_error_naming_the_task_and_the_name():
    rows = [{"exact_match": 1.0, "wrong_answr": 0.0}, {"exact_match": 0.0, "wrong_answr": 1.0}]
    with pytest.raises(MetricDeclarationError, match=r"^task toy: sample metric 'wrong_answr' is not declared") as e:
        Toy().aggregate(samples_of(rows), seed=1)
    assert "\n" not in str(e.value) and isinstance(e.value, ValueError)


def test_a_declared_metric_no_sample_carries_is_an_error():
    with pytest.raises(MetricDeclarationError, match=r"task toy: declared metric 'wrong_answer' is carried by no sample"):
        Toy().aggregate(samples_of([{"exact_match": 1.0}, {"exact_match": 0.0}]), seed=1)
    assert Toy().aggregate([], seed=1) == {}  # no samples (a shard without docs of the task): nothing to check


def test_declared_metrics_report_with_their_direction():
    out = Toy().aggregate(samples_of([{"exact_match": 1.0, "wrong_answer": 0.0},
                                      {"exact_match": 0.0, "wrong_answer": 1.0}]), seed=1)
    assert list(out) == ["exact_match", "wrong_answer"]
    assert out["exact_match"].higher_is_better is True and out["wrong_answer"].higher_is_better is False
    assert out["wrong_answer"].value == 0.5 and out["wrong_answer"].kind == "mean"


def test_an_optional_metric_may_be_absent_but_never_misspelt():
    class PassK(Toy):
        name = "passk"
        metrics = (Metric("pass@1"), Metric("pass@10", required=False))

    assert list(PassK().aggregate(samples_of([{"pass@1": 1.0}, {"pass@1": 0.0}]), seed=1)) == ["pass@1"]
    with pytest.raises(MetricDeclarationError, match="task passk: sample metric 'pass@100' is not declared"):
        PassK().aggregate(samples_of([{"pass@1": 1.0, "pass@100": 1.0}]), seed=1)


def test_a_name_declared_twice_is_an_error():
    class Twice(Toy):
        name = "twice"
        metrics = (Metric("bleu"), MetricGroup("mt", ("bleu", "ter"), {"bleu": True, "ter": False},
                                               compute=lambda s: {}))

    with pytest.raises(MetricDeclarationError, match="task twice: metric 'bleu' is declared twice"):
        Twice().aggregate(samples_of([{"bleu": 1.0}]), seed=1)


# ---- the grouped metric ------------------------------------------------------------------------
def _group(calls, replicates=200):
    def compute(samples):
        calls.append(len(samples))
        x = np.array([s.extra["x"] for s in samples], dtype=float)
        return {"mean_x": float(x.mean()), "spread": float(x.std()), "err_rate": float((x < 0.2).mean())}
    return MetricGroup("stats", ("mean_x", "spread", "err_rate"),
                       {"mean_x": True, "spread": False, "err_rate": False}, compute, replicates)


def _corpus(n=50, seed=0):
    rng = np.random.default_rng(seed)
    return samples_of([({"acc": float(v > 0.5)}, {"x": float(v)}) for v in rng.random(n)])


class Grouped(Task):
    name = "grouped"
    output_type = "generate"

    def __init__(self, calls=None, **kw):
        super().__init__(**kw)
        self.metrics = (Metric("acc"), _group(calls if calls is not None else []))


def test_a_group_computes_once_per_resample_and_reports_several_names_with_their_directions():
    calls = []
    task = Grouped(calls)
    samples = _corpus()
    out = task.aggregate(samples, seed=5)
    assert list(out) == ["acc", "mean_x", "spread", "err_rate"]
    assert len(calls) == 1 + 200 and set(calls) == {50}  # all names from one computation, per replicate
    x = np.array([s.extra["x"] for s in samples])
    assert out["mean_x"].value == pytest.approx(x.mean()) and out["spread"].value == pytest.approx(x.std())
    assert [out[n].higher_is_better for n in ("mean_x", "spread", "err_rate")] == [True, False, False]
    for n in ("mean_x", "spread", "err_rate"):
        v = out[n]
        assert v.kind == "corpus" and v.n == 50 and v.ci_low <= v.value <= v.ci_high and v.stderr > 0
    assert out["acc"].kind == "mean" and out["acc"].ci_low is not None  # sample metrics: Wilson for 0/1
    assert task.declared_metrics() == [
        {"name": "acc", "higher_is_better": True, "level": "sample", "group": None},
        {"name": "mean_x", "higher_is_better": True, "level": "corpus", "group": "stats"},
        {"name": "spread", "higher_is_better": False, "level": "corpus", "group": "stats"},
        {"name": "err_rate", "higher_is_better": False, "level": "corpus", "group": "stats"}]
    assert task.higher_is_better_of("spread") is False and task.higher_is_better_of("acc") is True


def test_the_group_bootstrap_is_seeded_by_run_seed_task_and_group_name():
    samples = _corpus()
    a, b, c = (Grouped().aggregate(samples, seed=s) for s in (11, 11, 12))
    assert {k: v.to_dict() for k, v in a.items()} == {k: v.to_dict() for k, v in b.items()}
    assert (a["mean_x"].ci_low, a["mean_x"].ci_high) != (c["mean_x"].ci_low, c["mean_x"].ci_high)
    # the seed is derive_seed(run seed, task, group name, "bootstrap"); every name sees the same resamples
    g = _group([])
    direct = bootstrap_group(samples, g.compute, g.names, derive_seed(11, "grouped", "stats", "bootstrap"), 200,
                             g.directions)
    assert {k: v.to_dict() for k, v in direct.items()} == {k: a[k].to_dict() for k in g.names}
    # a one-name group is the single-statistic bootstrap, number for number
    one = bootstrap_corpus(samples, lambda s: g.compute(s)["spread"], seed=3, replicates=200, higher_is_better=False)
    assert one.to_dict() == bootstrap_group(samples, g.compute, ["spread"], 3, 200, False)["spread"].to_dict()


def test_a_corpus_metric_keeps_its_own_seed():
    def mean_x(samples):
        return float(np.mean([s.extra["x"] for s in samples]))

    samples = _corpus()
    got = Metric("mean_x", level="corpus", compute=mean_x, replicates=300).aggregate(samples, 9, "t")
    want = bootstrap_corpus(samples, mean_x, derive_seed(9, "t", "mean_x", "bootstrap"), replicates=300)
    assert got.to_dict() == want.to_dict()


def test_group_items_resample_rows_of_tables():
    table = {"a": np.arange(20, dtype=float).reshape(10, 2), "b": np.ones((10, 3))}
    out = bootstrap_group(table, lambda t: {"sa": float(t["a"].sum()), "sb": float(t["b"].sum())},
                          ("sa", "sb"), seed=1, replicates=50)
    assert out["sa"].value == 190.0 and out["sb"].value == 30.0 and out["sb"].stderr == 0.0
    few = bootstrap_group([1.0], lambda xs: {"s": sum(xs)}, ("s",), seed=1)["s"]
    assert few.value == 1.0 and few.ci_low is None and few.n == 1
    none = bootstrap_group([], lambda xs: {"s": sum(xs)}, ("s",), seed=1)["s"]
    assert none.n == 0 and math.isnan(none.value)


def test_group_declarations_are_checked():
    with pytest.raises(MetricDeclarationError, match="metric group 'mt'.*missing: ter"):
        MetricGroup("mt", ("bleu", "ter"), {"bleu": True}, compute=lambda s: {})
    with pytest.raises(MetricDeclarationError, match="metric group 'mt' needs compute"):
        MetricGroup("mt", ("bleu",))
    with pytest.raises(MetricDeclarationError, match="a name appears twice"):
        MetricGroup("mt", ("bleu", "bleu"), compute=lambda s: {})


def test_samples_carrying_a_group_name_are_an_error():
    with pytest.raises(MetricDeclarationError, match="task grouped: samples carry 'spread', declared as a corpus"):
        Grouped().aggregate(samples_of([({"acc": 1.0, "spread": 0.1}, {"x": 0.3})]), seed=1)


# ---- tasks written before `metrics` -------------------------------------------------------------
class Legacy(GenerationTask):
    name = "legacy"
    higher_is_better = {"no_answer": False}


def test_legacy_dict_entries_are_declarations_and_other_names_warn():
    samples = samples_of([{"acc": 1.0, "no_answer": 0.0}, {"acc": 0.0, "no_answer": 1.0}])
    with pytest.warns(UndeclaredMetricWarning, match="task legacy: metric 'acc' is not declared"):
        out = Legacy().aggregate(samples, seed=1)
    assert out["acc"].higher_is_better is True and out["no_answer"].higher_is_better is False
    assert Legacy().declared_metrics() == [{"name": "no_answer", "higher_is_better": False, "level": "sample",
                                            "group": None}]
    # a typo in the samples no longer hides the declared name: it is missing
    with pytest.raises(MetricDeclarationError, match="task legacy: declared metric 'no_answer' is carried by no sample"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndeclaredMetricWarning)
            Legacy().aggregate(samples_of([{"acc": 1.0, "no_answr": 0.0}]), seed=1)


def test_a_task_declaring_nothing_still_reports_means_with_a_warning():
    class Bare(GenerationTask):
        name = "bare"

    with pytest.warns(UndeclaredMetricWarning, match="task bare: metric 'exact_match' is not declared"):
        out = Bare().aggregate(samples_of([{"exact_match": 1.0}, {"exact_match": 0.0}]), seed=1)
    assert out["exact_match"].value == 0.5 and out["exact_match"].higher_is_better is True


def test_legacy_corpus_dict_and_aggregate_override_keep_working():
    def mean_x(samples):
        return float(np.mean([s.extra["x"] for s in samples]))

    class OldCorpus(GenerationTask):
        name = "old_corpus"
        higher_is_better = {"acc": True, "mean_x": False, "extra_fig": False}
        corpus_metrics = {"mean_x": mean_x}

        def aggregate(self, samples, seed):  # the pre-MetricGroup way: figures added by an override
            out = super().aggregate(samples, seed)
            out["extra_fig"] = Metric("extra_fig", False, "corpus", mean_x).aggregate(samples, seed, self.name)
            return out

    out = OldCorpus().aggregate(_corpus(20), seed=2)
    assert list(out) == ["acc", "mean_x", "extra_fig"] and out["mean_x"].higher_is_better is False
    assert out["mean_x"].to_dict() == Metric("mean_x", False, "corpus", mean_x).aggregate(_corpus(20), 2,
                                                                                          "old_corpus").to_dict()


def test_a_multiple_choice_task_inherits_acc_and_acc_norm():
    from evalkit.taskapi.task import MultipleChoiceTask

    class Capitals(MultipleChoiceTask):
        name = "capitals_toy"

    t = Capitals()
    doc = Doc(id="0", query="Q:", choices=["Paris", "Rome"], gold=0)
    s = t.score(doc, [LoglikelihoodResult(-1.0, True), LoglikelihoodResult(-3.0, False)], RunContext())
    assert list(t.aggregate([s], seed=1)) == ["acc", "acc_norm"]
    assert not t.declares_metrics()  # only the shape's defaults: other names warn, as before
    with pytest.warns(UndeclaredMetricWarning):
        t.aggregate(samples_of([{"acc": 1.0, "acc_norm": 1.0, "calibration": 0.3}]), seed=1)


# ---- built-in tasks: what their samples carry is what they declare ------------------------------
def _mc(task, doc):
    return task.score(doc, [LoglikelihoodResult(-float(i + 1), i == 0) for i in range(4)], RunContext(num_fewshot=0))


def _builtin_samples(name):
    from evalkit.taskapi import registry

    task = registry.get_task_class(name)()
    ctx = RunContext(num_fewshot=0)
    if name in ("gsm8k", "gsm8k_cot"):
        doc = Doc(id="0", query="Q", target="x #### 12")
        return task, [task.sample_of(doc, [[Completion("#### 12", "stop")]], ["#### 12"],
                                     task.score_text(doc, "The answer is 12. #### 12"), ctx)]
    if name in ("mmlu", "mmlu_cot"):
        doc = Doc(id="anatomy-0", query="Q", choices=list("abcd"), gold=1, meta={"subject": "anatomy", "category": "stem"})
        if name == "mmlu":
            return task, [_mc(task, doc)]
        scored = task.score_text(doc, "Answer: B")
        return task, [task.sample_of(doc, [[Completion("Answer: B", "stop")]], ["Answer: B"], scored, ctx)]
    if name in ("gpqa_diamond", "gpqa_diamond_cot"):
        doc = Doc(id="rec1", query="Q", choices=list("abcd"), gold=0, meta={"domain": "Physics", "subdomain": "x"})
        if name == "gpqa_diamond":
            return task, [_mc(task, doc)]
        return task, [task.score(doc, [[Completion("Answer: A", "stop")]], ctx)]
    if name in ("wmt16_de_en", "xsum"):
        doc = Doc(id="0", query="src", target=["the red house"], fewshot_target="the red house")
        return task, [task.score(doc, [[Completion("the red house", "stop")]], ctx)]
    if name == "retrieval":
        doc = Doc(id="q1", query="q", target={"d1": 1})
        return task, [task.score_query(doc, {"d1": 2.0, "d2": 1.0})]
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["gsm8k", "gsm8k_cot", "mmlu", "mmlu_cot", "gpqa_diamond", "gpqa_diamond_cot",
                                  "wmt16_de_en", "xsum", "retrieval"])
def test_builtin_tasks_declare_exactly_what_their_samples_carry(name):
    pytest.importorskip("sacrebleu")
    pytest.importorskip("rouge_score")
    task, samples = _builtin_samples(name)
    assert task.declares_metrics()
    carried = {n for s in samples for n in s.metrics}
    declared = {m["name"]: m for m in task.declared_metrics()}
    assert carried <= set(declared)
    assert {n for n, m in declared.items() if m["level"] == "sample"} <= carried | {"closed_book_accuracy"}
    out = task.aggregate(samples, seed=1)   # raises on any disagreement
    assert set(out) == {n for n in declared if n in carried or declared[n]["level"] == "corpus"}
    assert all(out[n].higher_is_better is declared[n]["higher_is_better"] for n in out)


def test_score_task_writes_the_declared_metrics_into_the_record():
    from evalkit.run.config import RunConfig
    from evalkit.run.runner import score_task

    task, samples = _builtin_samples("mmlu_cot")
    entry, _ = score_task(task, samples, RunConfig(tasks=["mmlu_cot"]))
    assert entry.declared_metrics == task.declared_metrics()
    assert {m["name"]: m["higher_is_better"] for m in entry.to_dict()["declared_metrics"]} == {
        "acc": True, "first_last_differ": False, "no_answer": False, "acc_macro": True}
    assert entry.to_dict()["metrics"]["no_answer"]["higher_is_better"] is False


# ---- evaluate:NAME metrics go through the same group bootstrap ----------------------------------
class _FakeModule:
    """Stands in for an ``evaluate`` module: a per-sample list and two corpus numbers."""

    def __init__(self):
        self.calls = 0

    def compute(self, predictions, references):
        self.calls += 1
        gaps = [float(abs(len(p) - len(r))) for p, r in zip(predictions, references)]
        return {"gap": gaps, "total": float(sum(gaps)), "longest": float(max(len(p) for p in predictions)),
                "note": "v1"}


def test_evaluate_metrics_are_declared_and_bootstrapped_as_one_group(monkeypatch):
    from evalkit.scoring import hf_evaluate

    fake = _FakeModule()
    monkeypatch.setitem(hf_evaluate._LOADED, "fake_metric", fake)
    rng = np.random.default_rng(4)
    samples = [Sample(str(i), "h", "q", ["x" * int(rng.integers(1, 9))], "y" * int(rng.integers(1, 9)),
                      {"exact_match": float(i % 2)}) for i in range(12)]
    task = Toy()
    task.metrics = (Metric("exact_match"),)
    res = hf_evaluate.compute(task, samples, ["evaluate:fake_metric:bootstrap=40"], seed=8)
    assert fake.calls == 1 + 1 + 40  # all samples, the one-sample probe, then one call per replicate for both numbers
    per, group = res.declared
    assert per == Metric("fake_metric_gap") and isinstance(group, MetricGroup)
    assert group.name == "evaluate:fake_metric:bootstrap=40" and group.names == ("fake_metric_total", "fake_metric_longest")
    # the seed is the one the appended metrics always had: run seed, task, spec text
    want = bootstrap_group(range(12), group.compute, group.names, derive_seed(8, "toy", group.name, "bootstrap"), 40,
                           group.directions)
    assert {k: v.to_dict() for k, v in res.corpus.items()} == {k: v.to_dict() for k, v in want.items()}
    assert res.info == {"fake_metric": {"note": "v1"}}
    # the run's aggregation knows the appended names: a strict task reports them, the record lists them
    merged = [Sample(s.doc_id, s.doc_hash, s.prompt, s.responses, s.target, {**s.metrics, **extra})
              for s, extra in zip(samples, res.per_sample)]
    out = task.aggregate(merged, 8, res.declared)
    assert list(out) == ["exact_match", "fake_metric_gap"]
    with pytest.raises(MetricDeclarationError, match="task toy: sample metric 'fake_metric_gap' is not declared"):
        task.aggregate(merged, 8)
    assert [m["name"] for m in task.declared_metrics(res.declared)] == [
        "exact_match", "fake_metric_gap", "fake_metric_total", "fake_metric_longest"]


def test_an_old_aggregate_override_sees_the_appended_metrics():
    class OldOverride(GenerationTask):
        name = "old_override"
        metrics = (Metric("acc"),)

        def aggregate(self, samples, seed):
            return super().aggregate(samples, seed)

    samples = samples_of([{"acc": 1.0, "extra_gap": 2.0}, {"acc": 0.0, "extra_gap": 1.0}])
    out = OldOverride().aggregate(samples, 1, (Metric("extra_gap", higher_is_better=False),))
    assert out["extra_gap"].value == 1.5 and out["extra_gap"].higher_is_better is False

    class OlderStill(OldOverride):  # an old override over an old override
        name = "older_still"

        def aggregate(self, samples, seed):
            return super().aggregate(samples, seed)

    t = OlderStill()
    assert t.aggregate(samples, 1, (Metric("extra_gap"),))["extra_gap"].value == 1.5
    assert "_appended" not in t.__dict__  # nothing of the run stays on the task
