"""Macro averages (MMLU's mean over subjects) are compared like corpus metrics: the paired
bootstrap recomputes the task's own macro figure on resampled questions, so the step summary shows
a verdict with n and an interval, never "n 0, inconclusive"."""
from __future__ import annotations

import pytest

from evalkit.compare.analysis import CompareOptions, compare_runs
from evalkit.run.cache import NullCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
from _fakes import ScriptedBackend, hashed_logprob


def hashing(salt: str) -> ScriptedBackend:
    """Loglikelihoods from a salted hash: two salts are two different 'models'."""
    return ScriptedBackend(loglikelihood=lambda r: hashed_logprob(r, salt), name="hashing",
                           identity={"model": f"hashing-{salt}"})


def test_macro_rows_get_a_paired_verdict(tmp_path, shared_data):
    config = RunConfig(tasks=["mmlu"], limit=130, data_paths={"mmlu": str(shared_data / "mmlu")})
    runs = [evaluate(hashing(salt), config, NullCache(), str(tmp_path / salt), progress=False).path
            for salt in ("a", "b")]
    c = compare_runs(runs[0], runs[1], CompareOptions(corpus_replicates=200))
    rows = {r.metric: r for r in c.rows if r.task == "mmlu"}
    macro = rows["acc_macro"]
    assert macro.method != "no paired values" and macro.ci_low is not None and macro.p_regress is not None
    from evalkit.records import load_run
    base, cand = load_run(runs[0]).metrics("mmlu"), load_run(runs[1]).metrics("mmlu")
    assert macro.baseline == pytest.approx(base["acc_macro"].value)        # the task's own macro figure
    assert macro.candidate == pytest.approx(cand["acc_macro"].value)
    assert macro.ci_low <= macro.diff <= macro.ci_high and macro.n == 130 and macro.verdict
