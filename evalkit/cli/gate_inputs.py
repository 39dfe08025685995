"""What ``evalkit gate`` reads besides its config: run folders given as the folder ``evalkit run
--output DIR`` wrote (one run inside), and the data paths a baseline record carries."""
from __future__ import annotations

from pathlib import Path

from evalkit.util.errors import EvalkitError


def run_folder(path, what: str = "baseline") -> str:
    """``path`` itself when it holds run.json, else the one run folder below it (``evalkit run
    --output baselines/main`` writes ``baselines/main/<run-id>/``; a downloaded artifact nests one
    more level). None or several: a one-line error naming them."""
    p = Path(path)
    if not p.exists():
        raise EvalkitError(f"{what} {path}: no such file or folder")
    if p.is_file() or (p / "run.json").is_file():
        return str(path)
    found = sorted(r.parent for r in p.rglob("run.json")
                   if not any(x.startswith(".") for x in r.relative_to(p).parts))
    if len(found) == 1:
        return str(found[0])
    if not found:
        raise EvalkitError(f"{what} {path}: not a run record (no run.json in it or below it); name a run folder "
                           f"(as `evalkit run --output {path}` writes it: {path}/<run-id>)")
    names = ", ".join(str(f.relative_to(p)) for f in found[:10]) + (" ..." if len(found) > 10 else "")
    raise EvalkitError(f"{what} {path}: holds {len(found)} run records ({names}); name one, e.g. "
                       f"{p / found[0].relative_to(p)}")


def check_data_source(task: str, src: str, record_path, fix: str) -> None:
    """A baseline record's data path, as the candidate will read it: a relative path (as an import or
    a run recorded it) means relative to the folder that command ran in; from anywhere else it is not
    found, so say so and how to point at the data (``fix``: the config key or flag)."""
    from evalkit.run.workflows.rescore import REFS_PREFIX   # `evalkit score`'s reference files: not a data path
    p = Path(src).expanduser()
    if src.startswith(REFS_PREFIX) or p.is_absolute() or p.exists():
        return
    raise EvalkitError(f"the baseline record {record_path} reads task {task}'s data from the relative path {src!r} "
                       f"(relative to the folder it was run or imported from), not found from {Path.cwd()}; "
                       f"run the gate from that folder or point at the data: {fix}")
