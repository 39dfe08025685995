"""Tests for the regression gate: `evalkit compare`, `evalkit gate`, `evalkit power`.

References are independent of the code under test: scipy's binomtest (exact McNemar),
scipy.optimize on the multinomial likelihood (Tango's restricted MLE and score interval by grid
inversion), scipy's false_discovery_control (Benjamini–Hochberg), Holm's closed-testing definition,
brute-force enumeration of sign flips, and Monte Carlo simulation for sizes and powers.
"""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps

from evalkit.cli import main
from evalkit.compare import (IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED, CompareOptions, NotComparable,
                             compare_runs)
from evalkit.compare import paired, power
from evalkit.compare.multiplicity import adjust, benjamini_hochberg, holm
from evalkit.records import write_run
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.task import Sample, content_hash
from _fakes import ScriptedBackend

# ---------------------------------------------------------------------------------------------
# helpers: real run records written with evalkit.records.write_run
# ---------------------------------------------------------------------------------------------


def make_run(results: Path, run_id: str, tasks: dict, model: str = "toy", limit=None, gen=None) -> Path:
    """``tasks``: name -> list of dicts with doc_id, metrics and optional query/response/extra/doc/version."""
    tasks_out, samples = {}, {}
    for name, items in tasks.items():
        rows = []
        for it in items:
            doc = it.get("doc", f"doc-{it['doc_id']}")
            s = Sample(str(it["doc_id"]), content_hash(doc), it.get("prompt", f"Q: {doc}\nA:"),
                       [it.get("response", "")], it.get("target", "t"), dict(it["metrics"]),
                       extracted=it.get("extracted"), extra=dict(it.get("extra", {})))
            rows.append(s.to_dict())
        metric_names = list(rows[0]["metrics"])
        metrics = {}
        for m in metric_names:
            metrics[m] = mean_metric([r["metrics"].get(m) for r in rows]).to_dict()
        tasks_out[name] = {"version": items[0].get("version", "1"), "metrics": metrics, "n_docs": len(rows),
                           "dataset_fingerprint": content_hash(sorted((r["doc_id"], r["doc_hash"]) for r in rows)),
                           "prompt_hash": content_hash([r["prompt_hash"] for r in rows]),
                           "samples_file": f"samples_{name}.jsonl", "config": {"options": {}}}
        samples[name] = rows
    run = {"schema_version": 1, "run_id": run_id, "created_at": "2024-01-01T00:00:00+00:00",
           "model": {"spec": f"hf:{model}", "name": model, "backend": "hf"},
           "config": {"tasks": list(tasks), "limit": limit, "seed": 1234, "gen_overrides": gen or {}},
           "tasks": tasks_out}
    return write_run(results, run, samples)


def binary_items(outcomes, metric="acc", **extra):
    return [{"doc_id": i, "metrics": {metric: float(v)}, **extra} for i, v in enumerate(outcomes)]


def paired_outcomes(n11, n10, n01, n00):
    """Baseline and candidate 0/1 outcomes with the given cell counts (n10: right -> wrong)."""
    base = [1] * n11 + [1] * n10 + [0] * n01 + [0] * n00
    cand = [1] * n11 + [0] * n10 + [1] * n01 + [0] * n00
    return base, cand


# ---------------------------------------------------------------------------------------------
# paired tests
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("b,c", [(0, 0), (5, 0), (10, 3), (3, 10), (40, 20), (7, 7), (120, 95)])
def test_exact_mcnemar_matches_scipy_binomtest(b, c):
    p_reg, p_imp = paired.mcnemar_exact(b, c)
    if b + c == 0:
        assert p_reg == 1.0 and p_imp == 1.0
        return
    assert p_reg == pytest.approx(sps.binomtest(b, b + c, 0.5, alternative="greater").pvalue, rel=1e-12)
    assert p_imp == pytest.approx(sps.binomtest(c, b + c, 0.5, alternative="greater").pvalue, rel=1e-12)
    mid_reg, _ = paired.mcnemar_exact(b, c, mid_p=True)
    assert mid_reg == pytest.approx(p_reg - 0.5 * sps.binom.pmf(b, b + c, 0.5), abs=1e-15)


def _numeric_restricted_mle(b, c, n, d0):
    r = n - b - c

    def nll(x):
        y = x + d0
        return -(b * np.log(max(x, 1e-300)) + c * np.log(max(y, 1e-300)) + r * np.log(max(1 - x - y, 1e-300)))

    res = optimize.minimize_scalar(nll, bounds=(max(0.0, -d0) + 1e-13, (1 - d0) / 2 - 1e-13), method="bounded",
                                   options={"xatol": 1e-13})
    return res.x


@pytest.mark.parametrize("b,c,n,d0", [(10, 5, 100, -0.03), (0, 0, 50, -0.02), (30, 10, 200, 0.05),
                                      (3, 17, 40, -0.1), (40, 20, 160, -0.2), (1, 0, 1319, -0.01)])
def test_tango_restricted_mle_is_the_constrained_optimum(b, c, n, d0):
    pb, pc = paired.tango_restricted_mle(b, c, n, d0)
    assert float(pb) == pytest.approx(_numeric_restricted_mle(b, c, n, d0), abs=1e-7)
    assert float(pc) == pytest.approx(float(pb) + d0, abs=1e-12)


