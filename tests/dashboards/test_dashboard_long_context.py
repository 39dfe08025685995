"""The depth x length heat map's data: a ``niah_grid`` record (two scripted models) read back through
the results store and ``tables.breakdowns``, reshaped by ``long_context.depth_length_grid``, equals the
record's own ``extra.ruler.grid``; the chart draws one cell per (length, depth)."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from evalkit.dashboards import data, long_context, tables

import evalkit

pytest.importorskip("wonderwords")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tasks"))


def test_grid_from_the_store_equals_the_records_grid(tiny_model_dir, tmp_path):
    from test_ruler_grid import _backend
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    args = {"niah_grid": {"lengths": "512+1024", "depths": "0+50+100", "samples": 1}}
    runs = {}
    for reach in (2500, 99_999):
        runs[f"reader-{reach}"] = evalkit.evaluate(model=_backend(tok, reach), tasks=["niah_grid"], output=str(tmp_path),
                                                   cache=False, task_args=args)
    store = data.ResultsStore(tmp_path)
    store.refresh()
    cells = store.cells()
    col = cells[cells["task"] == "niah_grid"]["col"].iloc[0]
    bd = tables.breakdowns(store, cells, col)
    grid = long_context.depth_length_grid(bd[(bd["dimension"] == "cell") & (bd["metric"] == "score")])
    assert len(grid) == 12 and set(grid["model"]) == set(runs)
    for model, run in runs.items():
        want = run.tasks["niah_grid"].extra["ruler"]["grid"]
        mine = grid[grid["model"] == model]
        got = {str(n): {f"{d:g}": v for d, v in zip(g["depth"], g["value"])} for n, g in mine.groupby("length")}
        assert got == want
    assert grid[grid["model"] == "reader-99999"]["value"].eq(1.0).all()
    assert grid[(grid["model"] == "reader-2500") & (grid["length"] == 1024) & (grid["depth"] == 100)]["value"].item() == 0.0
    spec = long_context.depth_length_heatmap(grid, "reader-2500").to_dict()
    assert len(spec["datasets"][next(iter(spec["datasets"]))]) == 6


def test_groups_that_are_not_a_grid_give_nothing():
    part = pd.DataFrame({"model": ["m"], "group": ["abstract_algebra"], "value": [0.5], "ci_low": [0.4],
                         "ci_high": [0.6], "n": [10]})
    assert long_context.depth_length_grid(part).empty
    part["group"] = ["2048@12.5"]
    g = long_context.depth_length_grid(part)
    assert g.loc[0, "length"] == 2048 and g.loc[0, "depth"] == 12.5
