"""``ifeval`` against the reference implementation (Google's ``instruction_following_eval`` as
lm-eval vendors it, ``lm_eval/tasks/ifeval``), item by item in the same test run: responses built to
pass and to fail every instruction of all 541 prompts, and the bundled model's real responses to
all 541 prompts through vLLM. langdetect is seeded in both (the reference leaves it unseeded)."""
from __future__ import annotations

import json

import pytest

import evalkit
from evalkit.taskapi.data import DataError
from evalkit.tasks.ifeval.checkers import CHECKERS, verdicts
from evalkit.tasks.ifeval.task import record_to_doc

from conftest import shared
from _fakes import ScriptedBackend, first_line

DATA = shared("ifeval", "input_data.jsonl")
RANDOM_IN_REFERENCE = {"1122", "1129"}  # letter_frequency on "#" and "!": the reference draws a random letter

PHRASES = {  # one plain sentence per language code the data asks for (langdetect must recognise it)
    "de": "Das Wetter ist heute sehr schön und wir gehen am Nachmittag im Park spazieren.",
    "pt": "O tempo está muito bonito hoje e vamos passear no parque durante a tarde.",
    "it": "Il tempo è molto bello oggi e andiamo a passeggiare nel parco nel pomeriggio.",
    "fi": "Sää on tänään todella kaunis ja menemme iltapäivällä kävelylle puistoon.",
    "ru": "Сегодня очень хорошая погода, и мы пойдём гулять в парк после обеда.",
    "bg": "Днес времето е много хубаво и следобед ще се разходим в парка с децата.",
    "vi": "Hôm nay thời tiết rất đẹp và chúng tôi sẽ đi dạo trong công viên vào buổi chiều.",
    "sw": "Hali ya hewa ni nzuri sana leo na tutatembea katika bustani mchana huu pamoja na watoto.",
    "hi": "आज मौसम बहुत अच्छा है और हम दोपहर में पार्क में टहलने जाएंगे।",
    "ar": "الطقس جميل جدا اليوم وسنذهب للتنزه في الحديقة بعد الظهر.",
    "fa": "امروز هوا بسیار خوب است و ما بعد از ظهر در پارک قدم خواهیم زد.",
    "ko": "오늘은 날씨가 정말 좋아서 우리는 오후에 공원에서 산책을 할 거예요.",
    "th": "วันนี้อากาศดีมากและเราจะไปเดินเล่นที่สวนสาธารณะในตอนบ่าย",
    "ta": "இன்று வானிலை மிகவும் நன்றாக உள்ளது, நாங்கள் மதியம் பூங்காவில் நடக்கப் போகிறோம்.",
    "te": "ఈ రోజు వాతావరణం చాలా బాగుంది మరియు మేము మధ్యాహ్నం పార్కులో నడవడానికి వెళ్తాము.",
    "bn": "আজ আবহাওয়া খুব সুন্দর এবং আমরা বিকেলে পার্কে হাঁটতে যাব।",
    "gu": "આજે હવામાન ખૂબ સરસ છે અને અમે બપોરે બગીચામાં ફરવા જઈશું.",
    "kn": "ಇಂದು ಹವಾಮಾನ ತುಂಬಾ ಚೆನ್ನಾಗಿದೆ ಮತ್ತು ನಾವು ಮಧ್ಯಾಹ್ನ ಉದ್ಯಾನವನದಲ್ಲಿ ನಡೆಯಲು ಹೋಗುತ್ತೇವೆ.",
    "pa": "ਅੱਜ ਮੌਸਮ ਬਹੁਤ ਵਧੀਆ ਹੈ ਅਤੇ ਅਸੀਂ ਦੁਪਹਿਰ ਨੂੰ ਪਾਰਕ ਵਿੱਚ ਸੈਰ ਕਰਨ ਜਾਵਾਂਗੇ।",
    "ur": "آج موسم بہت اچھا ہے اور ہم دوپہر کو پارک میں سیر کرنے جائیں گے۔",
}


@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("lm_eval")
    langdetect = pytest.importorskip("langdetect")
    from evalkit.util.nltk_punkt import ensure_punkt_tab
    assert ensure_punkt_tab() is not None
    langdetect.DetectorFactory.seed = 0
    from lm_eval.tasks.ifeval import utils
    yield utils
    langdetect.DetectorFactory.seed = None


@pytest.fixture(scope="module")
def records():
    return [json.loads(line) for line in open(DATA)]


def _rel(args, key="relation"):
    return args.get(key, "at least") == "at least"