def test_tango_score_reduces_to_mcnemar_z_without_margin():
    for b, c in [(10, 5), (3, 30), (50, 49)]:
        assert float(paired.tango_z(b, c, 500, 0.0)) == pytest.approx((c - b) / math.sqrt(b + c), rel=1e-12)


def _score_z_numeric(b, c, n, d0):
    pb = _numeric_restricted_mle(b, c, n, d0)
    return (c - b - n * d0) / math.sqrt(n * (2 * pb + d0 - d0 * d0))


@pytest.mark.parametrize("b,c,n", [(40, 20, 160), (10, 5, 100), (0, 3, 30)])
def test_tango_interval_inverts_the_score_test(b, c, n):
    lo, hi = paired.tango_interval(b, c, n, alpha=0.025)  # a 95% interval
    z = sps.norm.ppf(0.975)
    # invert an independently computed score statistic: bracket on a grid, then solve
    f = lambda d: abs(_score_z_numeric(b, c, n, d)) - z  # noqa: E731
    grid = np.linspace(-0.995, 0.995, 200)
    inside = np.flatnonzero([f(d) <= 0 for d in grid])
    ref_lo = optimize.brentq(f, grid[inside[0] - 1], grid[inside[0]], xtol=1e-9)
    ref_hi = optimize.brentq(f, grid[inside[-1]], grid[inside[-1] + 1], xtol=1e-9)
    assert lo == pytest.approx(ref_lo, abs=1e-5) and hi == pytest.approx(ref_hi, abs=1e-5)
    assert lo < (c - b) / n < hi


def test_sign_flip_enumerates_all_patterns_when_small():
    sums = np.array([1.0, 2.0, 3.0])
    rng = np.random.default_rng(0)
    # the 8 sign patterns give totals -6..6; only (+,+,+) reaches 6
    assert paired.sign_flip_pvalue(sums, 3, rng, 1000, "greater") == pytest.approx(1 / 8)
    assert paired.sign_flip_pvalue(-sums, 3, rng, 1000, "less") == pytest.approx(1 / 8)
    # observed +1 +2 -3 = 0; the 8 totals are -6, -4, -2, 0, 0, 2, 4, 6: five are <= 0
    assert paired.sign_flip_pvalue(np.array([1.0, 2.0, -3.0]), 3, rng, 1000, "less") == pytest.approx(5 / 8)


# ---------------------------------------------------------------------------------------------
# multiplicity
# ---------------------------------------------------------------------------------------------


def test_holm_matches_closed_testing_definition():
    rng = np.random.default_rng(1)
    for _ in range(200):
        k = rng.integers(1, 8)
        p = rng.uniform(0, 0.2, k) ** rng.uniform(0.5, 2)
        adj = holm(p)
        for alpha in (0.01, 0.05, 0.1):
            order = np.argsort(p)
            reject = np.zeros(k, bool)
            for step, i in enumerate(order):  # step-down: stop at the first non-rejection
                if p[i] <= alpha / (k - step):
                    reject[i] = True
                else:
                    break
            assert np.array_equal(adj <= alpha, reject)
    assert np.allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])


def test_bh_matches_scipy_and_adjust_is_vectorised():
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 0.3, (50, 6))
    ref = np.array([sps.false_discovery_control(row) for row in p])
    assert np.allclose(benjamini_hochberg(p), ref)
    assert np.allclose(adjust(p, "holm"), np.array([holm(row) for row in p]))
    with pytest.raises(ValueError):
        adjust(p, "bonferonni")


# ---------------------------------------------------------------------------------------------
# calibration: false alarms <= alpha on identical models, power >= 0.8 on a 3-point drop (n = 1319)
# ---------------------------------------------------------------------------------------------


def simulate_cells(rng, sims, n, discordance, drop):
    """Counts (b, c) of right->wrong and wrong->right items for i.i.d. paired items."""
    p10, p01 = (discordance + drop) / 2, (discordance - drop) / 2
    cells = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=sims)
    return cells[:, 0], cells[:, 1]


def test_gate_false_alarm_rate_and_power_on_gsm8k_sized_data():
    rng = np.random.default_rng(20240601)
    n, sims, alpha, psi = 1319, 1000, 0.05, 0.12
    b, c = simulate_cells(rng, sims, n, psi, 0.0)
    p_reg, _ = paired.binary_pvalues(b, c, n)
    false_alarm = np.mean(p_reg < alpha)
    b, c = simulate_cells(rng, sims, n, psi, 0.03)
    p_reg, _ = paired.binary_pvalues(b, c, n)
    pw = np.mean(p_reg < alpha)
    assert false_alarm <= alpha
    assert pw >= 0.8
    # 1000 simulations carry a Monte Carlo se of ~0.007: the size with 100x more is also <= alpha
    b, c = simulate_cells(rng, 100_000, n, psi, 0.0)
    assert np.mean(paired.binary_pvalues(b, c, n)[0] < alpha) <= alpha
    assert power.exact_power_binary(n, psi, 0.0, alpha) <= alpha   # the exact size
    # the simulated power agrees with the exact power calculation (Monte Carlo se ~ 0.008)
    assert pw == pytest.approx(power.exact_power_binary(n, psi, 0.03, alpha), abs=0.03)


