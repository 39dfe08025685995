"""Compare a candidate run with a baseline run: one paired test per task x metric, a multiplicity
correction across the primary tests, a verdict per row and an exit code.

Definitions (also printed in every report):

- ``diff = candidate - baseline`` in the metric's units; for metrics whose values lie in [0, 1]
  (accuracy, exact match, pass@1, ROUGE) differences, intervals and margins are shown in *points*
  (x100). "Worse" follows the metric's ``higher_is_better`` (perplexity: up is worse).
- The margin ``m`` (points, per run, task or task:metric) is the drop the user tolerates.
- **regressed**: the one-sided test of H0 "the candidate is at most m worse" (delta >= -m, delta the
  improvement) rejects at level alpha *after* the correction (Holm by default) across the primary
  tests. Exit code 1 when any primary test regressed.
- **improved**: the one-sided test of H0 "not better" (delta <= 0) rejects at alpha after the same
  correction.
- **inconclusive**: neither, a margin m > 0 is set, and the 1 - 2·alpha interval still reaches below
  -m: the data cannot rule out a drop bigger than the tolerance (or there is no data).
- **no significant change**: otherwise (with m = 0 this is every non-significant result; read the
  minimum detectable drop line to see what the sample could have caught).

Primary tests (the family that decides the exit code): by default every mean metric whose values are
0/1 and every corpus metric of each task (all metrics of a task that has neither); ``primary``
patterns (``task:metric``, ``metric``, globs) choose them instead. Other rows are reported with
unadjusted p-values and do not change the exit code.
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import asdict, dataclass, field
from typing import Optional

import numpy as np

from evalkit.taskapi import registry
from evalkit.compare.truncation import truncation_notes
from evalkit.compare import paired, power
from evalkit.compare.align import AlignedTask, NotComparable, align_runs, load
from evalkit.compare.multiplicity import adjust
from evalkit.records import RunRecord
from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.task import Sample

IMPROVED, NO_CHANGE, REGRESSED, INCONCLUSIVE = "improved", "no significant change", "regressed", "inconclusive"


@dataclass
class CompareOptions:
    alpha: float = 0.05
    margin: float = 0.0                # points (x100 for [0,1] metrics, metric units otherwise)
    margins: dict = field(default_factory=dict)  # "task" or "task:metric" -> points
    correction: str = "holm"
    primary: Optional[list] = None     # patterns; None: the default rule
    tasks: Optional[list] = None
    allow_prompt_change: bool = False
    allow_data_change: bool = False
    mid_p: bool = False
    force_bootstrap: bool = False
    replicates: int = 2000             # mean metrics (vectorised, cheap)
    corpus_replicates: int = 1000      # corpus metrics (each replicate recomputes the metric twice)
    seed: int = 1234
    examples: int = 3
    power: float = 0.8


@dataclass
class MetricComparison:
    task: str
    metric: str
    kind: str
    higher_is_better: bool
    scale: float                      # 100 for [0,1] metrics (shown in points), else 1
    primary: bool
    baseline: Optional[float]
    candidate: Optional[float]
    diff: Optional[float]             # candidate - baseline, metric units
    ci_low: Optional[float]           # 1 - 2*alpha interval of diff, metric units
    ci_high: Optional[float]
    margin: float                     # metric units
    p_regress: Optional[float]
    p_improve: Optional[float]
    p_regress_adj: Optional[float] = None
    p_improve_adj: Optional[float] = None
    verdict: str = INCONCLUSIVE
    method: str = ""
    n: int = 0
    n_clusters: int = 0
    mdd: Optional[float] = None       # minimum detectable drop (metric units) at the target power
    details: dict = field(default_factory=dict)


@dataclass
class Comparison:
    baseline: dict
    candidate: dict
    options: CompareOptions
    rows: list
    flips: dict
    notes: list
    n_primary: int

    @property
    def regressed(self) -> bool:
        return any(r.primary and r.verdict == REGRESSED for r in self.rows)

    @property
    def exit_code(self) -> int:
        return 1 if self.regressed else 0

    def to_dict(self) -> dict:
        return {"baseline": self.baseline, "candidate": self.candidate, "options": asdict(self.options),
                "regression": self.regressed, "exit_code": self.exit_code, "n_primary": self.n_primary,
                "rows": [{k: _clean(v) for k, v in asdict(r).items()} for r in self.rows],
                "flips": self.flips, "notes": self.notes}


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    return v


def _pattern(p: str) -> str:
    return p if ":" in p else f"*:{p}"


def repeat_primary(t: AlignedTask) -> Optional[str]:
    """For runs with K > 1 samples per problem (``--repeats``): the per-problem mean of the task's
    verdict (``extra.repeats.metric``, e.g. exact_match = avg@K; pass@1 for code tasks), tested over
    problems. None otherwise. (Which of pass@K, pass^K, maj@K happen to be 0/1 per problem depends on
    the data: never a primary by accident.)"""
    reps = [(r.get("extra") or {}).get("repeats") for r in (*t.base_rows, *t.cand_rows)]
    if not reps or not all(isinstance(x, dict) and (x.get("k") or 0) > 1 for x in reps):
        return None
    for name in (reps[0].get("metric"), "pass@1"):
        if name in t.metrics:
            return name
    return None


def select_primary(aligned: list[AlignedTask], patterns: Optional[list]) -> set:
    """The (task, metric) pairs whose tests form the family for the exit code."""
    chosen = set()
    if patterns:
        for p in patterns:
            hits = {(t.name, m) for t in aligned for m in t.metrics if fnmatch.fnmatchcase(f"{t.name}:{m}", _pattern(p))}
            if not hits:
                have = ", ".join(f"{t.name}:{m}" for t in aligned for m in t.metrics)
                raise NotComparable(f"--primary {p!r} matches no task:metric (have: {have})")
            chosen |= hits
        return chosen
    for t in aligned:
        rep = repeat_primary(t)
        if rep:
            chosen.add((t.name, rep))
            continue
        mine = set()
        for m, info in t.metrics.items():
            if info.kind == "corpus":
                mine.add((t.name, m))
            else:
                b, c, _ = t.values(m)
                if len(b) and paired.is_binary(b, c):
                    mine.add((t.name, m))
        chosen |= mine or {(t.name, m) for m in t.metrics}
    return chosen


def margin_points(opts: CompareOptions, task: str, metric: str) -> float:
    for key in (f"{task}:{metric}", task):
        if key in opts.margins:
            return float(opts.margins[key])
    return float(opts.margin)


class NotResampleable(Exception):
    """A corpus metric this comparison cannot recompute on resampled items."""


def corpus_statistic(task: str, metric: str, options: Optional[dict] = None):
    """A function ``list[Sample] -> float`` recomputing a corpus metric, found in this order:

    1. the task class's corpus-level ``Metric`` of that name (its ``compute``; also the older
       ``corpus_metrics[metric]`` shorthand);
    2. a ``corpus_statistic(metric)`` method on a task instance (for tasks that aggregate
       themselves, e.g. from per-sample sufficient statistics);
    3. sacrebleu sufficient statistics in ``sample.extra["sacrebleu"][metric]`` scored with the task
       instance's ``mt.corpus_value`` (the translation tasks).
    """
    try:
        cls = registry.get_task_class(task)
    except ValueError:
        raise NotComparable(f"task {task}: its class is needed to recompute corpus metric {metric!r}; "
                            f"pass --include-path with the task file") from None
    declared = {m.name: m for m in getattr(cls, "metrics", ()) if getattr(m, "level", "") == "corpus"}
    fn = declared[metric].compute if metric in declared else getattr(cls, "corpus_metrics", {}).get(metric)
    if fn is not None:
        return fn
    group = next((g for g in getattr(cls, "metrics", ()) if metric in (getattr(g, "names", None) or ())), None)
    if group is not None and (group.estimate or group.compute):  # a MetricGroup figure (macro means, summaries)
        return _group_statistic(group, metric)
    try:
        inst = cls(data_path=None, **(options or {}))
    except Exception as e:  # noqa: BLE001 - any construction failure means "cannot recompute"
        raise NotResampleable(f"cannot build task {task} to recompute {metric!r}: {e}") from None
    hook = getattr(inst, "corpus_statistic", None)
    if callable(hook):
        return hook(metric)
    mt = getattr(inst, "mt", None)
    if mt is not None and hasattr(mt, "corpus_value") and metric in getattr(mt, "names", ()):
        return lambda samples: mt.corpus_value(metric, np.array([s.extra["sacrebleu"][metric] for s in samples],
                                                                dtype=float))
    raise NotResampleable(f"task {task}: no way to recompute corpus metric {metric!r} on resampled items "
                          f"(add it to the task's corpus_metrics or give the task a corpus_statistic(metric) method)")


def _group_statistic(group, metric: str):
    """``list[Sample] -> float``: one figure of a task's ``MetricGroup``, recomputed on resampled items."""
    if group.estimate is not None:
        return lambda samples: float(group.estimate(samples)[metric].value)
    return lambda samples: float(group.compute(group.items(samples) if group.items else samples)[metric])


