r"""Math answer extraction and equivalence for MATH-style benchmarks.

Two verdicts per item, reported side by side:

- ``math_verify``: HF's math-verify, ``verify(parse(gold_solution), parse(completion))`` -- the
  same call lm-eval's minerva_math makes. It finds the boxed / "final answer is" expression itself
  and compares symbolically (fractions, ``\dfrac`` vs ``\frac``, intervals, sets, units).
- ``exact_match``: lm-eval's minerva rule: the answer from "Final Answer: The final answer is X.
  I hope it is correct.", normalised as in Lewkowycz et al. (2022, appendix D; the normalisation
  is lm-eval 0.4.13's ``normalize_final_answer``), then equal as strings or as sympy expressions
  (``parse_latex`` + ``simplify``), for comparability with published numbers.

Both rely on ``signal.alarm`` for their timeouts, which only works in a process's main thread
(math-verify raises elsewhere, minerva silently answers False). So the checks run in a pool of
worker processes (``judge_many``): created lazily on first use, reused across calls, started with
``spawn`` (the caller may hold torch threads), with a per-item wall-clock timeout on top of the
libraries' own; a worker stuck past it is killed and the pool rebuilt.
"""
from __future__ import annotations

import atexit
import logging
import os
import re
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Optional, Sequence

log = logging.getLogger(__name__)

INVALID_ANSWER = "[invalidanswer]"

# ---------------------------------------------------------------------------------------------
# Extraction (pure string functions, safe anywhere)
# ---------------------------------------------------------------------------------------------


def last_boxed_only_string(string: str) -> Optional[str]:
    r"""The last ``\boxed{...}`` (or ``\fbox{...}``, or ``\boxed x``) with balanced braces, as lm-eval's
    minerva_math takes it; None when there is none or its braces never close."""
    idx = string.rfind("\\boxed")
    if "\\boxed " in string:
        return "\\boxed " + string.split("\\boxed ")[-1].split("$")[0]
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    depth = 0
    for i in range(idx, len(string)):
        if string[i] == "{":
            depth += 1
        elif string[i] == "}":
            depth -= 1
            if depth == 0:
                return string[idx: i + 1]
    return None


def remove_boxed(s: Optional[str]) -> Optional[str]:
    r"""``\boxed{x}`` -> ``x`` (``\boxed x`` -> ``x``, ``\fbox{x}`` -> ``x``); None passes through."""
    if s is None:
        return None
    for left in ("\\boxed ",):
        if s.startswith(left):
            return s[len(left):]
    for left in ("\\boxed{", "\\fbox{"):
        if s.startswith(left) and s.endswith("}"):
            return s[len(left): -1]
    return None


def boxed_answer(text: str) -> Optional[str]:
    r"""Content of the last ``\boxed{}`` of ``text`` (nested braces kept), or None."""
    return remove_boxed(last_boxed_only_string(text or ""))


_FINAL_LINE = re.compile(r"Final Answer:\s*(?:The final answer is\s*)?(.*)", re.IGNORECASE)


def final_answer_line(text: str) -> Optional[str]:
    """The answer on the last "Final Answer: ..." line, without "I hope it is correct." and the
    surrounding ``$``; None when there is no such line."""
    found = _FINAL_LINE.findall(text or "")
    if not found:
        return None
    ans = found[-1].strip()
    ans = re.sub(r"\s*I hope it is correct\.?\s*$", "", ans).strip()
    if ans.endswith("."):
        ans = ans[:-1].rstrip()
    if len(ans) >= 2 and ans.startswith("$") and ans.endswith("$"):
        ans = ans.strip("$").strip()
    return ans or None


def extract_answer(text: str) -> Optional[str]:
    r"""Our displayed answer: the last ``\boxed{}``, else the "Final Answer" line, else None."""
    boxed = boxed_answer(text)
    return boxed if boxed is not None else final_answer_line(text)


def get_unnormalized_answer(text: str) -> str:
    """lm-eval minerva: the X of "Final Answer: The final answer is X. I hope it is correct."."""
    text += "I hope it is correct."
    m = re.search(r"Final Answer: The final answer is(.*?). I hope it is correct.", text)
    return m.group(1).strip() if m else INVALID_ANSWER