def test_gate_family_of_three_correlated_metrics_under_holm():
    """gsm8k reports strict / flexible / numeric matches: one family, Holm keeps the FWER <= alpha."""
    rng = np.random.default_rng(7)
    n, sims, alpha = 1319, 1000, 0.05

    def outcomes(drop):
        psi = 0.12
        u = rng.random((sims, n))
        p10, p01 = (psi + drop) / 2, (psi - drop) / 2
        base = (u < 0.45 + p10).astype(np.int8)        # cells: [0,.45) both right, then b, then c
        cand = ((u < 0.45) | ((u >= 0.45 + p10) & (u < 0.45 + p10 + p01))).astype(np.int8)
        fmt_b, fmt_c = rng.random((sims, n)) < 0.9, rng.random((sims, n)) < 0.9   # strict needs the format
        lucky_b, lucky_c = rng.random((sims, n)) < 0.02, rng.random((sims, n)) < 0.02
        metrics = [(base, cand), (base & fmt_b, cand & fmt_c), (base | lucky_b, cand | lucky_c)]
        ps = []
        for mb, mc in metrics:
            bb = np.sum((mb == 1) & (mc == 0), axis=1)
            cc = np.sum((mb == 0) & (mc == 1), axis=1)
            ps.append(paired.binary_pvalues(bb, cc, n)[0])
        return np.stack(ps, axis=1)

    fa = np.mean(np.any(adjust(outcomes(0.0), "holm") < alpha, axis=1))
    pw = np.mean(np.any(adjust(outcomes(0.03), "holm") < alpha, axis=1))
    assert fa <= alpha and pw >= 0.8


def test_clustered_permutation_keeps_its_size_where_naive_mcnemar_does_not():
    """Five samples per item with item-level correlation: a per-row test over-rejects, clusters do not."""
    rng = np.random.default_rng(11)
    sims, items, reps, alpha = 400, 60, 5, 0.05
    naive = clustered = 0
    clusters = np.repeat(np.arange(items), reps)
    for _ in range(sims):
        q = rng.beta(0.3, 0.3, items)                       # item difficulty shared by both models
        wobble = rng.normal(0, 0.25, items)                 # per-item model-independent noise (same law)
        qb = np.clip(np.repeat(q + wobble, reps), 0, 1)
        qc = np.clip(np.repeat(q + rng.normal(0, 0.25, items), reps), 0, 1)
        base = (rng.random(items * reps) < qb).astype(float)
        cand = (rng.random(items * reps) < qc).astype(float)
        naive += paired.paired_binary(base, cand, 0.0, alpha).p_regress < alpha
        res = paired.paired_mean(cand - base, clusters, 0.0, alpha, rng, replicates=400)
        clustered += res.p_regress < alpha
    assert clustered / sims <= alpha + 0.025      # MC tolerance (se ~ 0.011)
    assert naive / sims > clustered / sims + 0.03  # the unclustered test is anti-conservative here


def test_continuous_mean_tests_size_and_power():
    rng = np.random.default_rng(5)
    sims, n, alpha = 300, 150, 0.05
    ids = np.arange(n)
    fa = fa_boot = pw = 0
    for _ in range(sims):
        item = rng.normal(0, 1, n)
        base = item + rng.normal(0, 0.5, n)
        fa += paired.paired_mean(item + rng.normal(0, 0.5, n) - base, ids, 0.0, alpha, rng, 500).p_regress < alpha
        fa_boot += paired.paired_mean(item + rng.normal(0, 0.5, n) - base, ids, 0.05, alpha, rng, 500,
                                      force_bootstrap=True).p_regress < alpha
        pw += paired.paired_mean(item - 0.2 + rng.normal(0, 0.5, n) - base, ids, 0.0, alpha, rng, 500).p_regress < alpha
    assert fa / sims <= alpha + 0.03
    assert fa_boot / sims <= alpha            # with a margin the true delta is inside H0 by 0.05
    assert pw / sims >= 0.8                   # drop 0.2 with sd(diff) ~0.71, n=150: z ~ 3.5


# ---------------------------------------------------------------------------------------------
# power
# ---------------------------------------------------------------------------------------------


def test_power_functions_agree_with_simulation():
    rng = np.random.default_rng(3)
    n, psi = 500, 0.2
    mdd = power.mdd_binary(n, psi, 0.05, 0.8)
    assert power.exact_power_binary(n, psi, mdd, 0.05) == pytest.approx(0.8, abs=1e-6)
    b, c = simulate_cells(rng, 4000, n, psi, mdd)
    assert np.mean(paired.binary_pvalues(b, c, n)[0] < 0.05) == pytest.approx(0.8, abs=0.025)
    # with a margin the score-test approximation is used; check it against simulation of the score test
    m, drop = 0.01, 0.06
    b, c = simulate_cells(rng, 4000, n, psi, drop)
    sim = np.mean(paired.binary_pvalues(b, c, n, margin=m)[0] < 0.05)
    assert sim == pytest.approx(power.power_binary(n, psi, drop, 0.05, m), abs=0.04)
    assert math.isnan(power.mdd_binary(8, 0.5))
    assert power.mdd_binary(1319, 0.12, tests=3) > power.mdd_binary(1319, 0.12)


