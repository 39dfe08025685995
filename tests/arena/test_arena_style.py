"""Style control at scale (evalkit.arena.style_fit / style_board / style_columns).

The fast path (numpy columns read straight from the files, Newton on per-battle arrays, a weighted
bootstrap) is checked against the per-battle reference ``compute_bt_style`` and FastChat's recipe
(scikit-learn on ``construct_style_matrices``' duplicated design), and its bootstrap against index
resampling of the battles, in distribution.
"""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from evalkit.arena import (STYLE_CONTROL_ELEMENTS_V1, Battle, BattleFormatError, compute_bt, compute_bt_style,
                           read_battle_table)
from evalkit.arena.bt import _fit
from evalkit.arena.style_board import style_leaderboard, style_problem
from evalkit.arena.style_fit import StyleProblem, bootstrap_style, fit_style
from evalkit.cli import main
from tests.arena.test_arena_ratings import _style_design, max_rel, sklearn_bt

NAMES = [f"m{i}" for i in range(6)]
STRENGTH = np.array([0.0, 0.3, 0.5, 0.9, 1.2, 1.6])


def styled_battles(n=3000, seed=11):
    """BT battles where the judge also likes longer answers with more bold text (a true style
    effect), with LMArena's conv_metadata (dict-valued counts, as FastChat's files have)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        i, j = rng.choice(6, size=2, replace=False)
        ta, tb = (int(x) for x in rng.integers(20, 900, 2))
        ba, bb = (int(x) for x in rng.integers(0, 6, 2))
        z = STRENGTH[i] - STRENGTH[j] + 1.5 * (ta - tb) / (ta + tb + 1) + 0.1 * (ba - bb)
        u = rng.random()
        winner = ("tie" if rng.random() < 0.5 else "tie (bothbad)") if u < 0.12 else \
            ("model_a" if rng.random() < 1 / (1 + math.exp(-z)) else "model_b")
        meta = {"sum_assistant_a_tokens": ta, "sum_assistant_b_tokens": tb,
                "header_count_a": {"h1": int(rng.integers(0, 3)), "h2": int(rng.integers(0, 3))},
                "header_count_b": {"h1": int(rng.integers(0, 3)), "h2": int(rng.integers(0, 3))},
                "list_count_a": {"ordered": int(rng.integers(0, 4)), "unordered": int(rng.integers(0, 4))},
                "list_count_b": {"ordered": int(rng.integers(0, 4)), "unordered": int(rng.integers(0, 4))},
                "bold_count_a": {"**": ba, "__": 0}, "bold_count_b": {"**": bb, "__": 0}, "turns": 1}
        out.append(Battle(str(k), NAMES[i], NAMES[j], winner, extra={"conv_metadata": meta, "tstamp": 1.7e9 + k}))
    return out


def write_jsonl(path, battles):
    path.write_text("".join(json.dumps(b.to_dict()) + "\n" for b in battles))
    return path


@pytest.fixture(scope="module")
def battles():
    return styled_battles()


@pytest.fixture(scope="module")
def table(battles, tmp_path_factory):
    path = write_jsonl(tmp_path_factory.mktemp("style") / "b.jsonl", battles)
    return read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1)


def test_point_fit_equals_compute_bt_style_and_fastchat(battles, table):
    for l2 in (0.0, 0.5):
        ref, ref_coefs = compute_bt_style(battles, l2=l2)
        board, coefs = style_leaderboard(table, rounds=0, l2=l2)
        ours = board["rating"].to_dict()
        assert max(abs(ours[m] - ref[m]) for m in ref) < 1e-8          # Elo points
        np.testing.assert_allclose(coefs["coef"].to_numpy(), list(ref_coefs.values()), atol=1e-11)
    # FastChat: sklearn LogisticRegression on construct_style_matrices' duplicated rows (C=1 == l2=0.5 here)
    design = _style_design(battles)
    fc, fc_coef = sklearn_bt(battles, extra_columns=design, C=1.0, solver="newton-cholesky")
    assert max_rel(board["rating"].to_dict(), fc) < 1e-11
    np.testing.assert_allclose(coefs["coef"].to_numpy(), fc_coef, atol=1e-10)
    # the generator's length effect is found, and style control moves the ratings
    assert coefs.loc["sum_assistant_a_tokens", "coef"] > 0.2
    plain = compute_bt(battles)
    assert max(abs(plain[m] - ref[m]) for m in ref) > 1e-3


def test_readers_agree_on_style_columns(battles, table, tmp_path):
    as_array = tmp_path / "b.json"
    as_array.write_text(json.dumps([b.to_dict() for b in battles]))
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    as_parquet = tmp_path / "b.parquet"
    pq.write_table(pa.Table.from_pylist([b.to_dict() for b in battles]), as_parquet)
    for path in (as_array, as_parquet):
        other = read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1)
        assert other.same_battles(table)
        np.testing.assert_array_equal(other.style, table.style)
    # small blocks through the arrow path agree with the exact reader too
    small = read_battle_table(as_array, chunk_rows=7, style=STYLE_CONTROL_ELEMENTS_V1)
    np.testing.assert_array_equal(small.style, table.style)


def test_weights_are_index_resampling(table):
    """One round's weights (how often each battle was drawn) fit exactly what the resampled
    battles fit with compute_bt_style's solver on the full-data design (FastChat's bootstrap)."""
    prob = style_problem(table)
    m, n = len(prob.models), prob.n
    for seed in range(3):
        idx = np.random.default_rng(seed).integers(0, n, n)
        w = np.bincount(idx, minlength=n).astype(float)
        ours = fit_style(prob, w)
        pairs = np.stack([prob.a[idx], prob.b[idx]], 1)
        ref = _fit(pairs, prob.outcome[idx], np.ones(n), m, math.log(10), 1e-10, 10_000, n_extra=prob.k,
                   design=prob.design[:, idx].T)
        np.testing.assert_allclose(ours, ref, atol=1e-9)


def test_bootstrap_matches_index_bootstrap_in_distribution(table):
    """Independent seeds, 1,000 rounds each: the weighted bootstrap against index resampling (the
    resampled battles' own arrays fitted, as FastChat's bootstrap does on the full-data design; the
    solver is tied to compute_bt_style's above).  Means, standard deviations and the 2.5/50/97.5%
    quantiles of every rating and coefficient agree within Monte Carlo error."""
    prob = style_problem(table)
    n, rounds = prob.n, 1000
    ours = bootstrap_style(prob, rounds, seed=1)
    rng = np.random.default_rng(2)
    ref = np.empty_like(ours)
    for r in range(rounds):
        idx = rng.integers(0, n, n)
        ref[r] = fit_style(StyleProblem(prob.models, prob.a[idx], prob.b[idx], prob.outcome[idx],
                                        np.ascontiguousarray(prob.design[:, idx])))
    sd = ref.std(axis=0)
    z = [np.abs(ours.mean(0) - ref.mean(0)) / (sd * math.sqrt(2 / rounds)),
         np.abs(ours.std(0) - sd) / (sd / math.sqrt(rounds))]
    for q in (0.025, 0.5, 0.975):
        dens = math.exp(-0.5 * 1.959964 ** 2 * (q != 0.5)) / math.sqrt(2 * math.pi)
        se = math.sqrt(2 * q * (1 - q) / rounds) / dens
        z.append(np.abs(np.quantile(ours, q, axis=0) - np.quantile(ref, q, axis=0)) / (sd * se))
    worst = float(np.max(z))
    assert worst < 4.0, worst
    # and not trivially: a bootstrap that ignored the resampling would be far off
    assert np.all(ours.std(0) > 0.5 * sd)


def test_cli_style_control_record_and_table(battles, tmp_path, capsys):
    path = write_jsonl(tmp_path / "b.jsonl", battles[:1500])
    out = tmp_path / "out"
    assert main(["arena", "rate", str(path), "--style-control", "--rounds", "20", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "style-controlled" in text and "sum_assistant_a_tokens" in text
    (rec,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    run = json.loads((rec / "run.json").read_text())
    t = run["tasks"]["arena"]
    assert t["config"]["style_control"] is True and run["config"]["arena"]["style_elements"] == list(
        STYLE_CONTROL_ELEMENTS_V1)
    sc = t["style_control"]
    ref, ref_coefs = compute_bt_style(battles[:1500])
    for mname, r in sc["ratings"].items():
        assert abs(r["rating"] - ref[mname]) <= 0.005 and r["ci_low"] < r["rating"] < r["ci_high"]
    for f, c in sc["coefs"].items():
        assert abs(c["coef"] - ref_coefs[f]) < 1e-6 and c["ci_low"] < c["coef"] < c["ci_high"]
    # the dashboard reads them back (records only)
    from evalkit.dashboards import data, pairs
    store = data.ResultsStore(out)
    store.refresh()
    (board,) = pairs.arena_boards(store)
    assert list(board.style["model"]) == list(sc["ratings"]) and len(board.style_coefs) == 4


def test_missing_style_feature_names_file_line_and_field(battles, tmp_path):
    rows = json.loads(json.dumps([b.to_dict() for b in battles[:50]]))   # a deep copy: the fixture stays
    del rows[31]["conv_metadata"]["bold_count_b"]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(BattleFormatError) as err:
        read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1)
    assert err.value.line == 32 and err.value.field == "conv_metadata.bold_count_b" and "bad.jsonl:32" in str(err.value)
    assert main(["arena", "rate", str(path), "--style-control", "--no-output"]) != 0
    plain = [{k: v for k, v in r.items() if k != "conv_metadata"} for r in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in plain))
    with pytest.raises(BattleFormatError, match="bad.jsonl:1: field 'conv_metadata'"):
        read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(read_battle_table(path)) == 50          # without style control the file is fine


def test_arena_page_shows_style_controlled_ratings(battles, tmp_path, monkeypatch):
    """The leaderboard's Arena page (streamlit AppTest) draws the style-controlled ratings and the
    coefficients of a --style-control record, as recorded."""
    from _dashboard_records import app_page
    out = tmp_path / "results"
    path = write_jsonl(tmp_path / "b.jsonl", battles[:1200])
    assert main(["arena", "rate", str(path), "--style-control", "--rounds", "10", "--output", str(out)]) == 0
    (rec,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    sc = json.loads((rec / "run.json").read_text())["tasks"]["arena"]["style_control"]
    at = app_page(out, monkeypatch, "Arena", timeout=180)
    assert any(h.value == "Style control" for h in at.subheader)
    frames = {tuple(d.value.columns): d.value for d in at.dataframe}
    styled = next(v for k, v in frames.items() if "rating" in k and len(v) == 6 and
                  list(v["rating"]) == [r["rating"] for r in sc["ratings"].values()])
    assert list(styled["model"]) == list(sc["ratings"])
    coefs = next(v for k, v in frames.items() if "coef" in k)
    assert list(coefs["coef"]) == [c["coef"] for c in sc["coefs"].values()]
    specs = [c.proto.spec for c in at.get("vega_lite_chart")]
    assert len(specs) == 4 and sum("Style-controlled BT rating" in s for s in specs) == 1   # + ratings, 2 heatmaps


def test_unrelated_fields_never_leave_the_fast_path(battles, tmp_path, monkeypatch):
    """Style control declares conv_metadata's style keys and skips every other field: a new
    top-level field, and an unrelated field that changes type, after the first block keep the file
    on the fast (pyarrow) path, with the numbers of summing every value (FastChat's
    extract_style_feature); a style object that lacks one of its keys there goes to the exact reader."""
    from evalkit.arena import stream
    from evalkit.arena.style_columns import record_ratios

    real, exact = stream._exact, []                  # which files the exact (Python) reader read

    def spy(path, *rest):
        exact.append(path)
        return real(path, *rest)

    monkeypatch.setattr(stream, "_exact", spy)
    rows = json.loads(json.dumps([dict(b.to_dict(), tstamp=1) for b in battles]))   # a deep copy
    rows[-1]["tstamp"] = "yesterday"                                   # unrelated: number -> string
    rows[-2]["late_field"] = {"nested": [1, 2]}
    path = tmp_path / "late.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert path.stat().st_size > 1 << 20                                # the changes sit past the first block
    table = read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1)
    assert exact == []
    want = np.array([record_ratios(r, STYLE_CONTROL_ELEMENTS_V1) for r in rows])
    np.testing.assert_array_equal(table.style, want)
    as_array = tmp_path / "late.json"
    as_array.write_text(json.dumps(rows))
    board, coefs = style_leaderboard(table, rounds=0)
    ref_board, ref_coefs = style_leaderboard(read_battle_table(as_array, style=STYLE_CONTROL_ELEMENTS_V1), rounds=0)
    assert exact == [as_array]
    assert board["rating"].to_dict() == ref_board["rating"].to_dict() and coefs.equals(ref_coefs)
    del rows[-1]["conv_metadata"]["header_count_a"]["h2"]               # a key this row lacks: exact reader
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    np.testing.assert_array_equal(read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1).style,
                                  [record_ratios(r, STYLE_CONTROL_ELEMENTS_V1) for r in rows])
    assert exact[-1] == path


def test_null_inside_a_style_object_is_an_error_in_both_readers(battles, tmp_path):
    """{"h1": 1, "h2": null}: FastChat's sum() fails on it, and so do both readers (JSON Lines
    through pyarrow, a JSON array through the exact reader), naming file, line and field."""
    rows = json.loads(json.dumps([b.to_dict() for b in battles[:40]]))
    rows[17]["conv_metadata"]["header_count_b"]["h2"] = None
    jsonl, array = tmp_path / "n.jsonl", tmp_path / "n.json"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    array.write_text(json.dumps(rows))
    for path, where in ((jsonl, "n.jsonl:18: "), (array, "n.json: ")):
        with pytest.raises(BattleFormatError) as err:
            read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1)
        assert err.value.field == "conv_metadata.header_count_b" and where in str(err.value)
    assert "battle #18" in str(err.value)
    with pytest.raises(TypeError):                       # the per-battle reference agrees
        compute_bt_style([Battle.from_dict(r) for r in rows])


def test_undetermined_model_standardises_over_all_battles(battles, tmp_path):
    """A model that never loses has no rating; the others are fitted on the battles among
    themselves with the style design standardised over *all* the battles, as FastChat's
    construct_style_matrices (and compute_bt_style) standardise over every battle given."""
    solo = [Battle(f"s{i}", "solo", NAMES[i % 6], "model_a", extra={"conv_metadata": {
        **battles[i].extra["conv_metadata"], "sum_assistant_a_tokens": 5000}}) for i in range(40)]
    every = battles[:1500] + solo
    table = read_battle_table(write_jsonl(tmp_path / "u.jsonl", every), style=STYLE_CONTROL_ELEMENTS_V1)
    design = _style_design(every)                                       # standardised over all battles
    live = [i for i, b in enumerate(every) if "solo" not in (b.model_a, b.model_b)]
    for l2, C in ((0.0, None), (0.5, 1.0)):
        with pytest.warns(RuntimeWarning, match="solo"):
            board, coefs = style_leaderboard(table, rounds=0, l2=l2)
        assert not board.loc["solo", "determined"] and math.isnan(board.loc["solo", "rating"])
        ref, ref_coef = sklearn_bt([every[i] for i in live], extra_columns=design[live], C=C,
                                   solver="newton-cholesky")
        assert max_rel(board["rating"].drop("solo").to_dict(), ref) < 1e-10
        np.testing.assert_allclose(coefs["coef"].to_numpy(), ref_coef, atol=1e-9)


def test_style_control_with_elo_is_refused_once(battles, tmp_path, capsys):
    """``--style-control`` needs ``--method bt``: the CLI and the API give the one message (summary.rate)."""
    from evalkit.judges.arena import rate
    path = write_jsonl(tmp_path / "b.jsonl", battles[:50])
    assert main(["arena", "rate", str(path), "--style-control", "--method", "elo", "--no-output"]) != 0
    assert "--style-control works with --method bt only" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--method bt only"):
        rate(read_battle_table(path, style=STYLE_CONTROL_ELEMENTS_V1), "elo", style_control=True)