# lm-eval 0.4.13 minerva_math/utils.py (Lewkowycz et al. 2022, appendix D, with lm-eval's fixes).
SUBSTITUTIONS = [
    ("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), (r"\ ", ""), (" ", ""), ("mbox", "text"),
    (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}"),
]
REMOVED_EXPRESSIONS = [
    "square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units", "\\ldots", "sue",
    "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals", "edges",
    "students", "childrentickets", "multiples", "\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2",
    "\\text{}^3", "\\text{\n}", "\\text{}", r"\mathrm{th}", r"^\circ", r"^{\circ}", r"\;", r",\!", "{,}", '"',
    "\\dots",
]


def normalize_final_answer(final_answer: str) -> str:
    """lm-eval's minerva normalisation, step for step (units, text wrappers, shorthand TeX)."""
    final_answer = final_answer.split("=")[-1]
    # unit words while whitespace still delimits them (word boundaries keep "\left" intact)
    for expr in REMOVED_EXPRESSIONS:
        if expr.isalpha():
            final_answer = re.sub(rf"(?<!\\)\b{expr}\b", "", final_answer)
    for before, after in SUBSTITUTIONS:
        final_answer = final_answer.replace(before, after)
    for expr in REMOVED_EXPRESSIONS:
        if expr.isalpha():
            # units glued on once spaces are gone, outside LaTeX command names
            segments = re.split(r"(\\[a-zA-Z]+)", final_answer)
            for i in range(0, len(segments), 2):
                segments[i] = segments[i].replace(expr, "")
            final_answer = "".join(segments)
        else:
            final_answer = final_answer.replace(expr, "")
    final_answer = re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", "$\\3$", final_answer)
    final_answer = re.sub(r"(\\text\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\textbf\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\overline\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\boxed\{)(.*)(\})", "\\2", final_answer)
    # shorthand TeX: \fracab -> \frac{a}{b}, \sqrt[3]a -> \sqrt[3]{a}, \sqrta -> \sqrt{a}
    final_answer = re.sub(r"(frac)([^{])(.)", "frac{\\2}{\\3}", final_answer)
    final_answer = re.sub(r"(sqrt)(\[[^\]]*\])(\w)", "\\1\\2{\\3}", final_answer)
    final_answer = re.sub(r"(sqrt)(?!\[)([^{])", "sqrt{\\2}", final_answer)
    final_answer = final_answer.replace("$", "")
    # 100,000 -> 100000 only for true thousands separators (a tuple "0,1" stays)
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+", final_answer):
        final_answer = final_answer.replace(",", "")
    return final_answer


def minerva_gold(solution: str) -> str:
    """The normalised reference answer lm-eval's minerva_math derives from a MATH solution."""
    return normalize_final_answer(remove_boxed(last_boxed_only_string(solution)) or "")


# ---------------------------------------------------------------------------------------------
# Equivalence (main thread of a process only: both libraries use signal.alarm)
# ---------------------------------------------------------------------------------------------


class _Alarm:
    def __init__(self, seconds: int):
        self.seconds = seconds

    def _raise(self, signum, frame):
        raise TimeoutError("minerva is_equiv timed out")

    def __enter__(self):
        self.old = signal.signal(signal.SIGALRM, self._raise)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


def minerva_is_equiv(x1: str, x2: str, timeout_s: int = 5) -> bool:
    """lm-eval's minerva ``is_equiv`` on two normalised answers: identical strings, or sympy's
    ``parse_latex`` of both whose difference simplifies to 0 (any failure is False)."""
    if isinstance(x1, str) and x1 and x1 == x2:
        return True
    import sympy
    from sympy.parsing.latex import parse_latex
    try:
        with _Alarm(timeout_s):
            try:
                diff = parse_latex(x1) - parse_latex(x2)
            except ImportError:
                raise
            except Exception:
                return False
            try:
                return bool(sympy.simplify(diff) == 0)
            except Exception:
                return False
    except TimeoutError:
        return False


def math_verify_equiv(gold_text: str, pred_text: str) -> bool:
    """math-verify's verdict: ``verify(parse(gold_text), parse(pred_text))``."""
    from math_verify import parse, verify
    return bool(verify(gold=parse(gold_text), target=parse(pred_text)))


@dataclass(frozen=True)
class JudgeItem:
    gold_solution: str   # text math-verify extracts the reference from (a solution, or "$\boxed{x}$")
    completion: str      # the model's whole completion
    minerva_pred: str    # normalised predicted answer for exact_match
    minerva_gold: str    # normalised reference answer for exact_match


def judge_one(item: JudgeItem) -> dict:
    """Both verdicts for one item; runs inside a worker process. Errors become 0 with a status."""
    out = {"math_verify": 0.0, "exact_match": 0.0, "status": "ok"}
    try:
        out["math_verify"] = float(math_verify_equiv(item.gold_solution, item.completion))
    except Exception as e:  # noqa: BLE001 -- a parser failure is a wrong answer, not a crash
        out["status"] = f"math_verify error: {type(e).__name__}"
    try:
        out["exact_match"] = float(minerva_is_equiv(item.minerva_pred, item.minerva_gold))
    except ImportError as e:
        out["status"] = f"minerva unavailable: {e}"
    except Exception as e:  # noqa: BLE001
        out["status"] = f"minerva error: {type(e).__name__}"
    return out


# ---------------------------------------------------------------------------------------------
# The worker pool
# ---------------------------------------------------------------------------------------------

_pool: Optional[ProcessPoolExecutor] = None
_pool_lock = threading.Lock()
_GOLD_PARSES: dict = {}


def _parsed_gold(text: str):
    """``parse(text)`` memoised per worker (a GRPO group's G completions share one gold); a parse that
    found nothing (e.g. math-verify's own timeout under load) is not kept."""
    from math_verify import parse
    if text in _GOLD_PARSES:
        return _GOLD_PARSES[text]
    parsed = parse(text)
    if parsed:
        if len(_GOLD_PARSES) >= 4096:
            _GOLD_PARSES.clear()
        _GOLD_PARSES[text] = parsed
    return parsed


def judge_math_verify(item: JudgeItem) -> dict:
    """Only the ``math_verify`` verdict (``exact_match`` is None: not computed), as ``judge_one``
    computes it (``verify(parse(gold), parse(completion))``, the gold's parse memoised). Rewards that
    train on math_verify use it: minerva's sympy check is ~5x slower. Runs inside a worker process."""
    from math_verify import parse, verify
    out = {"math_verify": 0.0, "exact_match": None, "status": "ok"}
    try:
        out["math_verify"] = float(bool(verify(gold=_parsed_gold(item.gold_solution), target=parse(item.completion))))
    except Exception as e:  # noqa: BLE001 -- a parser failure is a wrong answer, not a crash
        out["status"] = f"math_verify error: {type(e).__name__}"
    return out


DEFAULT_TIMEOUT_S = float(os.environ.get("EVALKIT_MATH_TIMEOUT", "60"))


def _worker_init() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    import math_verify  # noqa: F401 -- pay the import once per worker, not per item
    import sympy  # noqa: F401


def _n_workers() -> int:
    env = os.environ.get("EVALKIT_MATH_WORKERS")
    if env:
        return max(1, int(env))
    return max(1, min(4, os.cpu_count() or 1))


def get_pool() -> ProcessPoolExecutor:
    """The shared pool, created on first use (spawned workers import math-verify once)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            import multiprocessing as mp
            _pool = ProcessPoolExecutor(max_workers=_n_workers(), mp_context=mp.get_context("spawn"),
                                        initializer=_worker_init)
        return _pool


def shutdown_pool(kill: bool = False) -> None:
    """Stop the pool; ``kill`` terminates workers at once (a stuck sympy call ignores requests)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is None:
        return
    if kill:
        # ProcessPoolExecutor has no public way to stop a busy worker; terminate its processes.
        for p in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                p.terminate()
            except Exception:  # noqa: BLE001
                pass
    pool.shutdown(wait=not kill, cancel_futures=True)


atexit.register(shutdown_pool, True)


def judge_many(items: Sequence[JudgeItem], timeout_s: float = DEFAULT_TIMEOUT_S, fn=judge_one) -> list[dict]:
    """Judge every item in the worker pool, in order. An item still running ``timeout_s`` after
    the previous one finished scores 0 (status "timeout"); the pool is then rebuilt and the items
    not yet done are resubmitted. ``fn`` (picklable, module level) replaces ``judge_one`` in tests."""
    results: list[Optional[dict]] = [None] * len(items)
    todo = list(range(len(items)))
    while todo:
        pool = get_pool()
        futures = [(i, pool.submit(fn, items[i])) for i in todo]
        todo = []
        for k, (i, fut) in enumerate(futures):
            try:
                results[i] = fut.result(timeout=timeout_s)
            except FutureTimeout:
                log.warning("math equivalence check %d timed out after %.0fs; restarting the workers", i, timeout_s)
                results[i] = {"math_verify": 0.0, "exact_match": 0.0, "status": "timeout"}
                rest = futures[k + 1:]
                for j, f in rest:
                    if f.done() and not f.cancelled() and f.exception() is None:
                        results[j] = f.result()
                    else:
                        todo.append(j)
                shutdown_pool(kill=True)
                break
            except BrokenProcessPool:
                log.warning("math equivalence worker died on item %d; restarting the workers", i)
                results[i] = {"math_verify": 0.0, "exact_match": 0.0, "status": "worker died"}
                todo = [j for j, _ in futures[k + 1:]]
                shutdown_pool(kill=True)
                break
    return results  # type: ignore[return-value]