def test_power_cli(capsys):
    assert main(["power", "--task", "gsm8k", "--n", "1319", "--discordance", "0.12", "--drop", "3"]) == 0
    out = capsys.readouterr().out
    expected = 100 * power.mdd_binary(1319, 0.12)
    assert f"minimum detectable drop {expected:.2f} points" in out and out.startswith("gsm8k:")
    assert "power against a 3-point drop" in out
    assert main(["power", "--n", "10", "--discordance", "1.5"]) == 2


# ---------------------------------------------------------------------------------------------
# alignment and refusal
# ---------------------------------------------------------------------------------------------


def test_refuses_different_data_unless_told(tmp_path):
    base = make_run(tmp_path, "base", {"toy": binary_items([1, 0, 1, 1])})
    items = binary_items([1, 0, 1, 1])
    items[2]["doc"] = "an edited question"
    cand = make_run(tmp_path, "cand", {"toy": items})
    with pytest.raises(NotComparable, match="different data.*1 with different content.*--allow-data-change"):
        compare_runs(base, cand)
    c = compare_runs(base, cand, CompareOptions(allow_data_change=True))
    assert c.rows[0].n == 3 and any("common docs only" in n for n in c.notes)


def test_refuses_different_limits_and_missing_tasks(tmp_path, capsys):
    base = make_run(tmp_path, "base", {"toy": binary_items([1, 0, 1, 1]), "other": binary_items([1])}, limit=4)
    cand = make_run(tmp_path, "cand", {"toy": binary_items([1, 0])}, limit=2)
    with pytest.raises(NotComparable, match="candidate run .* has no task other"):
        compare_runs(base, cand)
    assert main(["compare", str(base), str(cand), "--tasks", "toy"]) == 2
    err = capsys.readouterr().err
    assert "2 docs only in the baseline" in err and "baseline limit 4, candidate limit 2" in err


def test_refuses_prompt_change_unless_told(tmp_path):
    base = make_run(tmp_path, "base", {"toy": binary_items([1, 1, 0])})
    cand = make_run(tmp_path, "cand", {"toy": binary_items([1, 1, 0], prompt="SYSTEM: be brief\nQ")})
    with pytest.raises(NotComparable, match="3 of 3 prompts differ.*--allow-prompt-change"):
        compare_runs(base, cand)
    c = compare_runs(base, cand, CompareOptions(allow_prompt_change=True))
    assert c.rows[0].verdict == NO_CHANGE and "prompts differ" in c.notes[0]
    v2 = binary_items([1, 1, 0], version="2")
    with pytest.raises(NotComparable, match="version differs"):
        compare_runs(base, make_run(tmp_path, "v2", {"toy": v2}))


def test_repeated_rows_align_by_occurrence_and_cluster_by_item(tmp_path):
    # 10 items x 4 repeats (same doc id): the candidate loses items 0-5 entirely
    base_items, cand_items = [], []
    for i in range(10):
        for r in range(4):
            base_items.append({"doc_id": i, "metrics": {"pass": 1.0}, "response": f"b{i}.{r}"})
            cand_items.append({"doc_id": i, "metrics": {"pass": 0.0 if i < 6 else 1.0}, "response": f"c{i}.{r}"})
    base = make_run(tmp_path, "base", {"rep": base_items})
    cand = make_run(tmp_path, "cand", {"rep": cand_items})
    c = compare_runs(base, cand)
    row = c.rows[0]
    assert row.n == 40 and row.n_clusters == 10 and "sign-flip" in row.method and "10 clusters" in row.method
    # with 10 clusters the exact sign-flip p is 1/2^6 (the 6 negative clusters all negative): 2^4/2^10
    assert row.p_regress == pytest.approx(2 ** 4 / 2 ** 10)
    assert row.verdict == REGRESSED
    # a per-row McNemar would have claimed p = 0.5^24
    assert paired.mcnemar_exact(24, 0)[0] < row.p_regress / 1000


# ---------------------------------------------------------------------------------------------
# verdicts, corrections, margins, directions, reports
# ---------------------------------------------------------------------------------------------


