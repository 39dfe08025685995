"""When two runs differ mainly in how many answers were cut at ``max_tokens`` (olmo-eval #399): a
note with both shares and the difference on the items both runs finished, beside the overall one."""
from __future__ import annotations

import numpy as np

SHARE_GAP = 0.05


def _cut(rows) -> list:
    return [(r.get("extra") or {}).get("finish_reason") == "length" for r in rows]


def truncation_notes(t, rows) -> list[str]:
    """Notes for one aligned task (``t``: ``AlignedTask``; ``rows``: its ``MetricComparison`` rows)."""
    if not any("finish_reason" in (r.get("extra") or {}) for r in t.base_rows):
        return []
    cb, cc = np.array(_cut(t.base_rows)), np.array(_cut(t.cand_rows))
    if abs(cc.mean() - cb.mean()) <= SHARE_GAP:
        return []
    tested = [r for r in rows if r.kind == "mean" and r.n and r.diff is not None]
    if not tested:
        return []
    row = next((r for r in tested if r.primary), tested[0])
    b = np.array([x.get("metrics", {}).get(row.metric, np.nan) for x in t.base_rows], dtype=float)
    c = np.array([x.get("metrics", {}).get(row.metric, np.nan) for x in t.cand_rows], dtype=float)
    both = ~cb & ~cc & np.isfinite(b) & np.isfinite(c)
    finished = float(c[both].mean() - b[both].mean()) if both.any() else float("nan")
    note = (f"{t.name}: {cc.mean():.0%} of the candidate's responses stopped at max_tokens, {cb.mean():.0%} of the "
            f"baseline's; {row.metric} differs by {row.diff:+.4g} overall and by {finished:+.4g} on the "
            f"{int(both.sum())} items both runs finished")
    if both.any() and abs(finished) < abs(row.diff) / 2:
        note += ": the difference is mainly truncation (raise max_tokens, or compare finished answers)"
    return [note]
