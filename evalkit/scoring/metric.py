"""Metrics as objects: what a task reports, declared next to the task (``Task.metrics``) and checked.

A ``Metric`` names one number, says whether higher is better and how it is aggregated:

- ``level="sample"``: each sample's ``metrics[name]`` (computed by the task's scoring), reported as
  their mean with the analytic stderr (Wilson interval for 0/1 values, Student-t otherwise);
- ``level="corpus"``: ``compute(samples) -> float`` over the whole corpus (perplexity, ...), with a
  seeded bootstrap over items that recomputes it.

A ``MetricGroup`` is one corpus computation that gives several names, each with its own direction
(BLEU/chrF/TER from the same sufficient statistics, an ``evaluate:`` module's scalar outputs, macro
means over subjects), in the spirit of lighteval's ``MetricGrouping``: ``compute(items) -> {name:
value}`` runs once on all items and once per bootstrap replicate, every name from the same
resamples, seeded by the run seed, the task and the group's name (``stats.bootstrap_group``). A
group whose figures have an analytic interval gives ``estimate(samples) -> {name: MetricValue}``
instead.

Declarations are checked (``resolve``): a sample carrying a name the task did not declare, or a
declared (required) sample metric that no sample carries, is a ``MetricDeclarationError`` naming the
task and the metric. Aggregation reads samples and never changes them::

    metrics = (Metric("exact_match"), Metric("no_answer", higher_is_better=False),
               MetricGroup("perplexity", ("word_perplexity", "bits_per_byte"), higher_is_better=False,
                           compute=lambda samples: {...}))

Tasks written before ``metrics`` (the class dicts ``higher_is_better = {name: bool}`` and
``corpus_metrics = {name: compute}``): their entries are declarations like any other. A task that
declares no ``metrics`` of its own is checked leniently: a sample metric it names nowhere is still
reported as a mean, higher is better, with an ``UndeclaredMetricWarning`` (a ``FutureWarning``);
declared names that no sample carries are errors all the same.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from evalkit.scoring.stats import MetricValue, bootstrap_group, derive_seed, mean_metric

LEVELS = ("sample", "corpus")


class MetricDeclarationError(ValueError):
    """A task's metric declarations disagree with what its samples carry (one line, names the task)."""


class UndeclaredMetricWarning(FutureWarning):
    """A task without ``metrics`` reported a name it declares nowhere (to become an error)."""


@dataclass(frozen=True)
class Metric:
    """One reported figure: ``name``, its direction, and its level: ``sample`` (the mean of the values
    every sample carries, CI over samples) or ``corpus`` (``compute(samples)``, bootstrap CI)."""

    name: str
    higher_is_better: bool = True
    level: str = "sample"
    compute: Optional[Callable[[Sequence], float]] = None  # corpus level: samples -> value
    replicates: int = 1000                                  # bootstrap replicates (corpus level)
    #: sample level: every run's samples carry it. False for a name only some runs report (pass@k
    #: needs k completions per problem); a sample carrying an undeclared name is an error either way
    required: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise MetricDeclarationError(f"metric name {self.name!r}: expected a non-empty string")
        if self.level not in LEVELS:
            raise MetricDeclarationError(f"metric {self.name!r}: level {self.level!r} is not one of {', '.join(LEVELS)}")
        if self.level == "corpus" and self.compute is None:
            raise MetricDeclarationError(f"corpus metric {self.name!r} needs compute(samples) -> float")
        if not isinstance(self.higher_is_better, bool):
            raise MetricDeclarationError(f"metric {self.name!r}: higher_is_better must be True or False")

    @property
    def names(self) -> tuple:
        return (self.name,)

    def as_group(self) -> "MetricGroup":
        """A corpus metric is the one-name group of its name (so the same seed as always)."""
        fn = self.compute
        return MetricGroup(self.name, (self.name,), self.higher_is_better,
                           lambda items: {self.name: fn(items)}, self.replicates)

    def aggregate(self, samples: Sequence, seed: int, task: str) -> MetricValue:
        """This metric over the samples of a task, with its uncertainty."""
        if self.level == "corpus":
            return self.as_group().aggregate(samples, seed, task)[self.name]
        return mean_metric([s.metrics.get(self.name) for s in samples], self.higher_is_better)


