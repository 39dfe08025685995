"""Any Hugging Face ``evaluate`` metric on a generation task, without writing code.

Spec: ``evaluate:NAME`` or ``evaluate:NAME:k=v,k2=v2``. NAME is a hub metric (``bertscore``,
``meteor``, ...), a local metric script (``/path/metric.py``) or folder; ``k=v`` are keyword
arguments of ``compute`` (typed like --model-args), except ``bootstrap=N`` which sets the bootstrap
replicates for corpus-level outputs (default 200; 0: no CI). Hub metrics are downloaded on first
use, so offline only cached or local ones load; the error says so.

The run appends it to every generation task (``RunConfig.metrics``). It is computed once over all
samples of a task (the task's ``metric_inputs(sample)`` gives the prediction and references; by
default the first response and the target). Its outputs become:

- a list with one number per sample: a per-sample metric ``<name>_<key>``, added to each sample's
  metrics (the run builds new samples; nothing is changed in place) and reported as their mean
  with the analytic stderr;
- a number: a corpus-level metric ``<name>_<key>``. The numbers of one spec are one
  ``MetricGroup`` (``evalkit.scoring.metric``): the same seeded bootstrap over samples as every
  corpus metric, one ``compute`` per replicate for all of them (stderr = standard deviation of the
  replicates, CI = their 2.5/97.5 percentiles; seed from the run seed, the task and the spec text);
- anything else (hash codes, per-order precisions, ...): kept under the task's ``extra``.

A list whose length only happens to equal the number of samples (BLEU's four n-gram precisions on
four samples) is told apart by computing the metric on one sample.
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from evalkit.scoring.metric import Metric, MetricGroup

PREFIX = "evaluate:"
DEFAULT_REPLICATES = 200
_LOADED: dict = {}


@dataclass(frozen=True)
class EvaluateSpec:
    text: str
    name: str                       # what evaluate.load gets
    label: str                      # metric-name prefix in the run record
    kwargs: dict = field(default_factory=dict, hash=False)
    replicates: int = DEFAULT_REPLICATES


def parse_spec(text: str) -> EvaluateSpec:
    if not isinstance(text, str) or not text.startswith(PREFIX) or not text[len(PREFIX):].strip(":"):
        raise ValueError(f"--metric {text!r}: expected evaluate:NAME[:k=v,...] (a Hugging Face evaluate "
                         "metric, e.g. evaluate:bertscore:lang=en)")
    from evalkit.util.kvargs import parse_model_args

    name, _, kw = text[len(PREFIX):].partition(":")
    try:
        kwargs = parse_model_args(kw)
    except ValueError:
        raise ValueError(f"--metric {text!r}: options after NAME: must be k=v,k2=v2") from None
    replicates = kwargs.pop("bootstrap", DEFAULT_REPLICATES)
    if not isinstance(replicates, int) or replicates < 0:
        raise ValueError(f"--metric {text!r}: bootstrap must be a whole number >= 0")
    stem = Path(name.rstrip("/")).stem if ("/" in name or name.endswith(".py")) else name
    label = re.sub(r"[^0-9A-Za-z]+", "_", stem).strip("_").lower() or "metric"
    return EvaluateSpec(text, name, label, kwargs, replicates)


def parse_specs(specs) -> list[EvaluateSpec]:
    items = [specs] if isinstance(specs, str) else list(specs or [])
    return [parse_spec(s) for s in items]


def load(name: str):
    """``evaluate.load(name)``, once per process, with an error that says what to do."""
    if name in _LOADED:
        return _LOADED[name]
    try:
        import evaluate
    except ImportError:
        from evalkit.util.extras import install_hint
        raise ValueError(f"--metric evaluate:{name}: the 'evaluate' package is not installed "
                         f"({install_hint('metrics')})") from None
    try:
        module = evaluate.load(name)
    except Exception as e:  # offline, unknown name, missing dependency of the metric script
        raise ValueError(
            f"could not load evaluate metric {name!r}: {type(e).__name__}: {e}. Hub metrics are downloaded "
            "from the Hugging Face hub on first use and cached; offline (no network or HF_HUB_OFFLINE=1) "
            "only cached metrics load, or pass a local metric script: --metric evaluate:/path/to/metric.py"
        ) from None
    _LOADED[name] = module
    return module


def prepare(specs) -> list[str]:
    """Check and load every spec now, before any model time is spent; returns the spec texts."""
    parsed = parse_specs(specs)
    for spec in parsed:
        load(spec.name)
    return [s.text for s in parsed]


def default_inputs(sample) -> tuple[str, list[str]]:
    """First response text and the target as a list of references."""
    first = sample.responses[0] if sample.responses else ""
    if isinstance(first, (list, tuple)):
        first = first[0]
    target = sample.target
    refs = [target] if isinstance(target, str) else [str(t) for t in (target or [])] or [str(target)]
    return str(first), refs


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _per_sample_keys(result: dict, n: int, probe) -> set:
    cands = {k for k, v in result.items()
             if isinstance(v, (list, tuple, np.ndarray)) and len(v) == n and all(_is_number(x) for x in v)}
    if cands and n > 1:
        small = probe()
        cands = {k for k in cands if isinstance(small.get(k), (list, tuple, np.ndarray)) and len(small[k]) == 1}
    return cands


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


@dataclass
class EvaluateResult:
    """Per-sample values (one dict per sample, in order), corpus-level MetricValues, other outputs,
    and the declarations of what was appended (``Metric`` per per-sample name, a ``MetricGroup``
    per spec's corpus outputs) for the task's aggregation and the record."""

    per_sample: list
    corpus: dict
    info: dict
    declared: tuple = ()


def compute(task, samples: Sequence, specs, seed: int) -> EvaluateResult:
    """Compute every ``evaluate`` metric of ``specs`` over ``samples`` (which are only read)."""
    samples = list(samples)
    per_sample = [{} for _ in samples]
    if not samples:
        return EvaluateResult(per_sample, {}, {})
    inputs = [getattr(task, "metric_inputs", default_inputs)(s) for s in samples]
    preds = [p for p, _ in inputs]
    single = all(len(r) == 1 for _, r in inputs)
    refs = [r[0] for _, r in inputs] if single else [r for _, r in inputs]
    corpus, info, declared = {}, {}, []
    hib = getattr(task, "higher_is_better_of", lambda name: True)
    n = len(samples)
    for spec in parse_specs(specs):
        module = load(spec.name)

        def run(idx=None, spec=spec, module=module):
            p = preds if idx is None else [preds[i] for i in idx]
            r = refs if idx is None else [refs[i] for i in idx]
            out = module.compute(predictions=p, references=r, **spec.kwargs)
            if not isinstance(out, dict):
                raise ValueError(f"evaluate metric {spec.name!r} returned {type(out).__name__}, not a dict")
            return out

        result = run()
        keys = _per_sample_keys(result, n, lambda: run([0]))
        scalars = [k for k, v in result.items() if _is_number(v) and math.isfinite(float(v))]
        for k in keys:
            for row, v in zip(per_sample, result[k]):
                row[f"{spec.label}_{k}"] = float(v)
        declared.extend(Metric(f"{spec.label}_{k}", bool(hib(f"{spec.label}_{k}"))) for k in keys)
        if scalars:
            group = corpus_group(spec, scalars, run, hib)
            declared.append(group)
            # the group resamples sample positions; ``full`` is the result on all of them, computed above
            corpus.update(group.aggregate(range(n), seed, getattr(task, "name", ""),
                                          full={group.names[i]: result[k] for i, k in enumerate(scalars)}))
        rest = {k: _jsonable(v) for k, v in result.items() if k not in keys and k not in scalars}
        if rest:
            info[spec.label] = rest
    return EvaluateResult(per_sample, corpus, info, tuple(declared))


def corpus_group(spec: EvaluateSpec, keys: Sequence[str], run, hib) -> MetricGroup:
    """The corpus-level outputs of one spec as one group: one ``compute`` per bootstrap replicate
    gives all of them. Named after the spec text, so its bootstrap seed is the one it always had
    (run seed, task, spec text)."""
    names = {k: f"{spec.label}_{k}" for k in keys}

    def compute(idx):
        res = run(list(idx))
        return {names[k]: res.get(k) for k in keys}

    return MetricGroup(spec.text, tuple(names.values()), {v: bool(hib(v)) for v in names.values()}, compute,
                       spec.replicates)
