"""``lm-eval:NAME`` as an evalkit task: one lm-eval leaf task, or a group that aggregates its leaves.

A group with an ``aggregate_metric_list`` (``mmlu``, ``bbh_cot_fewshot``) is one evalkit task: its
docs are all its leaves' docs (ids ``<leaf>/<index>``), ``--limit`` takes the first N docs of each
leaf (as lm-eval does), the overall figures are the group's aggregates, and every leaf and subgroup
is a breakdown with its own CIs. A group without aggregation, or a tag, is expanded by the catalog
into its members. Requests go through evalkit's engine like any task's: one batch per request kind
across all tasks of the run, deduplicated, cached and resumable.
"""
from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from functools import lru_cache
from typing import ClassVar, Optional, Sequence

from evalkit.scoring.metric import Metric
from evalkit.taskapi.task import Doc, Scored, Task, limit_count
from evalkit.util.errors import ConfigError
from evalkit.util.nltk_punkt import ensure_punkt_tab

from . import catalog
from .leaf import OUTPUT_TYPES, Leaf, json_safe, metric_key
from .local_data import datasets_from
from .metrics import Declared, group_metrics, is_mean, lm_eval_value


def check_group_members(name: str, lm_eval_name: str) -> None:
    """A group's members by name must be tasks or groups lm-eval knows (else lm-eval builds a task of the
    unknown name with no dataset and fails far from the cause); inline member configs are lm-eval's."""
    index = catalog.manager().task_index
    entry = index.get(lm_eval_name)
    members = (getattr(entry, "cfg", None) or {}).get("task") if entry is not None else None
    if not isinstance(members, list):
        return
    unknown = [m for m in members if isinstance(m, str) and m not in index]
    if unknown:
        where = f" ({entry.yaml_path})" if getattr(entry, "yaml_path", None) else ""
        raise ConfigError(f"task {name}{where}: its member(s) {', '.join(map(repr, unknown))} are no task or group "
                          f"lm-eval knows (misspelt, or their YAML not under --include-path?)")


@contextlib.contextmanager
def lm_eval_errors():
    """The error lines lm-eval logs meanwhile (they often name what its exception does not)."""
    said: list = []

    class Keep(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage().splitlines()[0][:300])

    handler, logger = Keep(logging.ERROR), logging.getLogger("lm_eval")
    logger.addHandler(handler)
    try:
        yield said
    finally:
        logger.removeHandler(handler)