@dataclass(frozen=True)
class MetricGroup:
    """One corpus computation, several named figures, a direction per name.

    ``compute(items) -> {name: float}`` (all ``names``; a name missing or not finite in a replicate
    is left out of that name's replicates). ``items(samples)`` is what the bootstrap resamples and
    ``compute`` reads (default: the samples; an array is resampled by rows, a dict of arrays row-wise
    in every column). ``estimate(samples) -> {name: MetricValue}``, when given, reports the figures
    with their own (analytic) interval instead of the bootstrap. ``replicates`` < 2: no CI.
    """

    name: str
    names: tuple
    higher_is_better: Union[bool, Mapping[str, bool]] = True
    compute: Optional[Callable[[Any], Mapping[str, float]]] = None
    replicates: int = 1000
    items: Optional[Callable[[Sequence], Any]] = None
    estimate: Optional[Callable[[Sequence], Mapping[str, MetricValue]]] = None
    directions: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        names = (self.names,) if isinstance(self.names, str) else tuple(self.names)
        object.__setattr__(self, "names", names)
        where = f"metric group {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise MetricDeclarationError(f"metric group name {self.name!r}: expected a non-empty string")
        if not names or not all(isinstance(n, str) and n for n in names):
            raise MetricDeclarationError(f"{where}: names must be non-empty strings, got {names!r}")
        if len(set(names)) != len(names):
            raise MetricDeclarationError(f"{where}: a name appears twice in {names!r}")
        hib = self.higher_is_better
        if isinstance(hib, bool):
            directions = {n: hib for n in names}
        elif isinstance(hib, Mapping):
            extra, lacking = sorted(set(hib) - set(names)), [n for n in names if n not in hib]
            if extra or lacking:
                raise MetricDeclarationError(f"{where}: higher_is_better must give each of {', '.join(names)} "
                                             f"a direction (missing: {', '.join(lacking) or '-'}; "
                                             f"unknown: {', '.join(extra) or '-'})")
            if not all(isinstance(v, bool) for v in hib.values()):
                raise MetricDeclarationError(f"{where}: higher_is_better values must be True or False")
            directions = {n: hib[n] for n in names}
        else:
            raise MetricDeclarationError(f"{where}: higher_is_better must be a bool or {{name: bool}}")
        object.__setattr__(self, "directions", directions)
        if self.compute is None and self.estimate is None:
            raise MetricDeclarationError(f"{where} needs compute(items) -> {{name: value}} (or estimate)")

    def direction(self, name: str) -> bool:
        return self.directions[name]

    def aggregate(self, samples: Sequence, seed: int, task: str,
                  full: Optional[Mapping[str, float]] = None) -> dict[str, MetricValue]:
        """Every name of the group over the samples, with its CI: one computation per resample.
        ``full``: ``compute`` on all items when the caller has it already."""
        samples = list(samples)
        if self.estimate is not None:
            got = dict(self.estimate(samples))
            unknown = sorted(set(got) - set(self.names))
            if unknown:
                raise MetricDeclarationError(f"task {task}: metric group {self.name!r} gave undeclared "
                                             f"name(s) {', '.join(map(repr, unknown))}")
            return {n: got[n] for n in self.names if n in got}
        items = self.items(samples) if self.items is not None else samples
        return bootstrap_group(items, self.compute, self.names, derive_seed(seed, task, self.name, "bootstrap"),
                               self.replicates, self.directions, full)

    def statistic(self, name: str) -> Callable[[Sequence], float]:
        """``samples -> value`` of one name (a comparison recomputing it on resampled items)."""
        if self.compute is None:
            raise MetricDeclarationError(f"metric group {self.name!r} has no compute for {name!r}")
        return lambda samples: float(self.compute(self.items(samples) if self.items is not None
                                                  else list(samples))[name])


Declaration = Union[Metric, MetricGroup]


def _names(d: Declaration) -> tuple:
    return d.names


def declarations(declared: Sequence, higher_is_better: Optional[Mapping] = None,
                 corpus: Optional[Mapping] = None, task: str = "") -> tuple:
    """``declared`` (Metric and MetricGroup objects) and the older class-dict shorthands
    (``{name: bool}``, ``{name: compute}``) as one tuple of objects; a name declared twice in
    ``declared`` is an error (a shorthand entry for a name ``declared`` has adds nothing)."""
    hib = dict(higher_is_better or {})
    out, seen = [], set()
    for d in declared or ():
        if not isinstance(d, (Metric, MetricGroup)):
            raise MetricDeclarationError(f"task {task}: metrics holds {d!r}; expected Metric or MetricGroup objects")
        twice = [n for n in d.names if n in seen]
        if twice:
            raise MetricDeclarationError(f"task {task}: metric {twice[0]!r} is declared twice")
        seen.update(d.names)
        out.append(d)
    for name, fn in (corpus or {}).items():
        if name not in seen:
            out.append(Metric(name, bool(hib.get(name, True)), "corpus", fn))
            seen.add(name)
    for name, up in hib.items():
        if name not in seen:
            out.append(Metric(name, bool(up)))
            seen.add(name)
    return tuple(out)


