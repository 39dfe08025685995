"""Small BFCL data folders in the ``bfcl-eval`` package's layout, for tests that play multi-turn
entries on a real model (every user turn is a long prefill on CPU: keep entries few and short)."""
from __future__ import annotations

import json
from pathlib import Path

from evalkit.tasks.bfcl import data as bfcl_data


def multi_turn_folder(root: Path, entries: dict) -> Path:
    """``root/data`` holding, per category, the given entries ``{category: {id: turns kept}}`` cut to
    their first turns (question and possible answer alike); the function docs and BFCL's API sources
    are linked from the installed package. Returns the data folder (what ``--data`` takes)."""
    src = bfcl_data.installed_data_dir()
    data = root / "data"
    (data / "possible_answer").mkdir(parents=True)
    (data / "multi_turn_func_doc").symlink_to(src / "multi_turn_func_doc")
    (root / "eval_checker").symlink_to(src.parent / "eval_checker")
    for category, keep in entries.items():
        q_file, a_file = bfcl_data.category_files(src, category)
        for path, field, out in ((q_file, "question", data / q_file.name),
                                 (a_file, "ground_truth", data / "possible_answer" / a_file.name)):
            rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
            picked = [dict(r, **{field: r[field][:keep[r["id"]]]}) for r in rows if r["id"] in keep]
            for r in picked:
                if field == "question" and "missed_function" in r:
                    r["missed_function"] = {t: f for t, f in r["missed_function"].items() if int(t) < keep[r["id"]]}
            out.write_text("".join(json.dumps(r) + "\n" for r in picked), encoding="utf-8")
    return data