def compare_metric(t: AlignedTask, metric: str, opts: CompareOptions, primary: bool, n_tests: int) -> MetricComparison:
    info = t.metrics[metric]
    recompute = info.kind == "corpus" or (info.kind != "mean" and not len(t.values(metric)[0]))
    sign = 1.0 if info.higher_is_better else -1.0
    rng = np.random.default_rng(derive_seed(opts.seed, t.name, metric, "compare"))
    tests = n_tests if primary else 1
    if recompute:  # corpus metrics, and group figures (macro means) that no sample carries
        try:
            fn = corpus_statistic(t.name, metric, t.options)
        except NotResampleable as e:
            if opts.primary and primary:   # asked for explicitly: an error, not a silent skip
                raise NotComparable(str(e)) from None
            t.notes.append(f"{e}; not tested")
            return MetricComparison(t.name, metric, info.kind, info.higher_is_better, 1.0, False,
                                    info.baseline_value, info.candidate_value, None, None, None, 0.0, None, None,
                                    method="not recomputable")
        bs = [Sample.from_dict(r) for r in t.base_rows]
        cs = [Sample.from_dict(r) for r in t.cand_rows]
        try:
            bval, cval = float(fn(bs)), float(fn(cs))
        except (KeyError, TypeError, ValueError, AttributeError) as e:  # rows without what it reads (an import)
            t.notes.append(f"{t.name}: {metric} cannot be recomputed from these rows ({type(e).__name__}: {e}); "
                           "not tested")
            return MetricComparison(t.name, metric, info.kind, info.higher_is_better, 1.0, False,
                                    info.baseline_value, info.candidate_value, None, None, None, 0.0, None, None,
                                    method="not recomputable")
        scale = 100.0 if info.higher_is_better and 0 <= bval <= 1 and 0 <= cval <= 1 else 1.0
        m = margin_points(opts, t.name, metric) / scale
        res = paired.paired_corpus(bs, cs, fn, sign, t.clusters, m, opts.alpha, rng, opts.corpus_replicates)
        mdd = power.mdd_from_se(res.details.get("bootstrap_se"), opts.alpha, opts.power, m, tests)
    else:
        b, c, cl = t.values(metric)
        scale = 100.0 if len(b) and np.all((b >= 0) & (b <= 1) & (c >= 0) & (c <= 1)) else 1.0
        m = margin_points(opts, t.name, metric) / scale
        if len(b) == 0:
            return MetricComparison(t.name, metric, info.kind, info.higher_is_better, scale, primary, None, None, None,
                                    None, None, m, None, None, method="no paired values")
        bval, cval = float(b.mean()), float(c.mean())
        binary = paired.is_binary(b, c)
        if binary and len(np.unique(cl)) == len(cl) and not opts.force_bootstrap:
            bb, cc = (b, c) if sign > 0 else (1 - b, 1 - c)
            res = paired.paired_binary(bb, cc, m, opts.alpha, opts.mid_p)
            mdd = power.mdd_binary(res.n, res.details["discordance"], opts.alpha, opts.power, m, tests)
        else:
            res = paired.paired_mean(sign * (c - b), cl, m, opts.alpha, rng, opts.replicates, opts.force_bootstrap)
            mdd = power.mdd_mean(res.n_clusters, res.details.get("sd_cluster_delta"), opts.alpha, opts.power, m, tests)
    lo, hi = (res.ci_low, res.ci_high) if sign > 0 else (-res.ci_high, -res.ci_low)
    return MetricComparison(t.name, metric, info.kind, info.higher_is_better, scale, primary, bval, cval, cval - bval,
                            lo, hi, m, res.p_regress, res.p_improve, method=res.method, n=res.n,
                            n_clusters=res.n_clusters, mdd=mdd, details=res.details)


