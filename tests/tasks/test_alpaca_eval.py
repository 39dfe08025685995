"""AlpacaEval 2 against alpaca-eval 0.6.6's own code, run on the same judge replies: the annotator
prompts byte for byte (the config files, ``make_prompts``, ``prompt_to_chatml``, the seeded order
switch, all through upstream's ``SinglePairwiseAnnotator``), the verdicts (``ranking_parser``; the
clf annotator's ``logprob_parser`` on the judge's first token), the win rate (``get_winrate``) and
the length-controlled win rate (``get_length_controlled_winrate``: ``length_controlled_minimal``,
``_noreg`` and ``_v1``, its hub file ``df_gamed.csv`` replaced by a synthetic one), then the real CLI
with a scripted model and judge (``--limit 10``).

alpaca-eval's package ``__init__`` imports its CLI's dependencies (fire, openai, dotenv): its modules
are loaded under a bare parent package instead, the only change to how upstream's code runs.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _scripted_judge import ScriptedServer
from evalkit.taskapi.data import DataError
from evalkit.taskapi.items import Doc
from evalkit.tasks.judged import alpaca_eval as ae
from evalkit.tasks.judged import alpaca_lc as lc


def _upstream() -> types.SimpleNamespace:
    spec = importlib.util.find_spec("alpaca_eval")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("alpaca-eval is not installed (pip install --no-deps alpaca-eval==0.6.6: scripts/install.sh)")
    if "alpaca_eval" not in sys.modules:
        pkg = types.ModuleType("alpaca_eval")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["alpaca_eval"] = pkg
    if importlib.util.find_spec("pkg_resources") is None:  # alpaca_eval.utils imports it (setuptools >= 81: gone)
        sys.modules["pkg_resources"] = types.ModuleType("pkg_resources")
    from alpaca_eval import completion_parsers, utils
    from alpaca_eval.annotators import pairwise_evaluator
    from alpaca_eval.metrics import glm_winrate, winrate
    root = Path(spec.submodule_search_locations[0])
    return types.SimpleNamespace(utils=utils, parsers=completion_parsers, glm=glm_winrate, winrate=winrate,
                                 Annotator=pairwise_evaluator.SinglePairwiseAnnotator, configs=root / "evaluators_configs")


up = _upstream()
# upstream's fit under scikit-learn >= 1.8 (its penalty="l1" is deprecated there) and on tiny data
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore:Liblinear failed to converge")
CLF = ("alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt", "clf")
RANKING = ("claude_3_opus_ranking/ranking_prompt.txt", "ranking")
RANKING_HEAD = "I want you to create a leaderboard"


def judge_reply(messages: list) -> str:
    """A scripted judge: its verdict from a hash of the prompt (so the same prompt, the same verdict)."""
    text = messages[-1]["content"]
    h = hashlib.sha256(text.encode()).digest()
    if text.startswith(RANKING_HEAD):
        if h[0] % 6 == 0:
            return "I cannot rank these."
        r = 1 + h[1] % 2
        return str([{"model": "model_1", "rank": r}, {"model": "model_2", "rank": 3 - r}])
    return ["Both outputs are fine.", "m", "m", "M", "M", "M\n\nOutput M is more complete."][h[0] % 6]


def answer(instruction: str) -> str:
    """A scripted model: answers of varied lengths."""
    h = hashlib.sha256(instruction.encode()).digest()
    return f"Scripted answer to {instruction[:30]!r}." + " More detail." * (h[0] % 40)


def script(messages: list) -> str:
    last = messages[-1]["content"]
    if messages[0]["content"].startswith("You are a highly efficient assistant") or last.startswith(RANKING_HEAD):
        return judge_reply(messages)
    return answer(last)


def upstream_annotate(rows: list, annotator=CLF, reply=judge_reply):
    """Upstream's ``SinglePairwiseAnnotator`` (annotator seed 0, as ``PairwiseAnnotator`` passes it) on
    ``(instruction, baseline, model)`` rows: ({instruction: preference}, the judge's chats). The clf
    annotator's logprobs are the judge's first token, as a greedy judge gives it."""
    chats = []

    def completions(prompts, **kw):
        replies = []
        for p in prompts:
            msgs = up.utils.prompt_to_chatml(p)
            chats.append(tuple((m["role"], m["content"]) for m in msgs))
            replies.append(reply(msgs))
        logprobs = [{"logprobs": {"content": [{"top_logprobs": [{"token": (r.split() or [""])[0], "logprob": -0.01}]}]}}
                    for r in replies]
        return {"completions": replies, "completions_all": logprobs}

    kw = (dict(fn_completion_parser="logprob_parser", completion_key="completions_all",
               completion_parser_kwargs=dict(numerator_token="m", denominator_tokens=["m", "M"], is_binarize=True))
          if annotator is CLF else dict(fn_completion_parser="ranking_parser"))
    ann = up.Annotator(prompt_template=annotator[0], base_dir=up.configs, fn_completions=completions, seed=0,
                       annotation_column="preference", packages_for_which_to_show_version=None, **kw)
    df = pd.DataFrame(rows, columns=["instruction", "output_1", "output_2"])
    out = ann(df)
    return dict(zip(out["instruction"], out["preference"].astype(float))), chats


@pytest.fixture(scope="module")
def docs():
    return ae.AlpacaEval(glm="length_controlled_minimal").eval_docs()


def write_gamed(path: Path, n: int = 60, seed: int = 7) -> Path:
    """A synthetic ``df_gamed.csv``: two length-gamed baselines on instructions 0..n-1."""
    rng = np.random.default_rng(seed)
    diff = rng.normal(size=n)
    rows = [dict(model=m, index=i, preference=float(1 / (1 + np.exp(np.tanh(s) - diff[i]))), std_delta_len=s,
                 instruction_difficulty=diff[i], not_gamed_baseline=False)
            for m in ("gamed_a", "gamed_b") for i in range(n) for s in [float(rng.normal())]]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def annotations(prefs, len_base, len_model) -> list:
    return [dict(instruction=f"q{i}", output_1="b" * int(a), output_2="x" * int(b), generator_1="base",
                 generator_2="model", annotator="judge", preference=p)
            for i, (p, a, b) in enumerate(zip(prefs, len_base, len_model))]


# ---- the prompts, the order and the verdicts -----------------------------------------------------

def test_the_annotator_prompts_are_upstreams_files_byte_for_byte():
    assert ae.CLF_TEMPLATE == (up.configs / CLF[0]).read_text(encoding="utf-8")
    assert ae.RANKING_TEMPLATE == (up.configs / RANKING[0]).read_text(encoding="utf-8")


@pytest.mark.parametrize("annotator", [CLF, RANKING], ids=lambda a: a[1])
def test_the_judge_sees_upstreams_chats_in_upstreams_order(docs, annotator):
    picked = docs[:40] + [Doc(id="x", query='Use {output_1} and {"a": 1} """here"""', meta={"baseline": "{output_2}"})]
    metric = ae.AlpacaPreference(annotator[1])
    ours = {d.query: metric.asks(d, answer(d.query)) for d in picked}
    _, chats = upstream_annotate([(d.query, d.meta["baseline"], answer(d.query)) for d in picked], annotator)
    assert sorted(a.messages for asks in ours.values() for a in asks) == sorted(chats)
    tags = [a.tag for asks in ours.values() for a in asks]
    assert 5 < tags.count("model_first") < 35  # upstream's seeded switch puts the model first about half the time
    both = ae.AlpacaPreference(annotator[1], order="both").asks(picked[0], "an answer")
    assert [a.tag for a in both] == ["baseline_first", "model_first"]
    first = up.utils.make_prompts(pd.DataFrame([dict(instruction=picked[0].query, output_1="an answer",
                                                     output_2=picked[0].meta["baseline"])]),
                                  (up.configs / annotator[0]).read_text())[0][0]
    assert both[1].messages == tuple((m["role"], m["content"]) for m in up.utils.prompt_to_chatml(first))


REPLIES = ["m", "M", " M", "\nm", "M.", "m\n\nbecause", "Model M", "MM", "m_1", "Both", "", "M is better",
           "[{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}]",
           "[{'model': 'model_2', 'rank': 1}, {'model': 'model_1', 'rank': 2}]",
           "[{'model': 'model_1', 'rank': 3}]", "[{'model': 'model_1', 'rank': 2.0}]", "{'model': 'model_1'}",
           "```python\n[{'model': 'model_1', 'rank': 1}]\n```", "[{'model': 'model_1', 'rank': True}]", "rank 1"]


def test_verdicts_are_read_as_upstreams_parsers_read_them():
    for text in REPLIES:
        try:
            want = up.parsers.ranking_parser(text, model_1_name="model_1")[0]
        except ValueError:  # upstream: an empty completion raises, and the annotator records no annotation
            want = math.nan
        got = ae.parse_ranking(text)
        assert (got is None and math.isnan(want)) or got == want, text
    # the clf annotator: upstream reads the first token's logprobs; a greedy judge's first token is what it wrote
    for text, token in [("m", "m"), ("M", "M"), ("M\n\nbecause", "M"), ("m.", "m"), ("Model M", "Model"), ("Both", "Both")]:
        comp = {"logprobs": {"content": [{"top_logprobs": [{"token": token, "logprob": -0.1}]}]}}
        want = up.parsers.logprob_parser(comp, numerator_token="m", denominator_tokens=["m", "M"], is_binarize=True)[0]
        got = ae.parse_clf(text)
        assert (got is None and math.isnan(want)) or got == want, text


def test_a_preference_unswitches_the_order_and_both_orders_average():
    m = ae.AlpacaPreference(order="both")
    assert m.preference({"baseline_first": 2, "model_first": 1}) == 2.0  # the model won both
    assert m.preference({"baseline_first": 2, "model_first": 2}) == 1.5  # the first output won both: a draw
    assert m.consistent(None, {"baseline_first": 2, "model_first": 2}) is False
    assert m.preference({"baseline_first": None, "model_first": 1}) is None
    assert m.values(None, "", {"baseline_first": 1, "model_first": 2}) == {"win_rate": 0.0}
    assert m.values(None, "", {"model_first": None}) == {}


# ---- the figures -----------------------------------------------------------------------------------

@pytest.mark.parametrize("glm", list(lc.GLMS))
def test_win_rate_and_length_controlled_win_rate_are_upstreams(tmp_path, monkeypatch, glm):
    rng = np.random.default_rng(3)
    n = 150
    len_base, len_model = rng.integers(50, 2000, n), rng.integers(20, 3000, n)
    z = 0.002 * (len_model - len_base) + rng.normal(size=n)
    prefs = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-z)), 2.0, 1.0)
    prefs[rng.choice(n, 8, replace=False)] = np.nan
    prefs[rng.choice(n, 6, replace=False)] = 1.5
    gamed = write_gamed(tmp_path / "df_gamed.csv", n=n)
    monkeypatch.setattr(up.glm, "hf_hub_download", lambda **kw: str(gamed))
    want = up.glm.get_length_controlled_winrate(annotations(prefs, len_base, len_model), glm_name=glm,
                                                save_weights_dir=tmp_path / "w")
    wins = lc.win_rate(prefs)
    for k in ("win_rate", "standard_error", "n_wins", "n_wins_base", "n_draws", "n_total"):
        assert wins[k] == pytest.approx(want[k], rel=1e-12), k
    name, g, note = lc.resolve_glm("alpaca_eval", glm, None if glm.endswith("minimal") else str(gamed))
    assert name == glm and note == ""
    got = lc.length_controlled(prefs, len_base, len_model, np.arange(n), name, g)
    assert got["length_controlled_winrate"] == pytest.approx(want["length_controlled_winrate"], rel=1e-9)
    assert got["lc_standard_error"] == pytest.approx(want["lc_standard_error"], rel=1e-9, abs=1e-12)
    weights = pd.read_csv(tmp_path / "w" / glm / "baseline_base.csv", index_col=0).loc["model"].to_dict()
    assert got["weights"] == pytest.approx(weights, rel=1e-9, abs=1e-12)
    assert 30 < got["length_controlled_winrate"] < 70


def test_the_glm_falls_back_with_a_note_and_a_named_one_fails_without_its_data(tmp_path, monkeypatch):
    monkeypatch.setattr(lc, "hub_gamed", lambda: (None, "hub file unavailable (offline)"))
    name, gamed, note = lc.resolve_glm("alpaca_eval")
    assert name == "length_controlled_minimal" and gamed is None and "offline" in note and "glm_data=" in note
    with pytest.raises(DataError, match="length_controlled_v1 needs df_gamed.csv.*offline"):
        lc.resolve_glm("alpaca_eval", "length_controlled_v1")
    with pytest.raises(ValueError, match="glm='v2'"):
        lc.resolve_glm("alpaca_eval", "v2")
    (tmp_path / "bad.csv").write_text("index,preference\n0,1.0\n")
    with pytest.raises(DataError, match="bad.csv: df_gamed.csv lacks column.*std_delta_len"):
        lc.resolve_glm("alpaca_eval", "auto", str(tmp_path / "bad.csv"))
    too_few = lc.length_controlled([2.0, 1.0], [5, 6], [7, 8], [0, 1], "length_controlled_minimal")
    assert math.isnan(too_few["length_controlled_winrate"]) and too_few["weights"] == {}  # fewer games than folds


def test_bad_data_is_one_line_naming_file_and_field(tmp_path):
    (tmp_path / ae.FILE).write_text(json.dumps([{"instruction": "hi", "output": "there"}, {"instruction": "x"}]))
    with pytest.raises(DataError, match=rf"{ae.FILE}:2: field 'output' is missing \(task alpaca_eval\)"):
        ae.AlpacaEval(data_path=str(tmp_path), glm="length_controlled_minimal").eval_docs()
    with pytest.raises(DataError, match="no alpaca_eval_gpt4_baseline.json"):
        ae.AlpacaEval(data_path=str(tmp_path / "sub"), glm="length_controlled_minimal").load_docs(
            "test", path=str(tmp_path.parent))
    with pytest.raises(ValueError, match="annotator='gpt4'"):
        ae.AlpacaEval(annotator="gpt4").judged_metrics()


# ---- the real CLI ----------------------------------------------------------------------------------

def _run(tmp, srv, *task_args, env=None):
    cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(), "--model-args", f"base_url={srv.base_url}",
           "--tasks", "alpaca_eval", "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}",
           "--apply-chat-template", "--limit", "10", "--output", str(tmp / "out"), "--cache-dir", str(tmp / "cache"),
           *[x for a in task_args for x in ("--task-args", f"alpaca_eval:{a}")]]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    run_dir = max((tmp / "out").iterdir(), key=lambda p: p.stat().st_mtime)
    rows = [json.loads(x) for x in next(run_dir.glob("samples_alpaca_eval*.jsonl")).read_text().splitlines()]
    return json.loads((run_dir / "run.json").read_text())["tasks"]["alpaca_eval"], rows, r.stderr


@pytest.mark.server
def test_the_cli_gives_upstreams_win_rates(tmp_path, docs, monkeypatch):
    gamed = write_gamed(tmp_path / "df_gamed.csv")
    monkeypatch.setattr(up.glm, "hf_hub_download", lambda **kw: str(gamed))
    offline = {**__import__("os").environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    with ScriptedServer(script) as srv:
        runs = {"clf": _run(tmp_path, srv, f"glm_data={gamed}", "lc_replicates=20"),
                "ranking": _run(tmp_path, srv, "annotator=ranking", "lc_replicates=20", env=offline)}
        judge_chats = {tuple((m["role"], m["content"]) for m in b["messages"]) for b in srv.bodies
                       if len(b["messages"]) > 1 or b["messages"][-1]["content"].startswith(RANKING_HEAD)}
    for (annotator, glm), (task, rows, stderr) in zip([(CLF, "length_controlled_v1"),
                                                       (RANKING, "length_controlled_minimal")], runs.values()):
        by_id = {r["doc_id"]: r for r in rows}
        picked = docs[:10]
        outputs = [by_id[d.id]["responses"][0] for d in picked]
        assert outputs == [answer(d.query) for d in picked]
        prefs, chats = upstream_annotate([(d.query, d.meta["baseline"], o) for d, o in zip(picked, outputs)], annotator)
        assert set(chats) <= judge_chats
        want = [prefs.get(d.query, math.nan) for d in picked]
        got = [by_id[d.id]["extra"]["judged"]["alpaca_eval"]["preference"] for d in picked]
        assert [math.nan if g is None else g for g in got] == pytest.approx(want, nan_ok=True)
        assert 0 < sum(math.isnan(w) for w in want) < 5  # some parse failures, counted
        anns = [dict(instruction=d.query, output_1=d.meta["baseline"], output_2=o, generator_1="gpt4_1106_preview",
                     generator_2="scripted", annotator="judge", preference=p) for d, o, p in zip(picked, outputs, want)]
        ref = up.glm.get_length_controlled_winrate(anns, glm_name=glm, save_weights_dir=None)
        metrics = task["metrics"]
        assert metrics["win_rate"]["value"] * 100 == pytest.approx(ref["win_rate"], rel=1e-12)
        assert metrics["win_rate"]["stderr"] * 100 == pytest.approx(ref["standard_error"], rel=1e-9)
        assert metrics["lc_win_rate"]["value"] * 100 == pytest.approx(ref["length_controlled_winrate"], rel=1e-9)
        assert metrics["lc_win_rate"]["ci_low"] <= metrics["lc_win_rate"]["value"] <= metrics["lc_win_rate"]["ci_high"]
        extra = task["extra"]["alpaca_eval"]
        assert extra["glm"] == glm and extra["upstream_percent"]["n_total"] == ref["n_total"]
        assert extra["upstream_percent"]["lc_standard_error"] == pytest.approx(ref["lc_standard_error"], abs=1e-9)
        assert extra["baseline_generator"] == {"gpt4_1106_preview": 10}
        assert task["extra"]["judge"]["alpaca_eval"]["parse_failures"] == sum(math.isnan(w) for w in want)
        assert set(task["breakdowns"]) == {f"dataset:{d.meta['dataset']}" for d in picked}
        if glm == "length_controlled_minimal":  # no df_gamed.csv offline: the fallback, said once and recorded
            assert "length_controlled_minimal" in extra["glm_note"] and "glm_data=" in stderr
        else:
            assert extra["glm_data"] == str(gamed) and extra["glm_note"] is None
