"""Arena-Hard-Auto v2.0 (``arena_hard_v2``) against upstream's own code (lmarena/arena-hard-auto at
196f6b8, copied in ``tests/reference/arena_hard_auto``), run in the same test on the same judgments:

- the judge prompts byte for byte (upstream's ``pairwise_judgment`` builds them from the same docs),
  the verdict parsing (``get_score``) on tricky replies, the label table (``load_judgments``);
- the style features (``count_markdown_elements`` + ``remove_pattern``) on tricky markdown and on every
  stored baseline answer;
- every figure: ``print_leaderboard`` (bootstrap mean, 5/95% quantiles) and
  ``print_leaderboard_with_style_features`` (style-controlled BT, torch L-BFGS) with numpy's global
  state seeded with the seeds evalkit recorded: upstream then draws the very rows evalkit draws, so the
  plain scores agree to rounding and the style-controlled ones to float32 (upstream fits in float32);
- a real ``evalkit run`` through a scripted model and judge (``ScriptedServer``) on 8 prompts of both
  categories, whose record is compared with upstream run on the judge's replies to upstream's prompts.

Upstream's figures are read where ``format_confidence_interval`` receives them (the functions print).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _scripted_judge import ScriptedServer
from evalkit.taskapi import registry

torch = pytest.importorskip("torch")
pytest.importorskip("pandas")
pytest.importorskip("yaml")
tokenizers = pytest.importorskip("tokenizers")

from reference.arena_hard_auto import gen_judgment, show_result  # noqa: E402
from reference.arena_hard_auto.utils import add_markdown_info, completion, judge_utils  # noqa: E402
from evalkit.tasks.judged import arena_hard as ah  # noqa: E402
from evalkit.tasks.judged import arena_hard_scores as S  # noqa: E402
from evalkit.tasks.judged.wheel_data import benchmark_dir  # noqa: E402

REF = Path(__file__).resolve().parents[1] / "reference" / "arena_hard_auto"
CONFIG = completion.make_config(str(REF / "config" / "arena-hard-v2.0.yaml"))
BENCH = "arena-hard-v2.0"
MODEL = "evalkit-model"


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Upstream's 100 small torch fits per figure: one thread (many threads on a busy machine crawl)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def wheel_dir() -> Path:
    pytest.importorskip("eval_framework")
    return benchmark_dir(ah.TASK, ah.SUBDIR)


def task(**options):
    return registry.get_task_class(ah.TASK)(**options)


def scripted_api(monkeypatch, reply=lambda messages: "[[A=B]]") -> list:
    """Upstream's judge client replaced by ``reply(messages)``; returns the list of what it was sent
    (messages, max_tokens, temperature)."""
    sent = []

    def fake(messages, **kw):
        sent.append((messages, kw["max_tokens"], kw["temperature"]))
        return {"answer": reply(messages)}
    monkeypatch.setitem(completion.registered_api_completion, "scripted", fake)
    return sent


# ---- prompts, parsing, labels ------------------------------------------------------------------
def test_judge_prompts_are_upstreams_byte_for_byte(tmp_path, monkeypatch):
    assert ah.PROMPT_TEMPLATE == CONFIG["prompt_template"]
    assert list(ah.REGEX_PATTERNS) == CONFIG["regex_patterns"]
    assert ah.UPSTREAM_JUDGE_MAX_TOKENS == CONFIG["max_tokens"] and CONFIG["temperature"] == 0.0
    for cat, (baseline, system) in ah.SETTINGS.items():
        assert judge_utils.JUDGE_SETTINGS[cat] == {"baseline": baseline, "system_prompt": system}
    folder = wheel_dir()
    t = task(style_tokens="none", judge_max_tokens=16000)
    docs = t.eval_docs()
    answers = completion.load_model_answers(str(folder / "model_answer"))
    sent = scripted_api(monkeypatch)
    picked = [d for d in docs if d.meta["category"] == "hard_prompt"][:2] + \
        [d for d in docs if d.meta["category"] == "creative_writing"][:2]
    for d in picked:
        question = {"uid": d.id, "category": d.meta["category"], "prompt": d.query}
        mine = "Some {braces} and \\[[A>B]] in the model's answer"
        row = {"model": MODEL, "messages": [{"role": "user", "content": d.query},
                                            {"role": "assistant", "content": {"answer": mine}}]}
        del sent[:]
        gen_judgment.judgment({"question": question, "answer": row, "baseline": answers[d.meta["baseline"]][d.id],
                               "reference": None, "configs": CONFIG, "output_file": str(tmp_path / "j.jsonl"),
                               "settings": {"api_type": "scripted", "endpoints": None}})
        asks = t.judge().asks(d, mine)
        assert [a.tag for a in asks] == ["game1", "game2"]
        for ask, (messages, max_tokens, temperature) in zip(asks, sent):
            assert [{"role": r, "content": c} for r, c in ask.messages] == messages
            assert ask.max_tokens == max_tokens == 16000 and temperature == 0.0
        assert d.meta["baseline"] == judge_utils.JUDGE_SETTINGS[d.meta["category"]]["baseline"]
    assert task(style_tokens="none").judge().max_tokens == 8192  # the default cap


TRICKY = ["My final verdict is [[A>B]].", "[[a>>b]]", "first [[A>B]] then [[B>>A]]", "no verdict at all", "[A=B]",
          "[[A>B]] but also [B>A]", "[[A]]", "[[C>D]]", "[[A>>B]]\n", "[[ A>B ]]", "[[B=A]]", "[[A<<B]]",
          "**[[B>>A]]**", "[[A>B]][[B>A]]", "[[]]", "[[A > B]]", "[[A>>>B]]", "verdict: [[b<a]]", "[[A=B]",
          "Assistant A: [A>B] / [[B>A]]", "[[A>B]]\n\nOn reflection: [[A=B]]", ""]


def test_verdicts_are_parsed_as_upstreams_get_score():
    judge = task(style_tokens="none").judge()
    for text in TRICKY:
        theirs = gen_judgment.get_score(text, CONFIG["regex_patterns"])
        assert ah.get_score(text) == theirs, text
        assert judge.parse(None, text) == (theirs if theirs in S.LABELS else None), text
    assert judge.parse(None, "[[a>>b]]") == "A>>B" and judge.parse(None, "[[A]]") is None


def test_label_table_is_load_judgments(tmp_path, monkeypatch):
    """Every pair of game labels (and a missing one) through upstream's ``load_judgments``."""
    labels = sorted(S.LABELS) + [None]
    out = tmp_path / "data" / BENCH / "model_judgment" / "j"
    out.mkdir(parents=True)
    rows = [{"uid": f"{i}-{k}", "category": "hard_prompt", "model": MODEL,
             "games": [{"score": g1}, {"score": g2}]} for i, g1 in enumerate(labels) for k, g2 in enumerate(labels)]
    (out / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(tmp_path)
    battles = show_result.load_judgments(["j"], BENCH)
    theirs = battles.groupby("uid", sort=False)["scores"].apply(list).to_dict()
    mine = {r["uid"]: S.battle_scores(r["games"][0]["score"], r["games"][1]["score"]) for r in rows}
    assert {k: v for k, v in mine.items() if v is not None} == theirs
    assert sum(v is None for v in mine.values()) == 2 * len(labels) - 1


# ---- style features ----------------------------------------------------------------------------
MARKDOWN = ["# H1\n## H2\n### H3\n####### seven\n#nospace\n  # indented",
            "1. a\n2. b\n   10. nested\n\n- x\n* y\n+ z\n-no\n  - deep",
            "**bold** and __also__ and ****, **a\nb**, __x_y__ **c** ** d **",
            "text\n```python\n# not a header\n- not a list\n**not bold**\n```\n# after code\n```\nunclosed",
            "``` a ` b ```\n- after\n```js\nx\n```\n```\n1. again\n```", "", "\n\n\n1.\n1. x\n\n\t- tab"]


def test_style_features_are_upstreams():
    pattern = re.compile("```([^`]*)```")
    for text in MARKDOWN:
        theirs = {"token_len": 7, **add_markdown_info.count_markdown_elements(
            add_markdown_info.remove_pattern(text, pattern), suffix="")}
        assert S.style_meta(text, 7) == theirs, text
    folder = wheel_dir()
    n = 0
    for base in ("o3-mini-2025-01-31", "gemini-2.0-flash-001"):  # upstream's stored metadata, every answer
        for uid, (text, meta) in ah.baseline_answers(folder, base).items():
            assert S.style_meta(text, meta["token_len"]) == meta, (base, uid)
            n += 1
    assert n == 1498


def test_wheel_data():
    docs = task(style_tokens="none").eval_docs()
    assert len(docs) == 750 and len({d.id for d in docs}) == 750
    cats = [d.meta["category"] for d in docs]
    assert cats.count("hard_prompt") == 500 and cats.count("creative_writing") == 250
    assert {d.meta["subcategory"] for d in docs} == {"coding", "math", "creative_writing"}
    assert all(d.meta["baseline"] == judge_utils.JUDGE_SETTINGS[d.meta["category"]]["baseline"] for d in docs)


def test_bad_input_is_one_line(tmp_path):
    from evalkit.taskapi.data import DataError
    with pytest.raises(ValueError, match="unknown option 'judge_tokens'"):
        task(judge_tokens=5)
    with pytest.raises(ValueError, match="judge_max_tokens"):
        task(judge_max_tokens=0)
    (tmp_path / "question.jsonl").write_text(json.dumps({"uid": "u", "category": "poetry", "prompt": "p"}) + "\n")
    with pytest.raises(DataError, match=r"question.jsonl:1: category 'poetry'"):
        task(style_tokens="none").load_docs("test", path=str(tmp_path))
    (tmp_path / "question.jsonl").write_text(json.dumps({"uid": "u", "category": "math", "prompt": "p"}) + "\n")
    with pytest.raises(DataError, match="o3-mini-2025-01-31.jsonl is missing"):
        task(style_tokens="none").load_docs("test", path=str(tmp_path))
    with pytest.raises(DataError, match="style_tokens=nope.json"):
        task(style_tokens="nope.json").load_docs("test", path=str(wheel_dir()))


def test_without_the_gpt4o_encoding_the_run_stops_before_any_answer(monkeypatch):
    tiktoken = pytest.importorskip("tiktoken")
    from evalkit.taskapi.data import DataError

    def offline(name):
        raise ConnectionError("no route to the o200k_base file")
    monkeypatch.setattr(tiktoken, "encoding_for_model", offline)
    with pytest.raises(DataError) as e:
        task().eval_docs()
    assert "\n" not in str(e.value) and "style_tokens=none" in str(e.value) and "tiktoken" in str(e.value)
    assert task().declared_metrics()  # declaring the metrics needs no tokenizer


# ---- figures against show_result ---------------------------------------------------------------
def upstream_figures(battles, category, seeds, monkeypatch) -> dict:
    """Upstream's plain and style-controlled figures of the model, numpy's global state seeded with
    evalkit's seeds; also the design matrix and outcomes upstream's style fit received."""
    got, fits = [], []
    real, real_boot = show_result.format_confidence_interval, show_result.bootstrap_pairwise_model

    def capture(mean, lower, upper, baseline=None):
        row = lambda df, col: float(df.set_index("model").loc[MODEL, col])  # noqa: E731
        got.append((row(mean, "scores"), row(lower, "lower"), row(upper, "upper")))
        return real(mean, lower, upper, baseline)

    def boot(features, outcomes, loss_type="bt"):
        fits.append((features.clone(), outcomes.clone()))
        return real_boot(features, outcomes, loss_type=loss_type)
    monkeypatch.setattr(show_result, "format_confidence_interval", capture)
    monkeypatch.setattr(show_result, "bootstrap_pairwise_model", boot)
    np.random.seed(seeds[0])
    show_result.print_leaderboard(battles.copy(), category)
    np.random.seed(seeds[1])
    show_result.print_leaderboard_with_style_features(battles.copy(), BENCH, category, ["length", "markdown"])
    return {"score": got[0], "score_sc": got[1], "features": fits[0][0], "outcomes": fits[0][1]}


def upstream_rounds_float64(features: np.ndarray, outcomes: np.ndarray, seed: int) -> np.ndarray:
    """Upstream's ``bootstrap_pairwise_model`` + ``to_winrate_probabilities`` run in float64 on the
    given design (its columns: the model, the baseline, four covariates): the model's win rate per round."""
    from reference.arena_hard_auto.utils import math_utils
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        np.random.seed(seed)
        coefs, _ = math_utils.bootstrap_pairwise_model(torch.tensor(features), torch.tensor(outcomes), "bt")
        return math_utils.to_winrate_probabilities(coefs[:, :2], ["m", "b"], "b")[:, 0].double().numpy()
    finally:
        torch.set_default_dtype(old)


def write_answers(root: Path, rows: dict) -> None:
    """``model_answer/<model>.jsonl`` as upstream's ``gen_answer`` writes them (uid, model, messages, metadata)."""
    d = root / "data" / BENCH / "model_answer"
    d.mkdir(parents=True, exist_ok=True)
    for model, items in rows.items():
        (d / f"{model}.jsonl").write_text("".join(json.dumps(
            {"uid": uid, "model": model, "messages": [{"role": "assistant", "content": {"answer": t}}],
             "metadata": meta}) + "\n" for uid, (t, meta) in items.items()))


def test_scores_match_show_result_on_many_prompts(tmp_path, monkeypatch):
    """60 prompts of random verdicts and features: both figures of evalkit's ``group_figures`` are upstream's."""
    rng = np.random.default_rng(7)
    labels = sorted(S.LABELS)
    items, judg, answers = [], [], {MODEL: {}, "o3-mini-2025-01-31": {}}

    def meta():
        return {"token_len": int(rng.integers(5, 3000)), "header_count": {"h1": int(rng.integers(0, 4))},
                "list_count": {"ordered": int(rng.integers(0, 12))}, "bold_count": {"**": int(rng.integers(0, 9))}}
    for i in range(60):
        g1, g2 = labels[rng.integers(len(labels))], labels[rng.integers(len(labels))]
        m, b = meta(), meta()
        items.append({"scores": S.battle_scores(g1, g2), "model": m, "baseline": b})
        judg.append({"uid": f"u{i}", "category": "hard_prompt", "model": MODEL, "games": [{"score": g1}, {"score": g2}]})
        answers[MODEL][f"u{i}"], answers["o3-mini-2025-01-31"][f"u{i}"] = ("", m), ("", b)
    out = tmp_path / "data" / BENCH / "model_judgment" / "j"
    out.mkdir(parents=True)
    (out / f"{MODEL}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judg))
    write_answers(tmp_path, answers)
    monkeypatch.chdir(tmp_path)
    seeds = (20240601, 99)
    mine = S.group_figures(items, seeds)
    theirs = upstream_figures(show_result.load_judgments(["j"], BENCH), "hard_prompt", seeds, monkeypatch)
    check(mine, theirs)
    # the fit itself: upstream's L-BFGS in float64 on evalkit's design gives evalkit's rounds exactly
    X = S.style_design(S.style_covariates(*(np.array([S.feature_row(it[k]) for it in items for _ in it["scores"]])
                                            for k in ("model", "baseline"))))
    y = np.array([s for it in items for s in it["scores"]])
    diff = np.abs(upstream_rounds_float64(X, y, seeds[1]) - S.style_rounds(X, y, seeds[1]))
    assert np.median(diff) < 1e-12 and diff.max() < 1e-5


#: upstream fits the style model in float32 with 50 fixed-step L-BFGS iterations (all kept as history),
#: short of the optimum: rounding steers the path, and a round's win rate moves by up to ~2e-3 in
#: float32 (~1e-6 in float64, where most rounds agree to 1e-15). On 60 to 500 prompts the figures then
#: agree to < 1e-5; on a handful of prompts (ill-conditioned) to a few 1e-3.
STYLE_TOL = 1e-4


def check(mine: dict, theirs: dict, style_tol: float = STYLE_TOL) -> None:
    """Plain score: the same rounds, so equal up to summation order. Style control: the same figures up
    to upstream's float32 noise."""
    for k, tol in (("score", 1e-12), ("score_sc", style_tol)):
        f = mine[k]
        assert (f["value"], f["lower"], f["upper"]) == pytest.approx(theirs[k], abs=tol), k
    assert mine["score_sc"]["lower"] < mine["score_sc"]["value"] < mine["score_sc"]["upper"]


# ---- a real run through a scripted model and judge ---------------------------------------------
def judge_reply(k: int, game: str) -> str:
    """The scripted judge: prompt k's verdict per game, tricky replies included (k 2: no verdict in
    game 1, k 5: ``[[A]]``, not a label; k 7: lowercase; k 3: several verdicts; k 6: single brackets)."""
    table = {0: ("[[A>B]]", "My final verdict is [[B>A]]"), 1: ("[[B>>A]]", "[[A>>B]]"), 2: ("I cannot decide.", "[[A=B]]"),
             3: ("[[A>B]] ... on reflection [[B>A]]", "[[A=B]]"), 4: ("[[A>>B]]", "[[B>A]]"), 5: ("[[A]]", "[[A>B]]"),
             6: ("verdict [B>A]", "[[A>>B]]"), 7: ("[[b>>a]]", "[[a=b]]"), 8: ("[[A=B]]", "[[A=B]]")}
    return table[k][0 if game == "game1" else 1]


def model_answer(k: int) -> str:
    """The scripted model's answer to prompt k: varied length and markdown, a fenced block to strip."""
    parts = [f"MODEL-ANSWER-{k}", "# Title\n" * (k % 2), "## Part\n" * (k % 3 == 1), "- item\n" * (k % 3),
             "1. step\n" * (k % 4), "**bold** " * ((k * 5) % 7), "word " * (7 + 13 * k),
             "\n```python\n# not a header\n- not an item\n```\n" * (k % 2)]
    return "\n".join(parts)


def make_folder(root: Path) -> tuple[Path, list]:
    """A --data folder of 9 wheel prompts, hard and creative alternating, with the baselines' rows."""
    src = wheel_dir()
    qs = [json.loads(x) for x in (src / "question.jsonl").read_text().split("\n") if x.strip()]
    hard = [q for q in qs if q["category"] == "hard_prompt"][:5]
    creative = [q for q in qs if q["category"] == "creative_writing"][:4]
    picked = [x for pair in zip(hard, creative + [None]) for x in pair if x is not None]
    (root / "model_answer").mkdir(parents=True)
    (root / "question.jsonl").write_text("".join(json.dumps(q) + "\n" for q in picked))
    uids = {q["uid"] for q in picked}
    for base in ("o3-mini-2025-01-31", "gemini-2.0-flash-001"):
        lines = (src / "model_answer" / f"{base}.jsonl").read_text().split("\n")
        (root / "model_answer" / f"{base}.jsonl").write_text(
            "".join(x + "\n" for x in lines if x.strip() and json.loads(x)["uid"] in uids))
    return root, picked


def word_tokenizer(path: Path):
    """A tokenizer.json that counts words and punctuation (the run's ``style_tokens``; o200k_base is not offline)."""
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(path))
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def which(messages, prompts: dict) -> tuple:
    """(prompt index, game) of a judge chat: the question's index, and game 2 when the model is A."""
    user = messages[-1]["content"]
    question = user.split("<|User Prompt|>\n", 1)[1].split("\n\n<|The Start of Assistant A's Answer|>", 1)[0]
    a_part = user.split("<|The Start of Assistant A's Answer|>", 1)[1].split("<|The End of Assistant A's Answer|>")[0]
    return prompts[question], "game2" if "MODEL-ANSWER-" in a_part else "game1"


@pytest.mark.server
def test_a_run_matches_upstream_on_its_judgments(tmp_path, monkeypatch):
    folder, picked = make_folder(tmp_path / "data")
    prompts = {q["prompt"]: k for k, q in enumerate(picked)}
    count = word_tokenizer(tmp_path / "tokenizer.json")

    def script(messages):
        if messages[0]["role"] == "system":
            return judge_reply(*which(messages, prompts))
        return model_answer(prompts[messages[-1]["content"]])

    with ScriptedServer(script) as srv:
        r = subprocess.run([sys.executable, "-m", "evalkit", "run", "--model", srv.spec(), "--model-args",
                            f"base_url={srv.base_url}", "--tasks", ah.TASK, "--data", f"{ah.TASK}={folder}",
                            "--task-args", f"{ah.TASK}:judge_max_tokens=3000,style_tokens={tmp_path / 'tokenizer.json'}",
                            "--apply-chat-template", "--judge", srv.spec(), "--judge-args", f"base_url={srv.base_url}",
                            "--limit", "8", "--seed", "77", "--output", str(tmp_path / "out"),
                            "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        bodies = list(srv.bodies)
    judge_calls = [b for b in bodies if b["messages"][0]["role"] == "system"]
    answer_calls = [b for b in bodies if b["messages"][0]["role"] != "system"]
    assert len(judge_calls) == 16 and len(answer_calls) == 8
    assert all(b["max_tokens"] == 3000 and b.get("temperature", 0) == 0 for b in judge_calls)
    assert all([m["role"] for m in b["messages"]] == ["user"] for b in answer_calls)

    run_dir = next((tmp_path / "out").iterdir())
    entry = json.loads((run_dir / "run.json").read_text())["tasks"][ah.TASK]
    rows = [json.loads(x) for x in next(run_dir.glob(f"samples_{ah.TASK}*.jsonl")).read_text().splitlines()]
    assert [row["doc_id"] for row in rows] == [q["uid"] for q in picked[:8]]
    assert [row["extra"]["judged"]["arena_hard"]["category"] for row in rows] == ["hard_prompt", "creative_writing"] * 4

    # upstream, on the same answers: its judge prompts to the same scripted judge, its files, its figures
    ref = tmp_path / "ref"
    base_rows = completion.load_model_answers(str(folder / "model_answer"))
    pattern = re.compile("```([^`]*)```")

    def meta(text):
        return {"token_len": count(text), **add_markdown_info.count_markdown_elements(
            add_markdown_info.remove_pattern(text, pattern), suffix="")}
    sent = scripted_api(monkeypatch, lambda messages: script(messages))
    out = ref / "data" / BENCH / "model_judgment" / "scripted"
    out.mkdir(parents=True)
    answers = {MODEL: {}, "o3-mini-2025-01-31": {}, "gemini-2.0-flash-001": {}}
    for k, (q, row) in enumerate(zip(picked, rows)):
        text, rec = row["responses"][0], row["extra"]["judged"]["arena_hard"]
        assert text == model_answer(k)
        base = judge_utils.JUDGE_SETTINGS[q["category"]]["baseline"]
        answer = {"model": MODEL, "messages": [{"role": "user", "content": q["prompt"]},
                                               {"role": "assistant", "content": {"answer": text}}]}
        gen_judgment.judgment({"question": q, "answer": answer, "baseline": base_rows[base][q["uid"]], "reference": None,
                               "configs": CONFIG, "output_file": str(out / f"{MODEL}.jsonl"),
                               "settings": {"api_type": "scripted", "endpoints": None}})
        answers[MODEL][q["uid"]] = (text, meta(text))
        answers[base][q["uid"]] = (b := base_rows[base][q["uid"]]["messages"][-1]["content"]["answer"], meta(b))
        assert rec["baseline"] == base and rec["model_style"] == meta(text) and rec["baseline_style"] == meta(b)
    assert sorted(json.dumps(m) for m, _, _ in sent) == sorted(  # the same 16 judge prompts
        json.dumps([{"role": x["role"], "content": x["content"]} for x in b["messages"]]) for b in judge_calls)
    judged = [json.loads(x) for x in (out / f"{MODEL}.jsonl").read_text().splitlines()]
    for row, j in zip(rows, judged):
        rec = row["extra"]["judged"]["arena_hard"]
        theirs = [g["score"] if g["score"] in S.LABELS else None for g in j["games"]]  # "[[A]]": KeyError upstream
        assert [rec["verdicts"]["game1"], rec["verdicts"]["game2"]] == theirs
        j["games"] = [{"score": s} for s in theirs]
    (out / f"{MODEL}.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judged))
    write_answers(ref, answers)
    monkeypatch.chdir(ref)
    battles = show_result.load_judgments(["scripted"], BENCH)
    by_uid = battles.groupby("uid", sort=False)["scores"].apply(list).to_dict()
    assert {row["doc_id"]: row["extra"]["judged"]["arena_hard"]["battle_scores"] for row in rows
            if row["extra"]["judged"]["arena_hard"]["battle_scores"]} == by_uid
    assert len(by_uid) == 6  # prompts 2 and 5 have no usable verdict in game 1

    groups = entry["extra"]["arena_hard"]["groups"]
    for g, cat in (("hard_prompt", "hard_prompt"), ("creative_writing", "creative_writing"), ("all", "hard_prompt")):
        sub = battles if g == "all" else battles[battles.category == g].reset_index(drop=True)
        theirs = upstream_figures(sub, cat, groups[g]["seeds"], monkeypatch)
        suffix = "" if g == "all" else f"_{g}"
        mine = {k: {"value": entry["metrics"][k + suffix]["value"], "lower": entry["metrics"][k + suffix]["ci_low"],
                    "upper": entry["metrics"][k + suffix]["ci_high"]} for k in ("score", "score_sc")}
        check(mine, theirs, 5e-3)  # 8 prompts: upstream's float32 noise is at its largest
        # the same design as upstream's (float32), and upstream's own fit in float64 gives evalkit's figures
        items = [x["extra"]["judged"]["arena_hard"] for x in rows]
        items = [it for it in items if it["battle_scores"] and g in ("all", it["category"])]
        X = S.style_design(S.style_covariates(*(np.array([S.feature_row(it[k]) for it in items for _ in it["battle_scores"]])
                                                for k in ("model_style", "baseline_style"))))
        y = np.array([v for it in items for v in it["battle_scores"]])
        assert np.abs(theirs["features"].double().numpy() - X).max() < 1e-5 and (theirs["outcomes"].numpy() == y).all()
        if g == "all":  # (one group: upstream's 100 torch fits take seconds)
            f64 = S.summary(upstream_rounds_float64(X, y, groups[g]["seeds"][1]), "median")
            assert (f64["value"], f64["lower"], f64["upper"]) == pytest.approx(
                (mine["score_sc"]["value"], mine["score_sc"]["lower"], mine["score_sc"]["upper"]), abs=1e-5)
        assert groups[g]["battles"] == len(sub)
        if g != "all":
            assert entry["breakdowns"][g]["score"] == entry["metrics"]["score" + suffix]

    # the sample figures and the judge's reliability
    # by hand from judge_reply: game 1 shows the baseline as A, game 2 the model
    assert [x["metrics"]["win_rate"] for x in rows] == [0.0, 1.0, None, 0.75, 0.0, None, 1.0, 0.75]
    assert [x["extra"]["judged"]["arena_hard"]["verdicts"] for x in rows][2:4] == [
        {"game1": None, "game2": "A=B"}, {"game1": "B>A", "game2": "A=B"}]
    assert rows[2]["extra"]["judged"]["arena_hard"]["parse_failures"] == ["game1"]
    assert entry["extra"]["judge"]["arena_hard"]["parse_failures"] == 2
    assert entry["metrics"]["win_rate"]["n"] == 6
    consistent = [row["extra"]["judged"]["arena_hard"]["consistent"] for row in rows]
    assert consistent == [True, True, None, False, True, None, True, False]
    assert entry["extra"]["judge"]["arena_hard"]["swap_consistency"] == pytest.approx(4 / 6)

    # the leaderboard's Arena-Hard table: per category, both scores with their intervals, as recorded
    from _dashboard_records import app_page
    from evalkit.dashboards.tables import fmt
    page = app_page(tmp_path / "out", monkeypatch)
    table = next(d.value for d in page.dataframe if "style-controlled (90% CI)" in d.value.columns)
    assert list(table["category"]) == ["hard prompt", "creative writing", "all"]
    assert list(table["baseline"]) == ["o3-mini-2025-01-31", "gemini-2.0-flash-001", "per category"]
    for (_, row), g in zip(table.iterrows(), ("hard_prompt", "creative_writing", "all")):
        fig = groups[g]
        for col, k in (("score (90% CI)", "score"), ("style-controlled (90% CI)", "score_sc")):
            want = f"{fmt(fig[k]['value'])} [{fmt(fig[k]['lower'])}, {fmt(fig[k]['upper'])}]"
            assert row[col] == want, (g, col, row[col])
        assert (row["prompts"], row["battles"]) == (fig["prompts"], fig["battles"])
        assert row["swap consistency"] == pytest.approx(4 / 6)