def resolve(declared: Sequence, samples: Sequence, higher_is_better: Optional[Mapping] = None,
            corpus: Optional[Mapping] = None, *, task: str = "", strict: Optional[bool] = None,
            appended: Sequence = (), own_aggregate: bool = False) -> list:
    """The metrics a task reports for these samples, in record order: sample-level ones in the order
    the samples first name them, then corpus-level metrics and groups in declared order.

    ``strict`` (default: the task declares ``metrics``): a name the samples carry that nothing
    declares is an error; otherwise it is reported as a mean, higher is better, with an
    ``UndeclaredMetricWarning``. Either way a required sample metric that no sample carries (when
    there are samples) is an error. ``appended``: declarations the run adds (``evaluate:``): their
    sample names count as declared; their groups are computed by whoever appended them.
    ``own_aggregate``: the task overrides ``aggregate`` (deprecated: declare a ``MetricGroup``); a
    lenient task's ``higher_is_better`` entries may then name figures the override adds."""
    strict = bool(declared) if strict is None else strict
    decl = declarations(declared, higher_is_better, corpus, task)
    own = {n for d in decl for n in d.names}
    clash = sorted(n for d in appended for n in d.names if n in own)
    if clash:
        raise MetricDeclarationError(f"task {task}: appended metric {clash[0]!r} has the name of a task metric")
    sample_decl = {d.name: d for d in (*decl, *appended) if isinstance(d, Metric) and d.level == "sample"}
    corpus_names = {n for d in (*decl, *appended) if not (isinstance(d, Metric) and d.level == "sample")
                    for n in d.names}
    out, seen, undeclared = [], set(), []
    for s in samples:
        for name in s.metrics:
            if name in seen:
                continue
            seen.add(name)
            m = sample_decl.get(name)
            if m is not None:
                out.append(m)
            elif name in corpus_names:
                if strict:
                    raise MetricDeclarationError(f"task {task}: samples carry {name!r}, declared as a corpus metric")
            else:
                undeclared.append(name)
                if not strict:
                    out.append(Metric(name))
    if undeclared and strict:
        raise MetricDeclarationError(
            f"task {task}: sample metric {', '.join(map(repr, undeclared))} is not declared "
            f"(declared: {', '.join(sorted(own)) or 'none'}); add it to the task's metrics")
    if undeclared:
        warnings.warn(f"task {task}: metric {', '.join(map(repr, undeclared))} is not declared; reported as a mean, "
                      "higher is better. Declare the task's metrics (metrics = (Metric(name, higher_is_better=...), "
                      "...)): undeclared metrics will be an error", UndeclaredMetricWarning, stacklevel=3)
    added = set(higher_is_better or {}) - {n for d in declared or () for n in d.names} if own_aggregate and not strict \
        else set()
    missing = [m.name for m in sample_decl.values() if m.required and m.name not in seen and m.name not in added] \
        if samples else []
    if missing:
        raise MetricDeclarationError(
            f"task {task}: declared metric {', '.join(map(repr, missing))} is carried by no sample "
            f"(samples carry: {', '.join(sorted(seen)) or 'nothing'})")
    out.extend(d for d in decl if not (isinstance(d, Metric) and d.level == "sample"))
    return out


def aggregate(metrics: Sequence, samples: Sequence, seed: int, task: str) -> dict[str, MetricValue]:
    """Every resolved metric over the samples: means for sample metrics, one bootstrap per group."""
    out = {}
    for m in metrics:
        if isinstance(m, MetricGroup):
            out.update(m.aggregate(samples, seed, task))
        else:
            out[m.name] = m.aggregate(samples, seed, task)
    return out


def describe(decl: Sequence) -> list[dict]:
    """The declarations as the record keeps them: ``[{name, higher_is_better, level, group}]``."""
    out = []
    for d in decl:
        if isinstance(d, MetricGroup):
            out.extend({"name": n, "higher_is_better": d.direction(n), "level": "corpus", "group": d.name}
                       for n in d.names)
        else:
            out.append({"name": d.name, "higher_is_better": d.higher_is_better, "level": d.level, "group": None})
    return out


def direction(decl: Sequence, name: str, default: bool = True) -> bool:
    """Whether higher is better for ``name`` by these declarations (``default`` when none names it)."""
    for d in decl:
        if name in d.names:
            return d.direction(name) if isinstance(d, MetricGroup) else d.higher_is_better
    return default


def accepting_appended(fn: Callable) -> Callable:
    """A ``Task.aggregate`` override as the run calls it, ``(samples, seed, appended)``: one written
    before ``appended`` (``(self, samples, seed)``) is wrapped so its ``super().aggregate`` call
    still sees the run's appended declarations (kept on the task for the call)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.name == "appended" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return fn

    @functools.wraps(fn)
    def aggregate(self, samples, seed, appended=()):
        outer = self.__dict__.get("_appended")  # an override calling another one: keep the run's
        self._appended = tuple(appended) or outer or ()
        try:
            return fn(self, samples, seed)
        finally:
            if outer is None:
                self.__dict__.pop("_appended", None)
            else:
                self._appended = outer
    return aggregate
