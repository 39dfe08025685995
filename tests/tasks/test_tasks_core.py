"""wikitext and gsm8k: data handling and scoring, pinned on the real data."""
from __future__ import annotations

import pytest

from evalkit.scoring.answers import FLEXIBLE_NUMBER, INVALID, lm_eval_exact_match, numbers_equal, regex_extract
from evalkit.taskapi.requests import Completion
from evalkit.taskapi.task import RunContext
from tests.conftest import shared


def test_wikitext_pages_match_the_hub_document_split():
    from evalkit.tasks.wikitext import WikiText, split_pages
    text = " \n = A = \n \n Body a . \n \n = = Sub = = \n \n more \n = B = \n \n Body b \n"
    pages = split_pages(text)
    assert len(pages) == 2 and pages[0].startswith(" = A = ") and "= = Sub = =" in pages[0]
    docs = WikiText(data_path=str(shared("wikitext"))).eval_docs()
    assert len(docs) == 62  # EleutherAI/wikitext_document_level wikitext-2-raw-v1 test has 62 pages
    assert docs[0].query.startswith(" = Robert Boulter =\n\nRobert Boulter is")
    assert docs[0].meta["words"] > 1000


def test_wikitext_detokenizer():
    from evalkit.tasks.wikitext import detokenize
    assert detokenize("a @-@ b , c @,@ 000 ( x ) = = T = =") == "a-b, c,000 (x) == T =="


def test_gsm8k_prompt_is_lm_eval_format():
    from evalkit.tasks.gsm8k import GSM8K
    t = GSM8K(data_path=str(shared("gsm8k")))
    doc = t.eval_docs()[0]
    prompt = t.prompt_text(doc, RunContext())
    shots = t.fewshot_pool()[:5]
    assert prompt.startswith("Question: " + shots[0].query[len("Question: "):])
    assert prompt.count("Question: ") == 6 and prompt.endswith(doc.query)
    assert f"\nAnswer: {shots[0].target}\n\nQuestion: " in prompt


@pytest.mark.parametrize("text,strict,flexible", [
    ("She makes 9 * 2 = $<<9*2=18>>18.\n#### 18", "18", "18"),
    ("so 1,072.00 dollars\n#### 1,072.00", "1,072.00", "1,072.00"),
    ("The answer is $5.", INVALID, "$5."),
    ("no number here", INVALID, INVALID),
    ("#### -3", "-3", "-3"),
])
def test_gsm8k_extraction(text, strict, flexible):
    assert regex_extract(text, r"#### (\-?[0-9\.\,]+)") == strict
    assert regex_extract(text, FLEXIBLE_NUMBER, group_select=-1) == flexible


def test_gsm8k_matching_strict_flexible_numeric():
    gold = "Janet sells ... #### 1072"
    assert lm_eval_exact_match("1,072", gold) == 1.0
    assert lm_eval_exact_match("1072.00", gold) == 0.0, "lm-eval compares strings"
    assert numbers_equal("1,072.00", "1072") == 1.0
    assert numbers_equal("$5.", "5") == 1.0
    assert numbers_equal(INVALID, "5") == 0.0


def test_gsm8k_scores_a_response():
    from evalkit.tasks.gsm8k import GSM8K
    t = GSM8K(data_path=str(shared("gsm8k")))
    doc = t.eval_docs()[0]  # Janet's ducks: 18
    s = t.score(doc, [[Completion(" 16-3-4=9 eggs, 9*2 = 18.00 dollars\n#### 18.00", "stop")]], RunContext())
    assert s.metrics == {"exact_match_strict": 0.0, "exact_match_flexible": 0.0, "exact_match_numeric": 1.0}
    assert s.extracted == {"strict": "18.00", "flexible": "18.00"} and s.target == "18"