class LmEvalTask(Task):
    lm_eval_name: ClassVar[str] = ""
    family: ClassVar[Optional[str]] = "lm-eval"
    #: ``--task-args lm-eval:NAME:trust_remote_code=true`` (or ``--trust-remote-code``)
    known_options: ClassVar[tuple] = ("trust_remote_code",)

    def __init__(self, data_path: Optional[str] = None, **options):
        super().__init__(data_path, **options)
        ensure_punkt_tab()  # IFEval's checkers (and a few others) split sentences with NLTK's punkt_tab
        check_group_members(self.name, self.lm_eval_name)
        with datasets_from(self.name, data_path, bool(options.get("trust_remote_code"))), \
                lm_eval_errors() as said:
            try:
                loaded = catalog.manager().load([self.lm_eval_name])
            except ConfigError:
                raise
            except Exception as e:  # noqa: BLE001 (YAML errors, a hook failing at load)
                entry = catalog.manager().task_index.get(self.lm_eval_name)
                where = f" ({entry.yaml_path})" if entry is not None and entry.yaml_path else ""
                cause = f" (lm-eval said: {said[-1]})" if said else ""  # e.g. the unknown metric's name
                raise ConfigError(f"task {self.name}{where}: lm-eval could not build it: {type(e).__name__}: "
                                  f"{str(e).splitlines()[0] if str(e) else ''}{cause}") from e
        self.leaves = {n: Leaf(t, n) for n, t in loaded["tasks"].items()}
        for n, leaf in self.leaves.items():  # refused here, before any model loads (not at the first request)
            cfg = getattr(leaf.task, "config", None)
            if getattr(cfg, "doc_to_image", None) or getattr(cfg, "doc_to_audio", None):
                raise ConfigError(f"task {self.name} ({n}): multimodal lm-eval tasks (images, audio) are not "
                                  f"supported by evalkit")
        self.groups = {n: g for n, g in loaded["groups"].items() if g.has_aggregation}
        self.group = self.groups.get(self.lm_eval_name)
        self.declared = Declared(list(self.leaves.values()))
        kinds = {OUTPUT_TYPES.get(leaf.output_type, leaf.output_type) for leaf in self.leaves.values()}
        self.output_type = kinds.pop() if len(kinds) == 1 else "mixed"
        self.num_fewshot = next(iter(self.leaves.values())).num_fewshot()
        self.version = str(self.group.version if self.group else next(iter(self.leaves.values())).task.VERSION)
        self._declare()

    def _declare(self) -> None:
        leaf_decl = self.declared.leaf_metrics()
        self.kept_raw: frozenset = frozenset()
        if self.group is None:
            self.metrics = tuple(leaf_decl)
            return
        grouped = group_metrics(self.group, self.declared, list(self.leaves))
        taken = {n for d in grouped for n in d.names}
        # a group figure that is not a plain mean over docs: its per-doc values stay raw in the samples
        self.kept_raw = frozenset(n for d in grouped if not isinstance(d, Metric) for n in d.names)
        self.metrics = tuple(grouped) + tuple(m for m in leaf_decl if m.name not in taken and m.level == "sample")

    # ---- docs ----
    def eval_docs(self) -> list[Doc]:
        single = self.group is None and len(self.leaves) == 1
        docs = []
        for name, leaf in self.leaves.items():
            for i, d in enumerate(leaf.docs()):
                docs.append(Doc(id=str(i) if single else f"{name}/{i}", query="",
                                meta={"task": name, "index": i, "doc": json_safe(d)}))
        return docs

    def docs_within_limit(self, docs: Sequence[Doc], limit) -> list[Doc]:
        """The first ``limit`` docs of each leaf (a fraction below 1: of each leaf's docs, rounded up)."""
        if limit is None:
            return list(docs)
        per = defaultdict(list)
        for d in docs:
            per[d.meta["task"]].append(d)
        keep = {n: limit_count(limit, len(ds)) for n, ds in per.items()}
        out, taken = [], defaultdict(int)
        for d in docs:
            t = d.meta["task"]
            if taken[t] < keep[t]:
                taken[t] += 1
                out.append(d)
        return out

    # ---- requests and scoring ----
    def requests(self, doc: Doc, ctx) -> list:
        return self.leaves[doc.meta["task"]].requests(doc.meta["index"], ctx)

    def sample_prompt(self, doc, ctx):
        return self.leaves[doc.meta["task"]].context(doc.meta["index"], ctx)

    def score_all(self, docs, responses, ctx):
        by_leaf = defaultdict(list)
        for pos, d in enumerate(docs):
            by_leaf[d.meta["task"]].append(pos)
        out: list = [None] * len(docs)
        for name, positions in by_leaf.items():
            leaf = self.leaves[name]
            ids, resps = [docs[p].meta["index"] for p in positions], [responses[p] for p in positions]
            scored = [self._scored(docs[p], res) for p, res in zip(positions, leaf.score(ids, resps, ctx))]
            k = evalkit_repeats(leaf, resps)
            if k > 1:  # --repeats K: each completion through lm-eval's filters and metrics on its own
                per = [[self._scored(docs[p], res) for p, res in zip(positions, leaf.score(ids, only(resps, j), ctx))]
                       for j in range(k)]
                scored = [self._repeated(first, [per[j][i] for j in range(k)]) for i, first in enumerate(scored)]
            for p, sc in zip(positions, scored):
                out[p] = self.as_sample(docs[p], responses[p], sc, ctx)
        return out

    def _repeated(self, first: Scored, per: list) -> Scored:
        """A doc's row from its K completions scored one by one: the metrics' means, avg@K, pass@k,
        pass^k and maj@K (over the filtered answers) of the first declared metric, lm-eval's details
        of the first completion (``first``) and the K completions' texts."""
        from evalkit.taskapi import repeats
        row = repeats.problem_scored(per, repeats.correctness_metric(self, per[0].metrics),
                                     repeats.voting(self, [s.extracted for s in per]))
        row.extra = {**first.extra, "repeats": row.extra["repeats"]}
        # per request, the K completions' texts (lm-eval's ``resps`` form)
        row.responses = [[x for s in per for x in s.responses[r]] for r in range(len(first.responses))]
        row.target = first.target
        return row

    def _scored(self, doc: Doc, res: dict) -> Scored:
        metrics, raw = {}, {}
        for f, vals in res["metrics"].items():
            for m, v in vals.items():
                name = metric_key(m, f)
                if name not in self.declared.of:
                    self.declared.add(name, m, f)
                    self._declare()
                if self.declared.sample_level(name) and name not in self.kept_raw and isinstance(v, (bool, int, float)):
                    metrics[name] = float(v)
                else:
                    raw[name] = json_safe(v)
        first = next(iter(res["filtered"].values()), None)
        extracted = first[0] if isinstance(first, list) and len(first) == 1 else first
        extra = {"lm_eval": {"task": doc.meta["task"], "doc_id": doc.meta["index"], "doc": doc.meta["doc"],
                             "prompt_hash": res["prompt_hash"], "continuations": res["continuations"],
                             "filtered_resps": res["filtered"], "values": raw}}
        return Scored(metrics, extracted=extracted, extra=extra, responses=res["resps"],
                      target=self.leaves[doc.meta["task"]].target(doc.meta["index"]))

    # ---- what it reports ----
    def breakdowns(self, samples: Sequence) -> dict:
        """Each leaf's figures (lm-eval's value, evalkit's CI) and each aggregating subgroup's, when
        the task has several leaves."""
        if self.group is None and len(self.leaves) == 1:
            return {}
        by_leaf = defaultdict(list)
        for s in samples:
            by_leaf[s.extra["lm_eval"]["task"]].append(s)
        out = {}
        for name, ss in by_leaf.items():
            decl = Declared([self.leaves[name]])
            out[name] = {m.name: _aggregate(m, ss, f"{self.name}/{name}") for m in decl.leaf_metrics(self.kept_raw)
                         if lm_eval_value(ss, m.name, decl) is not None}
        for gname, g in self.groups.items():
            if g is self.group:
                continue
            leaves = [t.task_name for t in g.get_all_tasks()]
            ss = [s for n in leaves for s in by_leaf.get(n, ())]
            if ss:
                out[gname] = {d.name: _aggregate(d, ss, f"{self.name}/{gname}")
                              for d in group_metrics(g, self.declared, leaves)}
        return out

    def run_extra(self, samples: Sequence) -> dict:
        from evalkit.taskapi.repeats import run_summary  # --repeats K: K, naive vs clustered SE
        return {**run_summary(samples), "lm_eval": {
            "version": catalog.version(), "task": self.lm_eval_name, "kind": "group" if self.group else "task",
            "leaves": list(self.leaves), "n-shot": {n: leaf.num_fewshot() for n, leaf in self.leaves.items()},
            "metric_names": {n: [m, f] for n, (m, f, _fn, _up) in self.declared.of.items()},
            "aggregations": {n: ("mean" if is_mean(fn) else getattr(fn, "__name__", str(fn)))
                             for n, (_m, _f, fn, _up) in self.declared.of.items()},
        }}

    def config_fingerprint(self) -> dict:
        fp = super().config_fingerprint()
        fp["lm_eval"] = {"version": catalog.version(), "task": self.lm_eval_name}
        return fp


