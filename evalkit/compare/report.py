"""Render a ``Comparison`` as a terminal table, a Markdown PR comment, JSON for machines, or (in
``ci_formats``) JUnit XML and GitHub annotations.

Metrics in [0, 1] are shown in points (x100). The p-value column is Holm/BH-adjusted for primary
rows (marked ``*``) and raw for the others. Every report states alpha, the correction, the
interval level and the minimum detectable drop of each task, so a "no significant change" on 30
items is not mistaken for evidence of no change.
"""
from __future__ import annotations

import html
import json
import math

from evalkit.compare.analysis import IMPROVED, INCONCLUSIVE, REGRESSED, Comparison, MetricComparison

FORMATS = ("text", "markdown", "json", "junit", "github")
_MARK = {REGRESSED: "❌", IMPROVED: "✅", INCONCLUSIVE: "⚠️"}


def _num(x, scale=1.0, digits=2, signed=False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    v = x * scale
    d = digits if scale != 1.0 or abs(v) >= 10 else 4
    return f"{v:+.{d}f}" if signed else f"{v:.{d}f}"


def _p(p) -> str:
    if p is None or (isinstance(p, float) and not math.isfinite(p)):
        return "-"
    return "<1e-4" if p < 1e-4 else f"{p:.4f}"


def _row_cells(r: MetricComparison) -> list[str]:
    unit = " pts" if r.scale == 100 else ""
    p = r.p_regress_adj if r.primary else r.p_regress
    if r.verdict == IMPROVED:
        p = r.p_improve_adj if r.primary else r.p_improve
    ci = f"[{_num(r.ci_low, r.scale, signed=True)}, {_num(r.ci_high, r.scale, signed=True)}]"
    return [r.task, r.metric + ("*" if r.primary else "") + ("" if r.higher_is_better else " (↓ better)"),
            str(r.n), _num(r.baseline, r.scale), _num(r.candidate, r.scale),
            _num(r.diff, r.scale, signed=True) + unit, ci, _num(r.margin, r.scale) if r.margin else "0",
            _p(p), r.verdict]


HEAD = ["task", "metric", "n", "baseline", "candidate", "diff", "{level}% CI", "margin", "p", "verdict"]


def _level(c: Comparison) -> str:
    return f"{100 * (1 - 2 * c.options.alpha):g}"


def _preamble(c: Comparison) -> list[str]:
    o = c.options
    corr = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "no"}[o.correction]
    lines = [f"baseline:  {c.baseline['run_id']} ({c.baseline['model']}) {c.baseline['path']}",
             f"candidate: {c.candidate['run_id']} ({c.candidate['model']}) {c.candidate['path']}"]
    if c.baseline.get("gen_overrides") != c.candidate.get("gen_overrides"):
        lines.append(f"generation overrides differ: baseline {c.baseline.get('gen_overrides') or {}}, "
                     f"candidate {c.candidate.get('gen_overrides') or {}}")
    lines.append(f"one-sided tests at alpha {o.alpha:g}, {corr} correction across {c.n_primary} primary tests (*); "
                 f"diff = candidate - baseline, [0,1] metrics in points; {_level(c)}% CI; regressed = significantly "
                 f"worse by more than the margin")
    return lines


def power_lines(c: Comparison) -> list[str]:
    out, seen = [], set()
    for r in sorted(c.rows, key=lambda r: not r.primary):
        if r.task in seen:
            continue
        seen.add(r.task)
        unit = " pts" if r.scale == 100 else ""
        psi = r.details.get("discordance")
        extra = f", discordance {psi:.3f}" if psi is not None else ""
        tests = c.n_primary if r.primary else 1
        if r.mdd is None or not math.isfinite(r.mdd):
            what = "no drop is detectable with 80% power at this size" if psi else "not estimable (no disagreement)"
        else:
            what = f"minimum detectable drop {_num(r.mdd, r.scale)}{unit}"
        out.append(f"power: {r.task} {r.metric}: n={r.n}{extra} -> {what} "
                   f"({c.options.power:.0%} power, alpha {c.options.alpha:g}/{tests})")
    return out


