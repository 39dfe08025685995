"""K samples per problem (``--repeats K`` / ``--gen-kwargs n=K``): one request per sample, seeded
by the run seed, the item and the sample index (``evalkit.run.repeats_split``), so a cached rerun
with a larger K generates only the new samples, and the samples never depend on --limit or batch
size; ``--repeats`` and ``n=`` mean the same; ``evalkit compare`` pairs two repeat runs by problem."""
from __future__ import annotations

import pytest

from evalkit.cli.run import build_config
from evalkit.cli import build_parser
from evalkit.run import repeats_split
from evalkit.run.cache import NullCache, ResponseCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
from evalkit.taskapi.requests import Completion, GenerateRequest, GenParams

from conftest import shared
from _fakes import ScriptedBackend

AIME = {"aime24": str(shared("aime", "qwq"))}


def _by_seed(r) -> str:
    assert r.params.n == 1, "the engine sends one sample per request"
    # right (204 is aime24's first answer) for 2 seeds in 3, else a wrong number
    return f"so \\boxed{{{204 if r.params.seed % 3 else 7}}}"


def seeded(chunk_size=64) -> ScriptedBackend:
    """A sampler whose answer is a function of the request's seed; keeps what reaches it."""
    return ScriptedBackend(_by_seed, (0.0, True), name="seeded", chunk_size=chunk_size)


def run(backend, cache, k, limit=3, output=None, **kw):
    cfg = RunConfig(tasks=["aime24"], limit=limit, data_paths=AIME, gen_overrides={"n": k, "max_tokens": 64}, **kw)
    return evaluate(backend, cfg, cache, output_dir=output, progress=False)


def test_split_keeps_sample_zero_and_derives_the_others():
    req = GenerateRequest(prompt="p", params=GenParams(temperature=0.6, n=3, seed=11))
    flat, groups = repeats_split.split([req, GenerateRequest(prompt="q")])
    assert [r.params.n for r in flat] == [1, 1, 1, 1]
    assert flat[0].params.seed == 11, "sample 0 is the request a run without repeats makes"
    assert flat[0].key() == GenerateRequest(prompt="p", params=GenParams(temperature=0.6, seed=11)).key()
    assert len({r.params.seed for r in flat[:3]}) == 3
    assert groups == {req.key(): [r.key() for r in flat[:3]]}
    answers = {r.key(): [Completion(str(i), "stop")] for i, r in enumerate(flat)}
    assert [c.text for c in repeats_split.join(answers, groups)[req.key()]] == ["0", "1", "2"]


def test_larger_k_generates_only_the_new_samples(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = seeded()
    r4 = run(first, cache, 4)
    assert len(first.requests) == 12 and r4.engine["computed"] == 12
    second = seeded()
    r8 = run(second, cache, 8)
    assert len(second.requests) == 12, "K=8 after K=4: only samples 4..7 of each problem reach the backend"
    assert r8.engine["cached"] == 12 and r8.engine["computed"] == 12
    rows4, rows8 = r4.samples["aime24"], r8.samples["aime24"]
    assert all(a["responses"] == b["responses"][:4] for a, b in zip(rows4, rows8))
    third = seeded()
    run(third, cache, 8)
    assert third.requests == [], "a rerun with the same K is all cached"


def test_samples_do_not_depend_on_limit_or_batch_size():
    a = run(seeded(chunk_size=1), NullCache(), 4, limit=2).samples["aime24"]
    b = run(seeded(chunk_size=64), NullCache(), 4, limit=3).samples["aime24"]
    assert [r["responses"] for r in a] == [r["responses"] for r in b[:2]]
    c = run(seeded(), NullCache(), 4, limit=2, seed=99).samples["aime24"]
    assert [r["responses"] for r in a] != [r["responses"] for r in c], "the run seed changes the samples"


def test_repeats_flag_is_n_and_disagreement_is_one_line():
    p = build_parser()
    base = ["run", "--model", "hf:x", "--tasks", "aime24"]
    assert build_config(p.parse_args(base + ["--repeats", "8"])).gen_overrides["n"] == 8
    assert build_config(p.parse_args(base + ["--gen-kwargs", "n=8"])).gen_overrides["n"] == 8
    assert build_config(p.parse_args(base + ["--repeats", "8", "--gen-kwargs", "n=8"])).gen_overrides["n"] == 8
    with pytest.raises(ValueError, match=r"^--repeats 4 and n=8 .*disagree") as e:
        build_config(p.parse_args(base + ["--repeats", "4", "--gen-kwargs", "n=8"]))
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"--repeats 0: expected an integer from 1 to 10,000"):
        build_config(p.parse_args(base + ["--repeats", "0"]))


def test_greedy_repeats_are_refused_naming_the_field():
    cfg = RunConfig(tasks=["aime24_greedy"], limit=1, data_paths={"aime24_greedy": AIME["aime24"]},
                    gen_overrides={"n": 4})
    with pytest.raises(ValueError, match=r"aime24_greedy: n=4 .*temperature > 0"):
        evaluate(seeded(), cfg, NullCache(), output_dir=None, progress=False)


def test_compare_pairs_repeat_runs_by_problem(tmp_path):
    from evalkit.compare.analysis import compare_runs
    cache = ResponseCache(tmp_path / "c.sqlite")
    a = run(seeded(), cache, 4, output=str(tmp_path / "a"))
    b = run(seeded(), cache, 8, output=str(tmp_path / "b"))
    cmp = compare_runs(a.path, b.path)
    rows = {r.metric: r for r in cmp.rows}
    m = rows["exact_match"]  # the mean over each problem's samples, paired problem by problem
    assert m.n == 3 and m.n_clusters == 3
    base = [r["metrics"]["exact_match"] for r in a.samples["aime24"]]
    cand = [r["metrics"]["exact_match"] for r in b.samples["aime24"]]
    assert m.diff == pytest.approx(sum(cand) / 3 - sum(base) / 3)
    assert rows["pass@2"].n == 3  # unbiased at any K: comparable between K=4 and K=8
    # the primary test is the mean verdict over problems, never a figure that happens to be 0/1 per problem
    assert [r.metric for r in cmp.rows if r.primary] == ["exact_match"]
