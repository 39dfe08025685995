"""Formats CI systems render: JUnit XML (test reports in GitLab, Jenkins, Azure, GitHub test-report
actions) and GitHub Actions workflow commands (annotations on the run and the PR).

JUnit: one ``<testsuite>`` per task, one ``<testcase>`` per *primary* task x metric (the tests that
decide the exit code). A regressed test is a ``<failure>`` whose text holds baseline, candidate,
diff, its interval and the corrected p-value; an inconclusive one passes with the same figures in
``<system-out>`` (the gate did not fail, but the data could not rule the drop out). Rows that are not
primary are listed as suite properties, never as test cases, so they cannot fail a CI job.
"""
from __future__ import annotations

import datetime as _dt
import math
import xml.etree.ElementTree as ET

from evalkit.compare.analysis import IMPROVED, INCONCLUSIVE, REGRESSED, Comparison, MetricComparison


def _fmt(x, scale: float = 1.0, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    v = x * scale
    d = 2 if scale != 1.0 or abs(v) >= 10 else 4
    return f"{v:+.{d}f}" if signed else f"{v:.{d}f}"


def _pval(r: MetricComparison) -> str:
    p = r.p_regress_adj if r.primary else r.p_regress
    if r.verdict == IMPROVED:
        p = r.p_improve_adj if r.primary else r.p_improve
    if p is None or not math.isfinite(p):
        return "n/a"
    return "<1e-4" if p < 1e-4 else f"{p:.4f}"


def summary(r: MetricComparison, c: Comparison) -> str:
    """One line with everything a reviewer needs about one test."""
    unit = " pts" if r.scale == 100 else ""
    level = f"{100 * (1 - 2 * c.options.alpha):g}"
    corr = "" if not r.primary else f" ({c.options.correction}-adjusted)"
    return (f"{r.task}:{r.metric} {r.verdict}: baseline {_fmt(r.baseline, r.scale)}, candidate "
            f"{_fmt(r.candidate, r.scale)}, diff {_fmt(r.diff, r.scale, True)}{unit}, {level}% CI "
            f"[{_fmt(r.ci_low, r.scale, True)}, {_fmt(r.ci_high, r.scale, True)}], margin "
            f"{_fmt(r.margin, r.scale) if r.margin else '0'}, p {_pval(r)}{corr}, n {r.n}, {r.method}")


def _flip_lines(c: Comparison, task: str) -> list[str]:
    f = c.flips.get(task)
    if not f:
        return []
    lines = [f"flips ({f['metric']}): {f['n_right_to_wrong']} right->wrong, {f['n_wrong_to_right']} wrong->right"]
    ids = f.get("right_to_wrong_ids") or []
    if ids:
        lines.append("right->wrong doc ids: " + ", ".join(map(str, ids[:20])) + (" ..." if len(ids) > 20 else ""))
    return lines


def to_junit(c: Comparison) -> str:
    prim = [r for r in c.rows if r.primary]
    tasks = list(dict.fromkeys(r.task for r in c.rows))
    failures = sum(r.verdict == REGRESSED for r in prim)
    root = ET.Element("testsuites", name="evalkit compare", tests=str(len(prim)), failures=str(failures),
                      errors="0", time="0")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    for task in tasks:
        mine = [r for r in prim if r.task == task]
        suite = ET.SubElement(root, "testsuite", name=f"evalkit.{task}", tests=str(len(mine)),
                              failures=str(sum(r.verdict == REGRESSED for r in mine)), errors="0",
                              skipped="0", time="0", timestamp=stamp)
        props = ET.SubElement(suite, "properties")
        for name, value in (("baseline", c.baseline.get("path")), ("baseline_run_id", c.baseline.get("run_id")),
                            ("baseline_model", c.baseline.get("model")), ("candidate", c.candidate.get("path")),
                            ("candidate_run_id", c.candidate.get("run_id")),
                            ("candidate_model", c.candidate.get("model")), ("alpha", c.options.alpha),
                            ("correction", c.options.correction), ("primary_tests", c.n_primary)):
            ET.SubElement(props, "property", name=name, value=str(value))
        for r in c.rows:
            if r.task == task and not r.primary:
                ET.SubElement(props, "property", name=f"secondary:{r.metric}", value=summary(r, c))
        for r in mine:
            case = ET.SubElement(suite, "testcase", name=r.metric, classname=f"evalkit.{task}", time="0")
            text = "\n".join([summary(r, c)] + _flip_lines(c, task))
            if r.verdict == REGRESSED:
                unit = " pts" if r.scale == 100 else ""
                fail = ET.SubElement(case, "failure", type="regression",
                                     message=f"regressed: diff {_fmt(r.diff, r.scale, True)}{unit}, p {_pval(r)}")
                fail.text = text
            else:
                ET.SubElement(case, "system-out").text = text
    notes = "\n".join(c.notes)
    if notes:
        ET.SubElement(root[0] if len(root) else root, "system-out").text = notes
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def _escape_data(s: str) -> str:
    # GitHub workflow-command escaping (actions/toolkit: escapeData / escapeProperty)
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def to_github(c: Comparison) -> str:
    """``::error``/``::warning``/``::notice`` lines, one per primary test that is not plainly fine,
    then a notice with the verdict. Printed on a GitHub runner they become annotations."""
    out = []
    for r in c.rows:
        if not r.primary:
            continue
        level = {REGRESSED: "error", INCONCLUSIVE: "warning", IMPROVED: "notice"}.get(r.verdict)
        if level is None:
            continue
        title = f"evalkit {r.verdict}: {r.task}:{r.metric}"
        out.append(f"::{level} title={_escape_prop(title)}::{_escape_data(summary(r, c))}")
    bad = [r for r in c.rows if r.primary and r.verdict == REGRESSED]
    verdict = (f"REGRESSION in {len(bad)} of {c.n_primary} primary tests" if bad
               else f"no regression in {c.n_primary} primary tests")
    out.append(f"::{'error' if bad else 'notice'} title=evalkit gate::{_escape_data(verdict)} "
               f"(baseline {c.baseline.get('run_id')}, candidate {c.candidate.get('run_id')})")
    for n in c.notes:
        out.append(f"::warning title=evalkit note::{_escape_data(n)}")
    return "\n".join(out)