def _verdict_line(c: Comparison) -> str:
    bad = [r for r in c.rows if r.primary and r.verdict == REGRESSED]
    if bad:
        return (f"result: REGRESSION in {len(bad)} of {c.n_primary} primary tests "
                f"({', '.join(f'{r.task}:{r.metric}' for r in bad)}) -> exit 1")
    return f"result: no regression in {c.n_primary} primary tests -> exit 0"


def to_text(c: Comparison) -> str:
    head = [h.format(level=_level(c)) for h in HEAD]
    rows = [head] + [_row_cells(r) for r in c.rows]
    widths = [max(len(x[i]) for x in rows) for i in range(len(head))]
    lines = _preamble(c) + [""]
    for i, x in enumerate(rows):
        lines.append("  ".join(v.ljust(w) for v, w in zip(x, widths)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += [""] + [f"note: {n}" for n in c.notes] + power_lines(c)
    for task, f in c.flips.items():
        lines.append(f"\nflips in {task} ({f['metric']}): {f['n_right_to_wrong']} right->wrong, "
                     f"{f['n_wrong_to_right']} wrong->right")
        for label, key in (("right->wrong", "right_to_wrong"), ("wrong->right", "wrong_to_right")):
            for it in f[key]:
                if it.get("redacted"):
                    lines.append(f"  {label} doc {it['doc_id']}: (content hidden for this task)")
                    continue
                lines.append(f"  {label} doc {it['doc_id']}  target: {it['target']!s}")
                lines.append(f"    prompt:    {_oneline(it['prompt'], 160)}")
                lines.append(f"    baseline:  {_oneline(it['baseline'], 160)}")
                lines.append(f"    candidate: {_oneline(it['candidate'], 160)}")
    lines += ["", _verdict_line(c)]
    return "\n".join(lines)


def _oneline(s: str, limit: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= limit else "…" + s[-limit:]


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|")


def to_markdown(c: Comparison) -> str:
    status = "❌ **Regression**" if c.regressed else "✅ **No regression**"
    out = [f"### evalkit compare: {status}", ""]
    out += [f"- {_md_cell(x)}" for x in _preamble(c)] + [""]
    head = [h.format(level=_level(c)) for h in HEAD]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join("---" if i < 2 or i == len(head) - 1 else "---:" for i in range(len(head))) + "|")
    for r in c.rows:
        cells = [_md_cell(x) for x in _row_cells(r)]
        cells[-1] = f"{_MARK.get(r.verdict, '')} {cells[-1]}".strip()
        if r.verdict == REGRESSED and r.primary:
            cells[-1] = f"**{cells[-1]}**"
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out += [f"> {_md_cell(n)}" for n in c.notes]
    out += [f"- {_md_cell(x)}" for x in power_lines(c)]
    for task, f in c.flips.items():
        out += ["", f"<details><summary>Flipped items in <code>{html.escape(task)}</code> ({html.escape(f['metric'])}): "
                    f"{f['n_right_to_wrong']} right→wrong, {f['n_wrong_to_right']} wrong→right</summary>", ""]
        for label, key in (("right → wrong", "right_to_wrong"), ("wrong → right", "wrong_to_right")):
            for it in f[key]:
                if it.get("redacted"):
                    out.append(f"**{label}**, doc `{it['doc_id']}`: content hidden for this task")
                    continue
                out.append(f"**{label}**, doc `{html.escape(str(it['doc_id']))}` (target: "
                           f"<code>{html.escape(_oneline(it['target'], 120))}</code>)")
                for part in ("prompt", "baseline", "candidate"):
                    out.append(f"<pre><b>{part}</b>\n{html.escape(str(it[part]))}</pre>")
                out.append("")
        out.append("</details>")
    out += ["", f"`{_verdict_line(c)}`", ""]
    return "\n".join(out)


def to_json(c: Comparison) -> str:
    return json.dumps(c.to_dict(), indent=2, ensure_ascii=False, default=str)


def render(c: Comparison, fmt: str = "text") -> str:
    if fmt == "text":
        return to_text(c)
    if fmt == "markdown":
        return to_markdown(c)
    if fmt == "json":
        return to_json(c)
    if fmt in ("junit", "github"):
        from evalkit.compare import ci_formats
        return ci_formats.to_junit(c) if fmt == "junit" else ci_formats.to_github(c)
    raise ValueError(f"unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")


# Public names for other readers of a Comparison (the dashboard renders the same cells as the CLI).
row_cells = _row_cells
confidence_level = _level
