"""The leaderboard at a team's scale: 100, 1,000 and 10,000 run records (2,000 models at 10,000) in
Chromium through Playwright, as a user clicks.

    python bench/bench_leaderboard_scale.py                       # 100, 1,000 and 10,000 runs
    python bench/bench_leaderboard_scale.py --sizes 1000 --keep   # one size, keep the records

For each size it
1. writes synthetic but valid run records (``evalkit score``-shaped: 7 benchmarks with values, 95%
   CIs, item counts, a samples file per task; 5 runs per model over the benchmarks, some under other
   generation settings, tags, one training run's checkpoint series), checked with ``load_run``;
2. builds the run index (``evalkit runs index``), timed on its own (the first build reads every run.json);
3. starts ``evalkit leaderboard`` on loopback (timing its start until it listens: its warm-up, which
   loads the runs and ranks the default board, begins there and goes on in the background) and, in
   the system's Chromium at 1400 px, times the first ready page (from opening the URL), a switch to
   every view and back, and a filter change (a click on "Newest run per cell only"): each click from
   the click to the end of the script run it causes, read from the page's own clock (a
   MutationObserver on Streamlit's script state); and the page's height;
4. reads the server's peak RSS (``VmHWM``, its process tree) and CPU time.
Targets at 10,000 runs: first page <= 5 s once the index exists, every click <= 1 s, RSS <= 1 GB.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
READY = "[data-testid=stApp][data-test-script-state=notRunning]"
TASKS = {"gsm8k": 1319, "mmlu": 14042, "math500": 500, "bbh_cot": 6511, "xsum": 1000, "humaneval": 164,
         "ifeval": 541}
VIEWS = ("Task", "Series", "Retrieval", "Compare", "Arena", "Leaderboard")
RUNS_PER_MODEL = 5
# every change of Streamlit's script state, with the state it left (a fast run can go running -> notRunning
# between two callbacks: the old value still shows it ran)
WATCH = """() => { window.__st = []; const app = document.querySelector('[data-testid=stApp]');
  new MutationObserver(ms => { for (const m of ms) window.__st.push([performance.now(), m.oldValue,
      app.getAttribute('data-test-script-state')]); })
    .observe(app, {attributes: true, attributeFilter: ['data-test-script-state'], attributeOldValue: true}); }"""
DONE = """t0 => { const s = window.__st.filter(x => x[0] > t0);
  return s.some(x => x[1] === 'running' || x[2] === 'running') && s[s.length - 1][2] === 'notRunning'; }"""
HEIGHT = """() => Math.max(...[...document.querySelectorAll('*')].map(e => e.scrollHeight))"""


def metric(value: float, n: int) -> dict:
    half = 1.96 * (max(value * (1 - value), 1e-4) / n) ** 0.5
    return {"value": round(value, 4), "ci_low": round(max(0.0, value - half), 4),
            "ci_high": round(min(1.0, value + half), 4), "stderr": round(half / 1.96, 5), "n": n, "kind": "mean",
            "higher_is_better": True}


def write_records(out: Path, runs: int, seed: int = 0) -> int:
    """``runs`` records of ``runs // 5`` models; returns the number of models."""
    rng = random.Random(seed)
    models = max(2, runs // RUNS_PER_MODEL)
    names = list(TASKS)
    for i in range(runs):
        m, j = i % models, i // models
        skill = (m * 7919 % models) / models
        tasks = {}
        for k in range(4):                                     # 4 of 7 benchmarks per run, 5 runs cover all
            task = names[(j * 3 + k) % len(names)]
            n = min(TASKS[task], 200)
            v = min(0.98, max(0.02, 0.15 + 0.7 * skill + rng.gauss(0, 0.03) - 0.05 * (task == "math500")))
            tasks[task] = {"version": "1", "prompt_hash": f"p{task}", "n_docs": n, "metrics": {"acc": metric(v, n)},
                           "samples_file": f"samples_{task}.jsonl"}
        gen = {"temperature": 0.7} if (m % 10 == 3 and j == 4) else {}
        series = {"name": "pretrain-7b", "step": 1000 * (j + 1)} if m == 1 else None
        run = {"schema_version": 2, "run_id": f"r{i:05d}-m{m:04d}", "kind": "rescore",
               "created_at": f"2026-{1 + j % 12:02d}-{1 + (i % 28):02d}T{i % 24:02d}:{i % 60:02d}:00+00:00",
               "model": {"name": f"team/model-{m:04d}", "backend": "predictions", "spec": f"predictions:m{m}.jsonl",
                         "identity": {"predictions": f"m{m}-{j}.jsonl", "sha256": f"{i:064x}"},
                         "identity_hash": f"{i:032x}"},
               "config": {"tags": ["team-a" if m % 2 else "team-b"], "gen_overrides": gen, "limit": None, "seed": 0,
                          **({"series": series} if series else {})},
               "tasks": tasks, "versions": {"evalkit": "bench"}}
        d = out / run["run_id"]
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps(run))
        for task in tasks:
            rows = [{"doc_id": str(k), "prompt": f"Q{k}", "responses": [f"A{k}"], "target": f"A{k}",
                     "extracted": f"A{k}", "metrics": {"acc": float((k + i) % 2)}} for k in range(3)]
            (d / f"samples_{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return models


def tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            kids = []
        todo += [int(k) for k in kids]
    return out


def usage(pid: int) -> tuple[float, float]:
    """(peak RSS in MB summed over the process tree, CPU seconds of the tree)."""
    rss, cpu, tick = 0.0, 0.0, os.sysconf("SC_CLK_TCK")
    for p in tree(pid):
        try:
            status = Path(f"/proc/{p}/status").read_text()
            stat = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        rss += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")) / 1024
        cpu += (int(stat[11]) + int(stat[12])) / tick
    return rss, cpu


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def click(page, locator, what: str) -> float:
    """Seconds from the click to the end of the script run it causes (the page's clock)."""
    t0 = page.evaluate("performance.now()")
    locator.click()
    try:
        page.wait_for_function(DONE, arg=t0, timeout=30_000)
    except Exception as e:  # noqa: BLE001 - name the click that never finished
        states = page.evaluate("window.__st.slice(-6)")
        raise SystemExit(f"{what}: no finished script run within 30 s of the click ({type(e).__name__}); "
                         f"last script states {states}, clicked at {t0:.0f} ms") from None
    return (page.evaluate("window.__st[window.__st.length - 1][0]") - t0) / 1000


def browse(url: str) -> dict:
    from playwright.sync_api import sync_playwright
    out = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        page.goto(url, timeout=600_000)
        page.wait_for_selector(READY, timeout=600_000)
        page.locator("[data-testid=stDataFrame]").first.wait_for(timeout=600_000)
        out["first page s"] = time.perf_counter() - t0
        out["page height px"] = page.evaluate(HEIGHT)
        page.evaluate(WATCH)
        side = page.locator("[data-testid=stSidebar]")
        for view in VIEWS:
            out[f"{view} s"] = click(page, side.locator("label").filter(has_text=view).first, f"view {view}")
            if view == "Task":
                out["Task height px"] = page.evaluate(HEIGHT)
        out["filter change s"] = click(page, side.locator("label").filter(has_text="Newest run per cell only").first,
                                     "filter change")
        browser.close()
    return out


def measure(runs: int, keep: bool) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"evalkit-lb-{runs}-"))
    results = root / "results"
    try:
        t0 = time.perf_counter()
        models = write_records(results, runs)
        row = {"runs": runs, "models": models, "write s": time.perf_counter() - t0}
        from evalkit.records import load_run
        for d in list(sorted(results.iterdir()))[:: max(1, runs // 20)]:
            load_run(d)                                       # the records are valid
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "evalkit", "runs", "index", "--results", str(results)], check=True,
                       stdout=subprocess.DEVNULL)
        row["index build s"] = time.perf_counter() - t0
        port = free_port()
        log = open(root / "server.log", "w")
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "evalkit", "leaderboard", "--results", str(results),
                                 "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_port(port, proc, root)
            row["server listening s"] = time.perf_counter() - t0
            row.update(browse(f"http://127.0.0.1:{port}/"))
            row["peak RSS MB"], row["server CPU s"] = usage(proc.pid)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
            log.close()
        return row
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept {root}", file=sys.stderr)


def wait_port(port: int, proc, root: Path) -> None:
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"evalkit leaderboard exited: {(root / 'server.log').read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("the leaderboard did not listen within 120 s")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100,1000,10000", help="comma-separated run counts (default 100,1000,10000)")
    p.add_argument("--keep", action="store_true", help="keep the records (their folder is printed)")
    p.add_argument("--json", help="also write the rows to this JSON file")
    args = p.parse_args(argv)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install chromium)")
    rows = [measure(int(n), args.keep) for n in args.sizes.split(",")]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print("| " + " | ".join(keys) + " |\n|" + "---:|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{r[k]:,.2f}" if isinstance(r.get(k), float) else f"{r.get(k, '')}" for k in keys)
              + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