def built(iid: str, a: dict, prompt: str) -> tuple:
    """(a response that follows the instruction, one that does not); None where none can be built."""
    if iid == "keywords:existence":
        return "We speak of " + " and ".join(a["keywords"]) + ".", "Nothing to see."
    if iid == "keywords:frequency":
        k, f = a["keyword"], a["frequency"]
        many, few = " ".join([k] * f) + ".", (" ".join([k] * (f - 1)) or "none") + "."
        return (many, few) if _rel(a) else (few, many)
    if iid == "keywords:forbidden_words":
        return "Zzz qqq.", "Here is " + a["forbidden_words"][0] + "."
    if iid == "keywords:letter_frequency":
        le, f = a["letter"], a["let_frequency"]
        many, few = " ".join([le] * f) + " .", (" ".join([le] * (f - 1)) or " ") + " ."
        return (many, few) if _rel(a, "let_relation") else (few, many)
    if iid == "language:response_language":
        other = PHRASES["de"] if a["language"] != "de" else PHRASES["pt"]
        return PHRASES.get(a["language"]), "The weather is lovely today and we will walk in the park this afternoon."
    if iid == "length_constraints:number_sentences":
        n = a["num_sentences"]
        many, few = "It rains. " * n, ("It rains. " * (n - 1)) or " "
        return (many, few) if _rel(a) else ((few if n > 1 else None), many)
    if iid == "length_constraints:number_paragraphs":
        n = a["num_paragraphs"]
        return "\n***\n".join(["Some text."] * n), "\n***\n".join(["Some text."] * (n + 1))
    if iid == "length_constraints:number_words":
        n = a["num_words"]
        many, few = "word " * n, ("word " * (n - 1)) or "."
        return (many, few) if _rel(a) else (few, many)
    if iid == "length_constraints:nth_paragraph_first_word":
        n, k, w = a["num_paragraphs"], a["nth_paragraph"], a["first_word"]
        paras = ["Some text here."] * n
        good, bad = list(paras), list(paras)
        good[k - 1], bad[k - 1] = f"{w.capitalize()} starts this one.", "Zzz starts this one."
        return "\n\n".join(good), "\n\n".join(bad)
    if iid == "detectable_content:number_placeholders":
        n = a["num_placeholders"]
        return "[name] " * n, ("[name] " * (n - 1)) + "end"
    if iid == "detectable_content:postscript":
        return f"Body text.\n{a['postscript_marker']} a note.", "Body text only."
    if iid == "detectable_format:number_bullet_lists":
        n = a["num_bullets"]
        return "\n".join(["* item"] * n), "\n".join(["* item"] * (n + 1))
    if iid == "detectable_format:constrained_response":
        return "My answer is maybe.", "Perhaps."
    if iid == "detectable_format:number_highlighted_sections":
        return " ".join(["*part*"] * a["num_highlights"]), "No highlights."
    if iid == "detectable_format:multiple_sections":
        s, n = a["section_spliter"], a["num_sections"]
        return ("\n".join(f"{s} {i}\ntext" for i in range(1, n + 1)),
                "\n".join(f"{s} {i}\ntext" for i in range(1, n)) or "text")
    if iid == "detectable_format:json_format":
        return '```json\n{"answer": 1}\n```', "{answer: 1}"
    if iid == "detectable_format:title":
        return "<<A Title>>\nBody.", "A Title\nBody."
    if iid == "combination:two_responses":
        return "First answer.\n******\nSecond answer.", "First answer.\n******\nFirst answer."
    if iid == "combination:repeat_prompt":
        return a["prompt_to_repeat"] + "\nMy answer.", "My answer. " + a["prompt_to_repeat"]
    if iid == "startend:end_checker":
        return "Body text. " + a["end_phrase"], a["end_phrase"] + " Body text."
    if iid == "change_case:capital_word_frequency":
        f = a["capital_frequency"]
        many, few = "WORD " * f, "word " + "WORD " * (f - 1)
        return (many, few) if _rel(a, "capital_relation") else (few, many)
    if iid == "change_case:english_capital":
        return ("THE WEATHER IS LOVELY TODAY AND WE WILL WALK IN THE PARK.",
                "The weather is lovely today and we will walk in the park.")
    if iid == "change_case:english_lowercase":
        return ("the weather is lovely today and we will walk in the park.",
                "The weather is lovely today and we will walk in the park.")
    if iid == "punctuation:no_comma":
        return "No commas here.", "One, two."
    if iid == "startend:quotation":
        return '"A quoted answer."', "A quoted answer."
    raise AssertionError(f"no builder for {iid}")