def test_regression_verdict_exit_codes_and_reports(tmp_path, capsys):
    base_o, cand_o = paired_outcomes(60, 25, 5, 10)
    base = make_run(tmp_path, "base", {"toy": binary_items(base_o, response="right answer")})
    cand = make_run(tmp_path, "cand", {"toy": binary_items(cand_o, response="wrong answer")})
    c = compare_runs(base, cand)
    r = c.rows[0]
    assert r.verdict == REGRESSED and c.exit_code == 1
    assert r.diff == pytest.approx(-0.20) and r.details["right_to_wrong"] == 25 and r.details["wrong_to_right"] == 5
    assert r.p_regress == pytest.approx(sps.binomtest(25, 30, 0.5, alternative="greater").pvalue)
    assert r.ci_low < -0.2 < r.ci_high < 0
    assert main(["compare", str(base), str(cand), "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert "Regression" in md and "| toy | acc* | 100 | 85.00 | 65.00 | -20.00 pts |" in md
    assert "25 right→wrong, 5 wrong→right" in md and "right → wrong" in md and "wrong answer" in md
    assert "minimum detectable drop" in md
    assert main(["compare", str(base), str(base)]) == 0
    txt = capsys.readouterr().out
    assert "no significant change" in txt and "result: no regression" in txt
    report = tmp_path / "out" / "r.json"
    assert main(["compare", str(base), str(cand), "--format", "json", "--report", str(report)]) == 1
    data = json.loads(report.read_text())
    assert data["regression"] is True and data["exit_code"] == 1 and data["rows"][0]["verdict"] == "regressed"
    assert data["flips"]["toy"]["n_right_to_wrong"] == 25 and len(data["flips"]["toy"]["right_to_wrong"]) == 3
    assert json.loads(capsys.readouterr().out)["rows"][0]["p_regress"] == pytest.approx(r.p_regress)


def test_holm_across_metrics_decides_the_exit_code(tmp_path):
    # metric a: b=9, c=1 -> exact p = 0.0107 (significant alone); 4 more null metrics -> Holm x5 = 0.054
    base_o, cand_o = paired_outcomes(50, 9, 1, 40)
    rng = np.random.default_rng(0)
    base_items, cand_items = [], []
    for i, (x, y) in enumerate(zip(base_o, cand_o)):
        same = {f"m{k}": float(rng.integers(0, 2)) for k in range(4)}
        base_items.append({"doc_id": i, "metrics": {"a": float(x), **same}})
        cand_items.append({"doc_id": i, "metrics": {"a": float(y), **same}})
    base = make_run(tmp_path, "base", {"toy": base_items})
    cand = make_run(tmp_path, "cand", {"toy": cand_items})
    c = compare_runs(base, cand)
    a = next(r for r in c.rows if r.metric == "a")
    assert a.p_regress == pytest.approx(11 / 1024) and a.p_regress_adj == pytest.approx(55 / 1024)
    assert a.verdict == NO_CHANGE and c.exit_code == 0 and c.n_primary == 5
    assert compare_runs(base, cand, CompareOptions(correction="none")).exit_code == 1
    assert compare_runs(base, cand, CompareOptions(primary=["toy:a"])).exit_code == 1
    with pytest.raises(NotComparable, match="matches no task:metric"):
        compare_runs(base, cand, CompareOptions(primary=["toy:acc"]))


def test_margin_turns_a_small_significant_drop_into_no_regression(tmp_path):
    # 2000 items, drop 2 points with discordance 6%: significant at margin 0
    base_o, cand_o = paired_outcomes(1200, 80, 40, 680)
    base = make_run(tmp_path, "base", {"toy": binary_items(base_o)})
    cand = make_run(tmp_path, "cand", {"toy": binary_items(cand_o)})
    assert compare_runs(base, cand).rows[0].verdict == REGRESSED
    r = compare_runs(base, cand, CompareOptions(margin=2.5)).rows[0]     # tolerate 2.5 points
    assert r.verdict == INCONCLUSIVE and "Tango" in r.method   # the 90% CI reaches below -2.5 pts
    r = compare_runs(base, cand, CompareOptions(margins={"toy": 6.0})).rows[0]
    assert r.verdict == NO_CHANGE and r.margin == pytest.approx(0.06)  # non-inferiority shown at 6 points
    r = compare_runs(base, cand, CompareOptions(margins={"toy:acc": 0.5})).rows[0]
    assert r.verdict == REGRESSED and r.p_regress < 0.05


def test_improvement_and_lower_is_better_direction(tmp_path):
    base_o, cand_o = paired_outcomes(30, 2, 20, 48)
    base = make_run(tmp_path, "base", {"toy": binary_items(base_o)})
    cand = make_run(tmp_path, "cand", {"toy": binary_items(cand_o)})
    assert compare_runs(base, cand).rows[0].verdict == IMPROVED
    # the same flips on an error-rate metric (lower is better) are a regression
    for path in (base, cand):
        run = json.loads((path / "run.json").read_text())
        run["tasks"]["toy"]["metrics"]["acc"]["higher_is_better"] = False
        (path / "run.json").write_text(json.dumps(run))
    c = compare_runs(base, cand)
    assert c.rows[0].verdict == REGRESSED and c.flips["toy"]["n_right_to_wrong"] == 20


def test_default_primary_metrics_are_binary_and_corpus(tmp_path):
    rng = np.random.default_rng(4)
    items_b, items_c = [], []
    for i in range(60):
        items_b.append({"doc_id": i, "metrics": {"acc": float(i % 2), "score": float(rng.normal())}})
        items_c.append({"doc_id": i, "metrics": {"acc": float(i % 2), "score": float(rng.normal()) - 3.0}})
    base = make_run(tmp_path, "base", {"toy": items_b})
    cand = make_run(tmp_path, "cand", {"toy": items_c})
    c = compare_runs(base, cand)
    score = next(r for r in c.rows if r.metric == "score")
    assert not score.primary and score.verdict == REGRESSED and c.exit_code == 0   # secondary: reported only
    assert compare_runs(base, cand, CompareOptions(primary=["score"])).exit_code == 1


def _wikitext_items(scale):
    rng = np.random.default_rng(9)
    items = []
    for i in range(40):
        words, nbytes = int(rng.integers(50, 200)), 0
        nbytes = words * 6
        ll = -words * (3.0 + 0.3 * rng.random()) * scale
        items.append({"doc_id": i, "metrics": {}, "extra": {"loglikelihood": ll, "words": words, "bytes": nbytes}})
    return items


def test_corpus_metrics_are_recomputed_through_the_task_class(tmp_path):
    base_items, cand_items = _wikitext_items(1.0), _wikitext_items(1.05)   # candidate: 5% worse loglik
    runs = {}
    for name, items in (("base", base_items), ("cand", cand_items)):
        p = make_run(tmp_path, name, {"wikitext": [dict(it, metrics={"dummy": 0.0}) for it in items]})
        run = json.loads((p / "run.json").read_text())
        run["tasks"]["wikitext"]["metrics"] = {m: {"value": None, "kind": "corpus", "higher_is_better": False}
                                               for m in ("word_perplexity", "bits_per_byte")}
        (p / "run.json").write_text(json.dumps(run))
        runs[name] = p
    c = compare_runs(runs["base"], runs["cand"], CompareOptions(corpus_replicates=300))
    wp = next(r for r in c.rows if r.metric == "word_perplexity")
    exp_b = math.exp(-sum(i["extra"]["loglikelihood"] for i in base_items) / sum(i["extra"]["words"] for i in base_items))
    exp_c = math.exp(-sum(i["extra"]["loglikelihood"] for i in cand_items) / sum(i["extra"]["words"] for i in cand_items))
    assert wp.baseline == pytest.approx(exp_b) and wp.candidate == pytest.approx(exp_c) and wp.diff > 0
    assert wp.primary and wp.kind == "corpus" and wp.scale == 1.0 and wp.verdict == REGRESSED
    assert wp.ci_low > 0      # the interval is on candidate - baseline: perplexity went up
    same = compare_runs(runs["base"], runs["base"], CompareOptions(corpus_replicates=100))
    assert all(r.verdict == NO_CHANGE for r in same.rows)


def test_gpqa_items_are_never_printed(tmp_path, capsys):
    base_o, cand_o = paired_outcomes(5, 10, 0, 5)
    secret = "SECRET-QUESTION-TEXT"
    base = make_run(tmp_path, "base", {"gpqa_main": binary_items(base_o, prompt=secret, response=secret)})
    cand = make_run(tmp_path, "cand", {"gpqa_main": binary_items(cand_o, prompt=secret, response=secret)})
    for fmt in ("text", "markdown", "json"):
        assert main(["compare", str(base), str(cand), "--format", fmt]) == 1
        out = capsys.readouterr().out
        assert secret not in out and "regressed" in out


# ---------------------------------------------------------------------------------------------
# the gate, with a fake backend (fast) and with the real tiny model (slow)
# ---------------------------------------------------------------------------------------------

COPY_TASK = textwrap.dedent('''
    """Copy three digits: a task the 135M model gets right, for gate end-to-end tests."""
    from evalkit.taskapi.data import DataSource, require
    from evalkit.taskapi.requests import GenParams
    from evalkit.taskapi.task import Doc, GenerationTask, Sample, register_task


    @register_task
    class CopyDigits(GenerationTask):
        name = "copy_digits"
        dataset = DataSource(local_files={"test": ["test.jsonl"]})
        instruction = ("Copy the digits.\\nInput: 4 9 2\\nOutput: 4 9 2\\n\\nInput: 8 1 6\\nOutput: 8 1 6\\n\\n"
                       "Input: 3 3 7\\nOutput: 3 3 7\\n\\n")
        gen_params = GenParams(max_tokens=12, temperature=0.0, stop=("\\n",))

        def record_to_doc(self, record, index):
            return Doc(id=str(index), query=f"Input: {require(record, 'digits')}\\nOutput:", target=record["digits"])

        def score(self, doc, responses, ctx):
            pred = responses[0][0].text.strip().split("\\n")[0].strip()
            return Sample(doc.id, doc.hash(), self.prompt_of(doc, ctx), [c.text for c in responses[0]], doc.target,
                          {"exact_match": float(pred == doc.target)}, extracted=pred)
''')


@pytest.fixture
def copy_task(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "copy_digits.py").write_text(COPY_TASK)
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    with open(data / "test.jsonl", "w") as f:
        for _ in range(40):
            f.write(json.dumps({"digits": " ".join(str(d) for d in rng.integers(0, 10, 3))}) + "\n")
    return tasks, data


def _copy_digits(r, broken: bool) -> str:
    digits = r.prompt.rsplit("Input: ", 1)[1].split("\n")[0]
    return " " + (digits[:1] if broken or r.params.max_tokens < 3 else digits)


def fake_backend(spec: str) -> ScriptedBackend:
    """Copies the digits of the last "Input:" line; ``broken`` answers with the first digit only."""
    return ScriptedBackend(lambda r: _copy_digits(r, "broken" in spec), name="fake",
                           identity={"backend": "fake", "model": spec})


def test_gate_with_pinned_baseline_fake_backend(tmp_path, copy_task, monkeypatch, capsys):
    tasks, data = copy_task
    made = []

    def fake_make_backend(spec, model_args=None, **extra):
        made.append(fake_backend(spec))
        return made[-1]

    import evalkit.cli.gate as gate_mod
    import evalkit.cli.run as run_mod
    monkeypatch.setattr(gate_mod, "make_backend", fake_make_backend)
    monkeypatch.setattr(run_mod, "make_backend", fake_make_backend)
    results, cache = tmp_path / "results", tmp_path / "cache"
    assert main(["run", "--model", "hf:fake-good", "--tasks", "copy_digits", "--include-path", str(tasks),
                 "--data", f"copy_digits={data}", "--limit", "30", "--output", str(results),
                 "--cache-dir", str(cache)]) == 0
    baseline = next(results.iterdir())
    capsys.readouterr()
    cfg = tmp_path / "gate.toml"
    cfg.write_text(textwrap.dedent(f'''
        baseline = "{baseline}"
        include_path = ["tasks"]
        output = "gate-results"
        cache_dir = "cache"

        [compare]
        alpha = 0.05
        format = "markdown"
        report = "gate-report.md"
    '''))
    # same model: every request comes from the cache, no regression
    assert main(["gate", "--config", str(cfg), "--candidate", "hf:fake-good"]) == 0
    assert made[-1].requests == []
    captured = capsys.readouterr()
    assert "30 from cache, 0 computed" in captured.err and "No regression" in captured.out
    assert (tmp_path / "gate-report.md").read_text().startswith("### evalkit compare")
    cand_run = json.loads(next((tmp_path / "gate-results").glob("*/run.json")).read_text())
    assert cand_run["config"]["limit"] == 30 and cand_run["config"]["seed"] == 1234
    assert cand_run["tasks"]["copy_digits"]["data_source"] == str(data)
    # a broken candidate regresses: exit 1, flips shown
    assert main(["gate", "--config", str(cfg), "--candidate", "hf:fake-broken", "--format", "text"]) == 1
    out = capsys.readouterr().out
    assert "regressed" in out and "30 right->wrong" in out and "REGRESSION" in out
    # candidate generation overrides from the config change what is gated
    cfg2 = tmp_path / "gate2.toml"
    cfg2.write_text(cfg.read_text().replace("[compare]", "[candidate]\ngen_kwargs = {max_tokens = 2}\n\n[compare]"))
    assert main(["gate", "--config", str(cfg2), "--candidate", "hf:fake-good"]) == 1
    capsys.readouterr()
    newest = max((json.loads(p.read_text()) for p in (tmp_path / "gate-results").glob("*/run.json")),
                 key=lambda r: r["created_at"])  # to the microsecond (file mtimes can tie)
    assert newest["config"]["gen_overrides"] == {"max_tokens": 2}  # not scrubbed as a secret
    # errors exit 2: unknown key, limit that differs from the pinned record
    bad = tmp_path / "bad.toml"
    bad.write_text(f'baseline = "{baseline}"\nlimt = 3\n')
    assert main(["gate", "--config", str(bad), "--candidate", "hf:fake-good"]) == 2
    bad.write_text(f'baseline = "{baseline}"\nlimit = 10\ninclude_path = ["tasks"]\n')
    assert main(["gate", "--config", str(bad), "--candidate", "hf:fake-good"]) == 2
    assert "differs from the baseline record" in capsys.readouterr().err
    before = len(made)
    bad.write_text(f'baseline = "{baseline}"\ninclude_path = ["tasks"]\n[compare]\nmargn = 1.0\n')
    assert main(["gate", "--config", str(bad), "--candidate", "hf:fake-good"]) == 2
    assert "unknown compare option(s) margn" in capsys.readouterr().err and len(made) == before  # no model loaded


def test_gate_with_baseline_model_reruns_it_from_cache(tmp_path, copy_task, monkeypatch, capsys):
    tasks, data = copy_task
    made = []
    import evalkit.cli.gate as gate_mod
    monkeypatch.setattr(gate_mod, "make_backend",
                        lambda spec, model_args=None, **kw: made.append(fake_backend(spec)) or made[-1])
    cfg = tmp_path / "gate.toml"
    cfg.write_text(textwrap.dedent(f'''
        baseline_model = "hf:fake-good"
        tasks = ["copy_digits"]
        limit = 20
        include_path = ["{tasks}"]
        output = "results"
        cache_dir = "cache"
        [data]
        copy_digits = "{data}"
    '''))
    assert main(["gate", "--config", str(cfg), "--candidate", "hf:fake-broken"]) == 1
    assert [len(b.requests) for b in made] == [20, 20]
    made.clear()
    assert main(["gate", "--config", str(cfg), "--candidate", "hf:fake-broken"]) == 1
    assert [len(b.requests) for b in made] == [0, 0]     # the unchanged baseline (and candidate) come from the cache
    capsys.readouterr()


@pytest.mark.slow
def test_end_to_end_tiny_model_gate(tmp_path, copy_task, tiny_model_dir, capsys):
    """Greedy tiny model vs the same model with max_tokens=1: the gate exits 1 with a readable report;
    the same model against its own record exits 0 without recomputing anything."""
    tasks, data = copy_task
    results, cache = tmp_path / "results", tmp_path / "cache"
    model = f"hf:{tiny_model_dir}"
    assert main(["run", "--model", model, "--tasks", "copy_digits", "--include-path", str(tasks),
                 "--data", f"copy_digits={data}", "--limit", "16", "--output", str(results),
                 "--cache-dir", str(cache)]) == 0
    baseline = next(results.iterdir())
    base_acc = json.loads((baseline / "run.json").read_text())["tasks"]["copy_digits"]["metrics"]["exact_match"]["value"]
    assert base_acc >= 0.75, "the tiny model should copy three digits"
    capsys.readouterr()
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'baseline = "{baseline}"\ninclude_path = ["{tasks}"]\noutput = "gate-results"\n'
                   f'cache_dir = "cache"\n')
    assert main(["gate", "--config", str(cfg), "--candidate", model, "--gen-kwargs", "max_tokens=1",
                 "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert "❌ **Regression**" in md and "right→wrong" in md and "exact_match*" in md
    damaged = next((tmp_path / "gate-results").iterdir())
    assert json.loads((damaged / "run.json").read_text())["config"]["gen_overrides"] == {"max_tokens": 1}
    assert main(["gate", "--config", str(cfg), "--candidate", model]) == 0
    captured = capsys.readouterr()
    assert ", 0 computed" in captured.err
    assert "result: no regression" in captured.out
    assert main(["compare", str(baseline), str(damaged), "--include-path", str(tasks)]) == 1
    assert main(["compare", str(baseline), str(baseline)]) == 0


def test_translation_corpus_metrics_resampled_from_sacrebleu_statistics(tmp_path):
    """wmt tasks aggregate BLEU/chrF/TER from per-segment sufficient statistics, not corpus_metrics."""
    pytest.importorskip("sacrebleu")
    from evalkit.taskapi import registry
    from evalkit.taskapi.requests import Completion
    from evalkit.taskapi.task import Doc, RunContext
    task = registry.get_task_class("wmt16_de_en")()
    refs = [f"the {w} house is very {a} today" for w in ("red", "old", "new", "big", "small", "blue", "green", "tall")
            for a in ("nice", "quiet", "cold")]
    ctx = RunContext()
    records = {}
    for name, hyp in (("base", lambda r: r), ("cand", lambda r: " ".join(reversed(r.split()[:3])))):
        rows = []
        for i, ref in enumerate(refs):
            doc = Doc(id=str(i), query=f"das Haus {i}", target=[ref], fewshot_target=ref)
            rows.append(task.score(doc, [[Completion(hyp(ref), "stop")]], ctx).to_dict())
        samples = [Sample.from_dict(r) for r in rows]
        metrics = {k: v.to_dict() for k, v in task.aggregate(samples, 1234).items()}
        run = {"schema_version": 1, "run_id": name, "model": {"name": name}, "config": {"limit": None},
               "tasks": {"wmt16_de_en": {"version": task.version, "metrics": metrics, "config": {"options": {}},
                                         "samples_file": "samples_wmt16_de_en.jsonl"}}}
        records[name] = write_run(tmp_path, run, {"wmt16_de_en": rows})
    c = compare_runs(records["base"], records["cand"], CompareOptions(corpus_replicates=200))
    bleu = next(r for r in c.rows if r.metric == "bleu")
    ter = next(r for r in c.rows if r.metric == "ter")
    assert bleu.baseline == pytest.approx(100.0) and bleu.candidate < 10 and bleu.scale == 1.0
    assert bleu.primary and bleu.verdict == REGRESSED and ter.verdict == REGRESSED and ter.diff > 0
    assert bleu.baseline == pytest.approx(json.loads((records["base"] / "run.json").read_text())
                                          ["tasks"]["wmt16_de_en"]["metrics"]["bleu"]["value"])
    assert c.exit_code == 1


def test_corpus_metric_that_cannot_be_recomputed_is_reported_not_hidden(tmp_path):
    paths = []
    for name in ("base", "cand"):
        p = make_run(tmp_path, name, {"gsm8k": binary_items([1, 0, 1], metric="exact_match_strict")})
        run = json.loads((p / "run.json").read_text())
        run["tasks"]["gsm8k"]["metrics"]["mystery"] = {"value": 0.5, "kind": "corpus", "higher_is_better": True}
        (p / "run.json").write_text(json.dumps(run))
        paths.append(p)
    c = compare_runs(*paths)
    row = next(r for r in c.rows if r.metric == "mystery")
    assert row.method == "not recomputable" and not row.primary and row.verdict == INCONCLUSIVE
    assert any("mystery" in n and "not tested" in n for n in c.notes) and c.n_primary == 1
    with pytest.raises(NotComparable, match="no way to recompute corpus metric 'mystery'"):
        compare_runs(*paths, CompareOptions(primary=["gsm8k:mystery"]))
