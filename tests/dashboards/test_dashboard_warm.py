"""The leaderboard server's warm-up (``evalkit.dashboards.serve``) and the store's listing at a click:
the first page finds the runs loaded and the default board ranked; a run added shows at once, a run.json
rewritten in place on the next rerun, and a listing never holds the page's data lock."""
from __future__ import annotations

import json
import threading
import time

import _dashboard_records as recs
from evalkit.dashboards import ranking, serve
from evalkit.dashboards.store import ResultsStore, shared_store
from evalkit.records import load_run


def test_the_warm_up_ranks_the_board_the_first_page_shows(tmp_path, monkeypatch):
    results = recs.many_models(tmp_path / "results", n=12)
    calls, real = [], ranking._bootstrap
    monkeypatch.setattr(ranking, "_bootstrap", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(ranking, "_MEMO", type(ranking._MEMO)())
    serve.warm(str(results), ())
    store = shared_store(str(results), ())
    assert len(store.summaries()) == 12 and calls                   # loaded and ranked before any session
    ranked = len(calls)
    at = recs.app_page(results, monkeypatch, view="Leaderboard")
    assert len(calls) == ranked                                      # the page used the warm-up's ranking
    grid = at.dataframe(key="lb_grid").value
    assert len(grid) == 12 and grid["overall"].notna().all()


def _rewrite(folder, **changes) -> None:
    data = json.loads((folder / "run.json").read_text())
    data.update(changes)
    (folder / "run.json").write_text(json.dumps(data))


def test_a_click_lists_the_runs_at_once_when_one_is_added_else_in_the_background(tmp_path):
    results = recs.many_models(tmp_path / "results", n=4)
    store = ResultsStore(results)
    assert store.refresh(max_age=2.0) and len(store.summaries()) == 4          # first listing: at once
    first = store.version
    assert not store.refresh(max_age=2.0)                                      # younger than max_age
    recs.many_models(tmp_path / "more", n=5)
    (tmp_path / "more" / "many-04").rename(results / "added-run")
    store._listed -= 10                                                         # the last listing is old
    assert store.refresh(max_age=2.0) and len(store.summaries()) == 5          # a new folder: seen at once
    folder = next(p for p in results.iterdir() if p.name != "added-run" and p.is_dir())
    run_id = load_run(folder).run_id
    _rewrite(folder, created_at="2026-03-01T00:00:00+00:00")                   # rewritten in place
    store._listed -= 10
    assert not store.refresh(max_age=2.0)                                      # the page keeps what it has...
    deadline = time.time() + 30
    while store.summaries()[run_id]["created_at"] != "2026-03-01T00:00:00+00:00" and time.time() < deadline:
        time.sleep(0.05)
    assert store.summaries()[run_id]["created_at"] == "2026-03-01T00:00:00+00:00" and store.version > first + 1


def test_a_listing_does_not_hold_the_data_lock(tmp_path, monkeypatch):
    results = recs.many_models(tmp_path / "results", n=3)
    store = ResultsStore(results)
    store.refresh()
    from evalkit.records import index
    entered, release = threading.Event(), threading.Event()
    real = index.update

    def slow_update(path):
        entered.set()
        release.wait(30)
        return real(path)
    monkeypatch.setattr(index, "update", slow_update)
    worker = threading.Thread(target=store.refresh)
    worker.start()
    try:
        assert entered.wait(30)
        t0 = time.perf_counter()
        assert len(store.cells()) and time.perf_counter() - t0 < 5               # pages render meanwhile
    finally:
        release.set()
        worker.join(30)
