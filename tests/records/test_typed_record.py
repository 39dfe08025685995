"""The record typed down to the metric value: loaded values are ``MetricValue``s and sample rows
``SampleRow``s, a wrong value is named by file and field, the shipped schema rejects it, and older
records come up to date through the one migration function."""
from __future__ import annotations

import copy
import json
import math

import pytest

from test_architecture import SCHEMA1_RECORD, _write_old


def test_loaded_metric_values_and_rows_are_typed(tmp_path):
    from evalkit.records import MetricValue, SampleRow, load_run
    rec = load_run(_write_old(tmp_path, SCHEMA1_RECORD))
    mv = rec.run.tasks["gsm8k"].metrics["exact_match_numeric"]
    assert isinstance(mv, MetricValue)
    assert (mv.value, mv.stderr, mv.n, mv.kind, mv.higher_is_better) == (0.5, 0.5, 2, "mean", True)
    assert mv["value"] == 0.5 and json.loads(json.dumps(mv)) == SCHEMA1_RECORD["tasks"]["gsm8k"]["metrics"][
        "exact_match_numeric"]
    rows = list(rec.samples("gsm8k"))
    assert all(isinstance(r, SampleRow) for r in rows)
    assert [r.doc_id for r in rows] == ["0", "1"] and rows[0].metrics == {"exact_match_numeric": 1.0}


def test_a_wrong_metric_value_is_named_by_file_and_field(tmp_path):
    from evalkit.records import RecordError, load_run
    bad = copy.deepcopy(SCHEMA1_RECORD)
    bad["tasks"]["gsm8k"]["metrics"]["acc"] = "oops"
    with pytest.raises(RecordError, match=r"run\.json: tasks\.gsm8k: metrics\.acc: a metric value must be an object"):
        load_run(_write_old(tmp_path, bad, "oops"))
    bad["tasks"]["gsm8k"]["metrics"]["acc"] = {"value": "high", "n": 3}
    with pytest.raises(RecordError, match=r"metrics\.acc\.value: expected a number or null"):
        load_run(_write_old(tmp_path, bad, "high"))
    bad["tasks"]["gsm8k"]["metrics"]["acc"] = {"value": 0.5, "n": -1}
    with pytest.raises(RecordError, match=r"metrics\.acc\.n: expected a count"):
        load_run(_write_old(tmp_path, bad, "neg"))


def test_the_shipped_schema_requires_fields_and_types():
    jsonschema = pytest.importorskip("jsonschema")
    from evalkit.records import schema
    shipped = json.loads(schema.SCHEMA_PATH.read_text())
    jsonschema.validate(SCHEMA1_RECORD, shipped)
    for break_it in (lambda d: d["tasks"]["gsm8k"]["metrics"].__setitem__("acc", "oops"),
                     lambda d: d["tasks"]["gsm8k"]["metrics"]["exact_match_numeric"].__setitem__("n", 1.5),
                     lambda d: d["tasks"]["gsm8k"]["metrics"]["exact_match_numeric"].__setitem__("higher_is_better", "yes"),
                     lambda d: d["tasks"]["gsm8k"]["breakdowns"].__setitem__("g", {"acc": {"stderr": 0.1}}),
                     lambda d: d["tasks"]["gsm8k"].pop("metrics"),
                     lambda d: d.pop("run_id")):
        bad = copy.deepcopy(SCHEMA1_RECORD)
        break_it(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, shipped)


def test_one_migration_brings_schema1_up_to_date():
    from evalkit.records import Run, migrate
    old = copy.deepcopy(SCHEMA1_RECORD)
    new = migrate(old)
    assert old == SCHEMA1_RECORD, "the input is not changed"
    assert new["kind"] == "evaluation"
    assert new["config"]["metrics"] == ["evaluate:/x/m.py"] and new["config"]["task_options"] == {}
    assert migrate(new) == new, "migrating twice changes nothing"
    assert Run.from_dict(old).to_dict() == Run.from_dict(new).to_dict()


def test_values_built_in_memory_are_typed_and_not_finite_is_null():
    from evalkit.records import MetricValue, RecordError, TaskEntry
    from evalkit.scoring.stats import mean_metric
    assert MetricValue is type(mean_metric([1.0, 0.0]))
    entry = TaskEntry(metrics={"acc": mean_metric([1.0, 0.0]).to_dict()}, breakdowns={"g": {"acc": mean_metric([])}})
    assert isinstance(entry.metrics["acc"], MetricValue) and entry.metrics["acc"].n == 2
    assert math.isnan(entry.breakdowns["g"]["acc"].value) and entry.breakdowns["g"]["acc"]["value"] is None
    entry.metrics["pass@1"] = {"value": 1.0, "n": 3}
    assert entry.metrics["pass@1"].kind == "mean" and entry.metrics["pass@1"].ci_low is None
    with pytest.raises(RecordError, match="metrics.bad.value"):
        entry.metrics["bad"] = {"value": "x"}
    assert json.loads(json.dumps(entry.to_dict()))["metrics"]["acc"]["value"] == 0.5
