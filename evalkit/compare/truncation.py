"""When two runs differ mainly in how many answers were cut at ``max_tokens`` (olmo-eval #399): a
note with both shares (over every completion of a repeat run) and the difference on the items both
runs finished (every completion), beside the overall one."""
from __future__ import annotations

import numpy as np

SHARE_GAP = 0.05


def _cuts(rows) -> np.ndarray:
    """Per row (cut at max_tokens, completions): every completion of a repeat row
    (``extra.completions``), else the row's one finish reason."""
    out = []
    for r in rows:
        extra = r.get("extra") or {}
        comps = extra.get("completions")
        if isinstance(comps, list) and comps and all(isinstance(c, dict) for c in comps):
            out.append((sum(c.get("finish_reason") == "length" for c in comps), len(comps)))
        else:
            out.append((int(extra.get("finish_reason") == "length"), 1))
    return np.array(out, dtype=float).reshape(-1, 2)


def truncation_notes(t, rows) -> list[str]:
    """Notes for one aligned task (``t``: ``AlignedTask``; ``rows``: its ``MetricComparison`` rows)."""
    if not any("finish_reason" in (r.get("extra") or {}) for r in t.base_rows):
        return []
    kb, kc = _cuts(t.base_rows), _cuts(t.cand_rows)
    share_b, share_c = kb[:, 0].sum() / kb[:, 1].sum(), kc[:, 0].sum() / kc[:, 1].sum()
    if abs(share_c - share_b) <= SHARE_GAP:
        return []
    cb, cc = kb[:, 0] > 0, kc[:, 0] > 0  # an item with any completion cut
    tested = [r for r in rows if r.kind == "mean" and r.n and r.diff is not None]
    if not tested:
        return []
    row = next((r for r in tested if r.primary), tested[0])
    b = np.array([x.get("metrics", {}).get(row.metric, np.nan) for x in t.base_rows], dtype=float)
    c = np.array([x.get("metrics", {}).get(row.metric, np.nan) for x in t.cand_rows], dtype=float)
    both = ~cb & ~cc & np.isfinite(b) & np.isfinite(c)
    finished = float(c[both].mean() - b[both].mean()) if both.any() else float("nan")
    note = (f"{t.name}: {share_c:.0%} of the candidate's responses stopped at max_tokens, {share_b:.0%} of the "
            f"baseline's; {row.metric} differs by {row.diff:+.4g} overall and by {finished:+.4g} on the "
            f"{int(both.sum())} items both runs finished")
    if both.any() and abs(finished) < abs(row.diff) / 2:
        note += ": the difference is mainly truncation (raise max_tokens, or compare finished answers)"
    return [note]