def assign_verdicts(rows: list[MetricComparison], alpha: float, correction: str) -> None:
    """Adjust the primary rows' p-values as one family and label every row."""
    prim = [r for r in rows if r.primary and r.p_regress is not None]
    for attr in ("p_regress", "p_improve"):
        ps = np.array([getattr(r, attr) if r.p_regress is not None and math.isfinite(getattr(r, attr)) else 1.0
                       for r in prim])
        adj = adjust(ps, correction) if len(ps) else ps
        for r, a in zip(prim, adj):
            setattr(r, attr + "_adj", float(a))
    for r in rows:
        if r.p_regress is None:
            r.verdict = INCONCLUSIVE
            continue
        pr = r.p_regress_adj if r.primary else r.p_regress
        pi = r.p_improve_adj if r.primary else r.p_improve
        if pr is not None and pr < alpha:
            r.verdict = REGRESSED
        elif pi is not None and pi < alpha:
            r.verdict = IMPROVED
        else:
            sign = 1.0 if r.higher_is_better else -1.0
            worst = min(sign * r.ci_low, sign * r.ci_high) if r.ci_low is not None else float("nan")
            r.verdict = INCONCLUSIVE if (r.margin > 0 and not worst > -r.margin) else NO_CHANGE


def _text(x, limit: int) -> str:
    if isinstance(x, list) and x and isinstance(x[0], dict) and "content" in x[0]:
        x = "\n".join(f"[{m.get('role')}] {m.get('content')}" for m in x)
    s = x if isinstance(x, str) else repr(x)
    return s if len(s) <= limit else "…" + s[-limit:]