def evalkit_repeats(leaf: Leaf, responses: list) -> int:
    """K when evalkit's ``--repeats K`` gave a generation task K completions per request where lm-eval
    asks for one (lm-eval's own ``repeats`` stay lm-eval's: its filters vote over them); else 1."""
    if int(leaf.task.config.repeats or 1) > 1:
        return 1
    return max((len(r) for doc in responses for r in doc if isinstance(r, list)), default=1)


def only(responses: list, j: int) -> list:
    """Each doc's responses with generations cut to their ``j``-th completion."""
    return [[[r[j]] if isinstance(r, list) else r for r in doc] for doc in responses]


def _aggregate(decl, samples, where: str):
    """One declaration's figure over some samples (a breakdown: seeded by its own name)."""
    if isinstance(decl, Metric):
        return decl.aggregate(samples, 1234, where)
    return decl.aggregate(samples, 1234, where)[decl.name]


@lru_cache(maxsize=None)
def task_class(name: str) -> type:
    """The evalkit task class of an lm-eval task or aggregating group (``lm-eval:NAME``)."""
    bare = catalog.bare(name)
    safe = "".join(c if c.isalnum() else "_" for c in bare)
    return type(f"LmEval_{safe}", (LmEvalTask,), {
        "name": catalog.PREFIX + bare, "lm_eval_name": bare, "__module__": __name__,
        "description": f"lm-eval's {catalog.kind(bare) or 'task'} {bare}, run by evalkit's engine"})