def test_every_checker_on_built_responses_equals_the_reference(reference, records):
    """Each of the 834 instructions, alone, on a response built to follow it and one built not to:
    evalkit follows the intent, and its strict and loose verdicts equal the reference's."""
    seen, compared = set(), 0
    for r in records:
        doc = record_to_doc(r, 0)
        for iid, args, raw in zip(doc.meta["instruction_ids"], doc.meta["kwargs"], r["kwargs"]):
            good, bad = built(iid, args, r["prompt"])
            for text, want in ((good, True), (bad, False)):
                if text is None:
                    continue
                strict, loose = verdicts([iid], [args], text)
                assert strict == [want], (r["key"], iid, want, text[:80])
                if str(r["key"]) in RANDOM_IN_REFERENCE and iid == "keywords:letter_frequency":
                    continue
                inp = reference.InputExample(key=r["key"], instruction_id_list=[iid], prompt=r["prompt"], kwargs=[raw])
                ref_strict = reference.test_instruction_following_strict(inp, text).follow_instruction_list
                ref_loose = reference.test_instruction_following_loose(inp, text).follow_instruction_list
                assert (strict, loose) == (ref_strict, ref_loose), (r["key"], iid, text[:80])
                compared += 1
            seen.add(iid)
    assert seen == set(CHECKERS) and len(CHECKERS) == 25
    assert compared > 1600


def test_whole_prompts_on_mixed_responses_equal_the_reference(reference, records):
    """All 541 prompts, every instruction at once, on six responses each (the prompt itself, in
    capitals, lower case with a postscript, quoted, empty, between dividers): every verdict equal."""
    n = 0
    for r in records:
        doc = record_to_doc(r, 0)
        p = r["prompt"]
        for text in (p, p.upper(), p.lower() + "\n\nP.S. done", f'"{p}"', "", f"***\n{p}\n***\nok"):
            strict, loose = verdicts(doc.meta["instruction_ids"], doc.meta["kwargs"], text)
            want = reference.process_results(r, [text])
            if str(r["key"]) in RANDOM_IN_REFERENCE:
                i = doc.meta["instruction_ids"].index("keywords:letter_frequency")
                del strict[i], loose[i], want["inst_level_strict_acc"][i], want["inst_level_loose_acc"][i]
            assert (strict, loose) == (want["inst_level_strict_acc"], want["inst_level_loose_acc"]), (r["key"], text[:60])
            n += 1
    assert n == 541 * 6


def test_the_characters_the_reference_replaces_are_counted():
    """Keys 1122/1129 ask for 4 "#" and 6 "!": evalkit counts those (the reference a random letter)."""
    assert verdicts(["keywords:letter_frequency"], [{"letter": "#", "let_frequency": 4, "let_relation": "at least"}],
                    "#a #b #c #d") == ([True], [True])
    assert verdicts(["keywords:letter_frequency"], [{"letter": "!", "let_frequency": 6, "let_relation": "at least"}],
                    "Wow! Yes!") == ([False], [False])


def echo() -> ScriptedBackend:
    """Answers every prompt with its first line (so some instructions hold and some do not)."""
    return ScriptedBackend(first_line, name="echo", identity={"model": "ifeval-echo"})


