"""Finding lm-eval 0.4.x output on disk: ``results_<date>.json`` and its ``samples_<task>_<date>.jsonl``.

lm-eval 0.4.3+ writes ``<output_path>/<model_name_sanitized>/results_<date>.json`` with one
``samples_<task>_<date>.jsonl`` per task beside it (same ``<date>``); 0.4.0-0.4.2 wrote the results
to ``--output_path FILE.json`` and the samples to ``FILE_<task>.jsonl``. A path given may be a
results file or a folder (searched recursively, one run per results file).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from evalkit.util.errors import EvalkitError
from evalkit.util.jsonio import read_json, read_jsonl

_RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")


@dataclass
class LmEvalOutput:
    """One lm-eval run as found on disk: its results object and the samples file of each task."""

    results_path: Path
    results: dict
    samples_paths: dict = field(default_factory=dict)  # task -> Path

    def samples(self, task: str) -> list[dict]:
        path = self.samples_paths.get(task)
        if path is None:
            return []
        rows = list(read_jsonl(path))
        for i, r in enumerate(rows, 1):
            if not isinstance(r, dict) or "doc_id" not in r:
                raise EvalkitError(f"{path}:{i}: not an lm-eval sample (no 'doc_id' field)")
        return rows


def _samples_for(results_path: Path, tasks) -> dict:
    m = _RESULTS.match(results_path.name)
    out = {}
    for task in tasks:
        candidates = []
        if m:  # 0.4.3+: samples_<task>_<same date>.jsonl
            candidates.append(results_path.with_name(f"samples_{task}_{m.group('date')}.jsonl"))
        candidates.append(results_path.with_name(f"{results_path.stem}_{task}.jsonl"))  # 0.4.0-0.4.2
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:  # the newest samples file of this task in the folder
            found = max(results_path.parent.glob(f"samples_{task}_*.jsonl"), default=None,
                        key=lambda p: p.stat().st_mtime)
        if found is not None:
            out[task] = found
    return out


def read_output(results_path: Path) -> LmEvalOutput:
    data = read_json(results_path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise EvalkitError(f"{results_path}: not an lm-eval results file (no 'results' object)")
    return LmEvalOutput(results_path, data, _samples_for(results_path, list(data["results"])))


def find_outputs(paths) -> list[LmEvalOutput]:
    """Every lm-eval run under the given files and folders, in path order."""
    found = []
    for p in map(Path, paths):
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            hits = sorted(x for x in p.rglob("*.json") if _RESULTS.match(x.name) or x.name == "results.json")
            if not hits:
                raise EvalkitError(f"{p}: no lm-eval results_*.json file in this folder")
            found += hits
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return [read_output(p) for p in found]
