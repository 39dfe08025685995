"""The arena at scale: count bootstrap, streaming reader, undetermined ratings."""
from __future__ import annotations

import json
import math
from collections import Counter
import warnings

import numpy as np
import pandas as pd
import pytest

from evalkit.arena import (
    Battle,
    BattleFormatError,
    as_table,
    bootstrap_cells,
    bootstrap_samples,
    bt_leaderboard,
    compute_bt,
    load_battles,
    read_battle_table,
    write_battles,
)
from evalkit.arena.cells import aggregate
from evalkit.cli import main
from evalkit.judges.arena import rate


def synthetic(n=2000, n_models=5, seed=0, tie_rate=0.1, judges=("j1", None)):
    """Popularity-skewed battles with known strengths; both tie kinds; a few judges."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1.0, 1.0, n_models)
    pop = rng.dirichlet(np.full(n_models, 2.0))
    out = []
    while len(out) < n:
        i, j = rng.choice(n_models, 2, replace=False, p=pop)
        u = rng.random()
        if u < tie_rate:
            w = "tie" if u < tie_rate / 2 else "tie (bothbad)"
        else:
            w = "model_a" if rng.random() < 1 / (1 + math.exp(strength[j] - strength[i])) else "model_b"
        out.append(Battle(str(len(out)), f"m{i}", f"m{j}", w, judge=judges[len(out) % len(judges)],
                          extra={"conv_metadata": {"sum_assistant_a_tokens": int(rng.integers(1, 99))}}))
    return out


# ---- the count bootstrap equals the battle bootstrap in distribution ------------------------------
def test_count_bootstrap_matches_battle_bootstrap_in_distribution():
    battles = synthetic(n=1500, n_models=5, seed=3)
    rounds = 400
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_battle = bootstrap_samples(battles, compute_bt, rounds=rounds, seed=11)
    by_count = bootstrap_cells(aggregate(as_table(battles)), rounds=rounds, seed=12)
    assert set(by_count.columns) == set(by_battle.columns)
    sd = by_battle.std()
    # means: the difference of two independent means has sd * sqrt(2 / rounds)
    z_mean = ((by_count.mean() - by_battle.mean()) / (sd * math.sqrt(2 / rounds))).abs()
    assert z_mean.max() < 4.5, z_mean
    # spreads: the sd of a sample sd is about sd / sqrt(2 (rounds - 1)); allow for two of them
    assert ((by_count.std() - sd).abs() / (sd / math.sqrt(rounds - 1))).max() < 4.5
    # the interval ends: quantile standard error for a normal, times sqrt(2) for the difference
    for q in (0.025, 0.975):
        se = math.sqrt(2 * q * (1 - q) / rounds) / (math.exp(-0.5 * 1.96 ** 2) / math.sqrt(2 * math.pi))
        z = ((by_count.quantile(q) - by_battle.quantile(q)) / (sd * se)).abs()
        assert z.max() < 4.5, (q, z)
    # a real difference would be caught: a bootstrap of half the battles is much wider
    half = bootstrap_cells(aggregate(as_table(battles[::2])), rounds=rounds, seed=12)
    assert (half.std() / sd).min() > 1.25


def test_count_bootstrap_is_seeded_and_leaves_global_state_alone():
    cells = aggregate(as_table(synthetic(n=800, seed=4)))
    s1 = bootstrap_cells(cells, rounds=30, seed=5)
    pd.testing.assert_frame_equal(s1, bootstrap_cells(cells, rounds=30, seed=5))
    assert not np.allclose(s1.to_numpy(), bootstrap_cells(cells, rounds=30, seed=6)[s1.columns].to_numpy())
    np.random.seed(0)
    before = np.random.random()
    np.random.seed(0)
    bootstrap_cells(cells, rounds=3, seed=5)
    assert np.random.random() == before
    anchored = bootstrap_cells(cells, rounds=10, seed=1, anchor="m0", anchor_rating=900.0)
    np.testing.assert_allclose(anchored["m0"], 900.0)
    with pytest.raises(ValueError, match="whole"):
        bootstrap_cells(aggregate(as_table(synthetic(n=50)), weights=np.full(50, 0.5)), rounds=2)


def test_count_bootstrap_rounds_without_a_model_or_a_finite_mle_fall_back_like_the_battle_bootstrap():
    # a rarely seen model: some resamples miss it (NaN there) or see it only winning (no MLE)
    battles = synthetic(n=300, n_models=4, seed=1)
    battles += [Battle(None, "rare", "m0", "model_a"), Battle(None, "m1", "rare", "model_a"),
                Battle(None, "rare", "m2", "tie")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = bootstrap_cells(aggregate(as_table(battles)), rounds=200, seed=2)
    assert s["rare"].isna().any() and s["rare"].notna().any()
    assert s.drop(columns="rare").notna().all().all()
    assert any("MLE does not exist" in str(w.message) for w in caught)


def test_leaderboard_point_ratings_are_compute_bts():
    battles = synthetic(n=3000, n_models=8, seed=9)
    board = bt_leaderboard(battles, rounds=50, seed=0)
    fit = compute_bt(battles)
    assert list(board.index) == list(fit)
    np.testing.assert_allclose(board["rating"].to_numpy(), list(fit.values()), atol=1e-7, rtol=0)
    assert board["determined"].all() and (board["ci_low"] <= board["rating"]).all()
    anchored = bt_leaderboard(battles, rounds=20, seed=0, anchor="m3", anchor_rating=1200.0)
    assert anchored.loc["m3", "rating"] == pytest.approx(1200.0)


# ---- undetermined ratings --------------------------------------------------------------------------
def test_a_single_battle_gives_no_rating():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        board = bt_leaderboard([Battle(None, "x", "y", "model_a")], rounds=20)
    assert not board["determined"].any()
    assert board[["rating", "ci_low", "ci_high", "rank"]].isna().all().all()
    assert any("undetermined for 2 model(s)" in str(w.message) for w in caught)


def test_a_model_that_always_wins_is_undetermined_and_the_rest_rated_among_themselves(tmp_path, capsys):
    rest = synthetic(n=600, n_models=4, seed=5)
    champ = [Battle(None, "champ", f"m{i % 4}", "model_a") for i in range(40)]
    s = rate(rest + champ, "bt", rounds=30, seed=0)
    r = s["ratings"]
    assert r["champ"]["determined"] is False and r["champ"]["rating"] is None
    assert r["champ"]["ci_low"] is None and r["champ"]["rank"] is None and r["champ"]["wins"] == 40
    assert s["order"][-1] == "champ"
    fit = compute_bt(rest)                                         # the others: as if champ were absent
    for m, v in fit.items():
        assert r[m]["determined"] is True and r[m]["rating"] == pytest.approx(v, abs=0.01)
        assert r[m]["ci_low"] < r[m]["rating"] < r[m]["ci_high"]
    assert any("undetermined" in w for w in s["warnings"])
    with pytest.raises(ValueError, match="undetermined"):
        rate(rest + champ, "bt", rounds=5, anchor="champ")
    f = tmp_path / "b.jsonl"
    write_battles(f, rest + champ)
    assert main(["arena", "rate", str(f), "--no-output", "--rounds", "10"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if " champ " in f" {x} "]
    assert line.split()[:3] == ["-", "champ", "undetermined"] and "1 model(s) undetermined" in out


# ---- the streaming reader equals the in-memory one ------------------------------------------------
def _same(table, battles):
    ref = as_table(battles)
    assert table.same_battles(ref) and len(table) == len(battles)
    assert table.judges == ref.judges


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_stream_reader_equals_load_battles(tmp_path, suffix):
    battles = synthetic(n=2500, n_models=6, seed=2)
    f = tmp_path / f"b{suffix}"
    write_battles(f, battles)
    table = read_battle_table(f, chunk_rows=300)
    _same(table, load_battles(f))
    assert table.digests[str(f)] and table.fingerprint
    fit = compute_bt(battles)
    cells_fit = compute_bt(table)
    assert cells_fit == fit                                         # same cells, same bits


def test_stream_reader_parquet_multiple_files_bom_and_blank_lines(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    battles = synthetic(n=900, n_models=5, seed=6)
    rows = [b.to_dict() for b in battles]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "b.parquet", row_group_size=200)
    assert load_battles(tmp_path / "b.parquet") == battles
    _same(read_battle_table(tmp_path / "b.parquet", chunk_rows=128), battles)
    # two JSONL files, one with a byte-order mark and blank lines: pyarrow refuses, the exact reader reads
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    write_battles(first, battles[:400])
    second.write_bytes(b"\xef\xbb\xbf" + b"\n\n".join(json.dumps(r).encode() for r in rows[400:]) + b"\n")
    _same(read_battle_table([first, second]), battles)


@pytest.mark.parametrize("content,line,field", [
    ('{"model_a": "x", "model_b": "y", "winner": "model_a"}\n{"model_a": "x", "model_b": "y", "winner": "a"}\n',
     2, "winner"),
    ('{"model_a": "x", "model_b": "y", "winner": "tie"}\n\n{"model_a": "x", "winner": "tie"}\n', 3, "model_b"),
    ('{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": "x", "model_b": "x", "winner": "tie"}\n',
     2, "model_b"),
    ('{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": 3, "model_b": "y", "winner": "tie"}\n',
     2, "model_a"),
    ('{"model_a": "x", "model_b": "y", "winner": "tie"}\n{"model_a": "x", "model_b": "y"\n', 2, None),
    ('[{"model_a": "x", "model_b": "y", "winner": "tie"},\n {"model_a": "x", "model_b": "y", "winner": 1}]',
     2, "winner"),
])
def test_stream_reader_errors_are_load_battles_errors(tmp_path, content, line, field):
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    with pytest.raises(BattleFormatError) as exact:
        load_battles(f)
    with pytest.raises(BattleFormatError) as streamed:
        read_battle_table(f)
    assert str(streamed.value) == str(exact.value)
    assert streamed.value.line == line and streamed.value.field == field


def test_rate_from_a_table_equals_rate_from_battles_and_keeps_the_file(tmp_path):
    battles = synthetic(n=1200, n_models=5, seed=8)
    f = tmp_path / "b.jsonl"
    write_battles(f, battles)
    from_list = rate(battles, "bt", rounds=40, seed=3)
    from_table = rate(read_battle_table(f), "bt", rounds=40, seed=3)
    assert from_list["ratings"] == from_table["ratings"]
    assert from_list["battle_count_matrix"] == from_table["battle_count_matrix"]
    assert from_list["win_rate_matrix_ties_half"] == from_table["win_rate_matrix_ties_half"]
    out = tmp_path / "out"
    assert main(["arena", "rate", str(f), "--output", str(out), "--rounds", "10"]) == 0
    (rec,) = [p for p in out.iterdir() if (p / "run.json").exists()]
    run = json.loads((rec / "run.json").read_text())
    assert load_battles(rec / run["tasks"]["arena"]["battles_file"]) == battles
    assert run["tasks"]["arena"]["extra"]["judges"] == {"j1": 600, "unknown": 600}
    assert run["tasks"]["arena"]["extra"]["outcomes"] == dict(Counter(b.winner for b in battles))