def test_task_prompts_metrics_and_catalog_parity(reference, records, tmp_path):
    """The native task sends the prompt as one chat turn (``chat=false``: the bare prompt, the text
    lm-eval's catalog task sends), 1,280 greedy tokens; its per-prompt verdicts equal the catalog's
    ``lm-eval:ifeval`` (lm-eval's own process_results) on the same responses; instruction-level
    figures are the flat means with a bootstrap CI over prompts; breakdowns per instruction."""
    from evalkit.tasks.lm_eval_catalog.hub_layouts import ifeval_hub
    chat = echo()
    run = evalkit.evaluate(model=chat, tasks=["ifeval"], limit=40, data={"ifeval": str(DATA)}, output=None, cache=False)
    assert all(r.messages and r.messages[-1][0] == "user" and r.prompt is None for r in chat.requests)
    assert chat.requests[0].params.max_tokens == 1280 and chat.requests[0].params.temperature == 0.0
    bare, catalog = echo(), echo()
    native = evalkit.evaluate(model=bare, tasks=["ifeval"], limit=40, data={"ifeval": str(DATA)},
                              task_args={"ifeval": {"chat": "false"}}, output=None, cache=False)
    hub = ifeval_hub(shared("."), tmp_path / "hub")
    lm = evalkit.evaluate(model=catalog, tasks=["lm-eval:ifeval"], limit=40, data={"lm-eval:ifeval": str(hub)},
                          output=None, cache=False)
    assert [r.prompt for r in bare.requests] == [r.prompt for r in catalog.requests]
    rows, lm_rows = native.samples["ifeval"], lm.samples["lm-eval:ifeval"]
    assert len(rows) == len(lm_rows) == 40
    for a, b in zip(rows, lm_rows):
        if a["doc_id"] in RANDOM_IN_REFERENCE:
            continue
        values = b["extra"]["lm_eval"]["values"]
        assert a["extra"]["inst_level_strict_acc"] == values["inst_level_strict_acc"]
        assert a["extra"]["inst_level_loose_acc"] == values["inst_level_loose_acc"]
        assert a["metrics"]["prompt_level_loose_acc"] == float(b["metrics"]["prompt_level_loose_acc"])
    m = native.tasks["ifeval"].metrics
    assert m["prompt_level_strict_acc"].value == pytest.approx(
        sum(r["metrics"]["prompt_level_strict_acc"] for r in rows) / 40)
    inst = m["inst_level_loose_acc"]
    flat = [x for r in rows for x in r["extra"]["inst_level_loose_acc"]]
    assert inst.value == pytest.approx(sum(flat) / len(flat)) and inst.ci_low < inst.value < inst.ci_high
    from evalkit.run.suite_summary import bench_rows  # the leaderboard-v2 IFEval score reads the native rows
    from evalkit.scoring.leaderboard_v2 import score
    strict = [x for r in rows for x in r["extra"]["inst_level_strict_acc"]]
    assert score(bench_rows("ifeval", "ifeval", rows)) == pytest.approx(
        (m["prompt_level_strict_acc"].value + sum(strict) / len(strict)) / 2 * 100)
    b = native.tasks["ifeval"].breakdowns
    assert "instruction:punctuation:no_comma" in b and "category:keywords" in b
    assert sum(g["strict"].n for k, g in b.items() if k.startswith("instruction:")) == len(flat)


def test_bad_data_names_the_line_and_field(tmp_path):
    rows = [json.loads(line) for line in open(DATA)][:3]
    rows[2]["kwargs"][0] = {}
    bad = tmp_path / "input_data.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as e:
        evalkit.evaluate(model=echo(), tasks=["ifeval"], data={"ifeval": str(bad)}, output=None, cache=False)
    msg = str(e.value)
    assert "input_data.jsonl" in msg and ":3" in msg and "kwargs" in msg and "\n" not in msg


@pytest.mark.slow
@pytest.mark.vllm
def test_bundled_model_responses_to_all_541_prompts_equal_the_reference(reference, records, vllm_backend):
    """The bundled model's real answers (chat template, 32 tokens) to every prompt: every verdict
    and all four figures equal lm-eval's ``process_results`` and aggregation on the same text."""
    from evalkit.run.cache import NullCache
    from evalkit.run.config import RunConfig
    from evalkit.run.runner import evaluate
    cfg = RunConfig(tasks=["ifeval"], gen_overrides={"max_tokens": 32}, data_paths={"ifeval": str(DATA)})
    out = evaluate(vllm_backend, cfg, NullCache(), None, progress=False)
    rows = out.samples["ifeval"]
    assert len(rows) == 541
    by_key = {str(r["key"]): r for r in records}
    agg = {k: [] for k in ("prompt_level_strict_acc", "prompt_level_loose_acc", "inst_level_strict_acc",
                           "inst_level_loose_acc")}
    differ = 0
    for row in rows:
        want = reference.process_results(by_key[row["doc_id"]], [row["responses"][0]])
        got = {**{k: bool(row["metrics"][k]) for k in ("prompt_level_strict_acc", "prompt_level_loose_acc")},
               "inst_level_strict_acc": row["extra"]["inst_level_strict_acc"],
               "inst_level_loose_acc": row["extra"]["inst_level_loose_acc"]}
        if row["doc_id"] in RANDOM_IN_REFERENCE:
            differ += got != want
            want = got
        assert got == want, (row["doc_id"], row["responses"][0][:80])
        for k in agg:
            agg[k] += want[k] if isinstance(want[k], list) else [want[k]]
    assert differ <= 2
    m = out.tasks["ifeval"].metrics
    for k, v in agg.items():
        assert m[k]["value"] == pytest.approx(sum(v) / len(v)), k
        assert m[k]["ci_low"] < m[k]["value"] < m[k]["ci_high"]
    assert len({r["responses"][0] for r in rows}) > 400, "real, varied answers"
