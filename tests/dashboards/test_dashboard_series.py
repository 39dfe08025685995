"""Checkpoint series: `--series NAME --step N` on run and score, `series=`/`step=` in evalkit.evaluate, and
the leaderboard's Series view (metric against step with CI bands, the first significant drop marked)."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from _dashboard_records import app_page, need
from evalkit.cli import main
from evalkit.dashboards.series import first_drop, series_frame
from evalkit.records import load_run, write_run

# six checkpoints of one training run: accuracy rises, peaks at step 3000, then collapses at 5000
STEPS = [0, 1000, 2000, 3000, 4000, 5000]
ACC = [0.30, 0.45, 0.55, 0.62, 0.60, 0.40]


def _mv(v: float, n: int) -> dict:
    se = math.sqrt(v * (1 - v) / n)
    return {"value": v, "stderr": se, "ci_low": v - 1.96 * se, "ci_high": v + 1.96 * se, "n": n, "kind": "mean",
            "higher_is_better": True}


def checkpoints(out, series="olmo-mini", steps=STEPS, acc=ACC):
    for i, (step, a) in enumerate(zip(steps, acc)):
        tasks = {"gsm8k_like": {"version": "1", "prompt_hash": "gs", "n_docs": 400,
                                "metrics": {"exact_match": _mv(a, 400)}},
                 "ppl_like": {"version": "1", "prompt_hash": "pp", "n_docs": 400,
                              "metrics": {"bits_per_byte": {**_mv(0.9 - a / 2, 400), "higher_is_better": False}}}}
        run = {"schema_version": 2, "run_id": f"{series}-step{step}", "created_at": f"2026-03-01T00:{i:02d}:00+00:00",
               "model": {"name": f"{series}@{step}", "backend": "hf", "spec": f"hf:ckpt-{step}",
                         "identity_hash": f"c{step}"},
               "config": {"tags": ["ckpt"], "series": {"name": series, "step": step}}, "tasks": tasks}
        write_run(out, run, {t: [] for t in tasks})
    return out


def test_the_first_step_worse_than_the_best_before_it_is_found():
    frame = pd.DataFrame({"step": STEPS, "value": ACC, "ci_low": [a - 0.05 for a in ACC],
                          "ci_high": [a + 0.05 for a in ACC], "higher_is_better": True})
    assert first_drop(frame) == {"step": 5000, "best_step": 3000, "ci": pytest.approx((0.35, 0.45)),
                                 "best_ci": pytest.approx((0.57, 0.67))}
    assert first_drop(frame.iloc[:5]) is None                          # 4000 overlaps 3000: no drop
    lower = frame.assign(value=[1 - a for a in ACC], ci_low=[0.95 - a for a in ACC], ci_high=[1.05 - a for a in ACC],
                         higher_is_better=False)
    assert first_drop(lower)["step"] == 5000                           # lower is better: a rise is the drop
    shuffled = frame.sample(frac=1, random_state=0)
    assert first_drop(shuffled)["step"] == 5000                        # steps are read in order


def test_series_frame_keeps_the_newest_run_per_step(tmp_path):
    from evalkit.dashboards.store import ResultsStore
    results = checkpoints(tmp_path / "results")
    rerun = checkpoints(tmp_path / "rerun", steps=[5000], acc=[0.61])   # step 5000 evaluated again, later
    for folder in rerun.iterdir():
        data = json.loads((folder / "run.json").read_text())
        data["created_at"], data["run_id"] = "2026-03-02T00:00:00+00:00", "again"
        write_run(results, data, {t: [] for t in data["tasks"]})
    store = ResultsStore(str(results))
    store.refresh()
    frame = series_frame(store.cells(), "olmo-mini")
    acc = frame[frame["metric"] == "exact_match"].set_index("step")["value"]
    assert list(acc.index) == STEPS and acc[5000] == 0.61


def test_series_view_draws_each_task_and_names_the_drop(tmp_path, monkeypatch):
    results = checkpoints(tmp_path / "results")
    checkpoints(results, series="other-run", steps=[0, 10], acc=[0.2, 0.3])
    at = app_page(results, monkeypatch, view="Series")
    assert any(t.value == "Series" for t in at.title)
    assert at.selectbox(key="series_name").options == ["olmo-mini", "other-run"]
    drops = at.dataframe[0].value.set_index("metric")
    assert drops.loc["exact_match", "first drop"].startswith("step 5000: [0.3520, 0.4480] worse than step 3000's")
    assert drops.loc["bits_per_byte", "first drop"].startswith("step 5000:")   # lower is better: it rose
    values = at.dataframe[1].value
    assert list(values["step"]) == STEPS and list(values.iloc[:, 1]) == pytest.approx(ACC)
    at.selectbox(key="series_name").set_value("other-run").run()
    assert not at.exception and list(at.dataframe[1].value["step"]) == [0, 10]
    assert list(at.dataframe[0].value["first drop"]) == ["-", "-"]


def test_score_and_run_take_series_and_step(tmp_path, capsys):
    gsm = need("gsm8k")
    pred = tmp_path / "p.jsonl"
    rows = [json.loads(line) for line, _ in zip(open(gsm / "example_model_solutions.jsonl", encoding="utf-8"),
                                                range(5))]
    pred.write_text("".join(json.dumps({"doc_id": str(i), "prediction": r["6b_finetuning"]["solution"]}) + "\n"
                            for i, r in enumerate(rows)))
    base = ["score", "--task", "gsm8k", "--data", str(gsm), "--predictions", str(pred), "--output", str(tmp_path / "out")]
    assert main(base + ["--series", "sft", "--step", "250"]) == 0
    run = load_run(next((tmp_path / "out").iterdir())).run
    assert run.config["series"] == {"name": "sft", "step": 250}
    capsys.readouterr()
    for extra, message in ((["--step", "250"], "--step 250 needs --series NAME"),
                           (["--series", "sft"], "--series sft: give the checkpoint's --step N"),
                           (["--series", "sft", "--step", "-1"], "--step -1: expected an integer >= 0")):
        assert main(base + extra) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err
        assert main(["run", "--model", "hf:smollm2-135m", "--tasks", "gsm8k", "--data", f"gsm8k={gsm}"] + extra) == 2
        assert message in capsys.readouterr().err                       # before any model loads


def test_the_docs_training_loop_makes_a_series(tmp_path, shared_data, tiny_model_dir):
    """The getting-started page's training-loop example (docs/getting-started.md), run as written (data path made absolute): two checkpoints, two
    records of one series with their steps, and two model identities (the weights moved)."""
    import os
    import re
    import subprocess
    import sys
    from conftest import REPO
    page = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    section = page[page.index("### Checkpoint series"):]
    code = re.search(r"```py(?:thon)?\n(.*?)```", section, re.S).group(1)
    code = code.replace("../shared/data/mmlu", str(shared_data / "mmlu"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    runs = sorted((load_run(d).run for d in (tmp_path / "results").iterdir() if d.is_dir()),
                  key=lambda r: r.config["series"]["step"])
    assert [r.config["series"] for r in runs] == [{"name": "sft-demo", "step": 1}, {"name": "sft-demo", "step": 2}]
    assert runs[0].model.identity_hash != runs[1].model.identity_hash
    assert all(r.tasks["mmlu_abstract_algebra"].n_docs == 4 for r in runs)
    assert main(["runs", "list", "--results", str(tmp_path / "results"), "--format", "json"]) == 0


@pytest.mark.browser
@pytest.mark.server
def test_six_checkpoints_in_chromium(tmp_path):
    """The Series view in the system Chromium: both task charts drawn, the drop at step 5000 named."""
    import os
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import dashboard_screenshots as shots
    if not Path(shots.CHROMIUM).exists():
        pytest.skip(f"{shots.CHROMIUM} is missing (apt-get install chromium; scripts/install.sh does it)")
    from playwright.sync_api import sync_playwright
    results = checkpoints(tmp_path / "results")
    srv = shots.Server(results, tmp_path / "streamlit.log")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                shots.open_view(page, srv.url, view="Series")
                page.get_by_role("heading", name="Series").wait_for(timeout=60_000)
                charts = page.locator("[data-testid=stVegaLiteChart], [data-testid=stArrowVegaLiteChart]")
                charts.nth(1).wait_for(timeout=60_000)
                assert charts.count() == 2                              # one per task
                drops = page.locator("[data-testid=stDataFrame]").first
                drops.locator("[role=row]").nth(2).wait_for(state="attached", timeout=60_000)
                cells = " | ".join(drops.locator("[role=gridcell]").all_text_contents())
                assert cells.count("step 5000:") == 2, cells
                assert page.locator("[data-testid=stException]").count() == 0
                shots.shoot(page, Path(os.environ.get("EVALKIT_SCREENSHOT_DIR", tmp_path)) / "series.png", 1400)
            finally:
                browser.close()
    finally:
        srv.close()