def _shown(x, limit: int) -> str:
    if isinstance(x, str) and not x.strip():
        return f"(empty: {x!r})"
    return _text(x, limit)


def _output(row: dict, limit: int) -> str:
    resp = row.get("responses") or []
    out = _shown(resp[0], limit) if resp and isinstance(resp[0], str) else ""
    ext = row.get("extracted")
    if ext is not None:
        out = (out + "\n" if out else "") + f"(extracted: {_shown(ext, 200)})"
    return out


def redacted(task: str) -> bool:
    """Tasks whose questions must never be shown (GPQA, or a class with ``redact_samples = True``)."""
    try:
        cls = registry.get_task_class(task)
        if getattr(cls, "redact_samples", False):
            return True
    except ValueError:
        pass
    return task.lower().startswith("gpqa")


def collect_flips(t: AlignedTask, metric: str, examples: int, higher_is_better: bool = True) -> dict:
    b, c = [], []
    for br, cr in zip(t.base_rows, t.cand_rows):
        x, y = br.get("metrics", {}).get(metric), cr.get("metrics", {}).get(metric)
        if x is None or y is None:
            continue
        good_b, good_c = (x == 1, y == 1) if higher_is_better else (x == 0, y == 0)
        if good_b and not good_c:
            b.append((br, cr))
        elif good_c and not good_b:
            c.append((br, cr))
    hide = redacted(t.name)

    def item(pair):
        br, cr = pair
        d = {"doc_id": br.get("doc_id")}
        if hide:
            d["redacted"] = True
            return d
        d.update(prompt=_text(br.get("prompt"), 400), target=_text(br.get("target"), 200),
                 baseline=_output(br, 400), candidate=_output(cr, 400))
        return d

    return {"metric": metric, "n_right_to_wrong": len(b), "n_wrong_to_right": len(c),
            "right_to_wrong": [item(p) for p in b[:examples]], "wrong_to_right": [item(p) for p in c[:examples]],
            "right_to_wrong_ids": [p[0].get("doc_id") for p in b], "wrong_to_right_ids": [p[0].get("doc_id") for p in c]}


def _run_info(rec: RunRecord) -> dict:
    run = rec.run
    return {"path": str(rec.path), "run_id": run.run_id, "model": run.model.name, "spec": run.model.spec,
            "created_at": run.created_at, "gen_overrides": run.config.get("gen_overrides"),
            "limit": run.config.get("limit")}


def compare_runs(baseline, candidate, opts: Optional[CompareOptions] = None) -> Comparison:
    """Compare two run records (paths or ``RunRecord``); raises ``NotComparable`` when they cannot be."""
    opts = opts or CompareOptions()
    if not 0 < opts.alpha < 0.5:
        raise ValueError("--alpha must be in (0, 0.5)")
    base = baseline if isinstance(baseline, RunRecord) else load(baseline)
    cand = candidate if isinstance(candidate, RunRecord) else load(candidate)
    aligned = align_runs(base, cand, opts.tasks, opts.allow_prompt_change, opts.allow_data_change)
    primary = select_primary(aligned, opts.primary)
    rows, flips, notes = [], {}, []
    for t in aligned:
        for m in t.metrics:
            rows.append(compare_metric(t, m, opts, (t.name, m) in primary, len(primary)))
        notes.extend(t.notes)
    assign_verdicts(rows, opts.alpha, opts.correction)
    for t in aligned:
        notes.extend(truncation_notes(t, [r for r in rows if r.task == t.name]))
        binaries = [r for r in rows if r.task == t.name and r.kind == "mean" and r.n and r.scale == 100
                    and paired.is_binary(*t.values(r.metric)[:2])]
        binaries.sort(key=lambda r: (not r.primary, -(r.details.get("right_to_wrong", 0) or 0)))
        if binaries:
            flips[t.name] = collect_flips(t, binaries[0].metric, opts.examples, binaries[0].higher_is_better)
    return Comparison(_run_info(base), _run_info(cand), opts, rows, flips, notes, sum(r.primary for r in rows))
