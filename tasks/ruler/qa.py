"""RULER's question answering (``qa_1``: SQuAD 2.0, ``qa_2``: HotpotQA; NVIDIA/RULER
``scripts/data/synthetic/qa.py``), step for step as lm-eval ports it (``lm_eval/tasks/ruler/qa_utils.py``):
a question's own paragraphs, then paragraphs of the same article (SQuAD), then any other paragraphs,
drawn until the prompt fills the asked length, shuffled with RULER's fixed ``Random(42)`` and numbered
"Document i:"; RULER's template, answer prefix "Answer:", 32 new tokens, scored ``string_match_part``.

What differs from lm-eval: every draw comes from a ``random.Random`` the caller gives (lm-eval uses the
global ``random``); with one generator for the whole set (``seeding=sequential``) the samples are
lm-eval's, sample for sample (tested). When every paragraph of the corpus fits (SQuAD past ~190k
tokens), RULER and lm-eval shuffle their cached paragraph list in place, which reorders it for the
samples after; here a copy is shuffled. A question whose own paragraphs cannot fit the length is
skipped by lm-eval (with a warning); here it is reported to the caller (``skipped``).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from evalkit.taskapi.data import DataError

TEMPLATE = ("Answer the question based on the given documents. Only give me the answer and do not output any other "
            "words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the given "
            "documents. Only give me the answer and do not output any other words.\n\nQuestion: {query}")
ANSWER_PREFIX = "Answer:"
DOCUMENT_PROMPT = "Document {i}:\n{document}"
SEED = 42
TOKENS_TO_GENERATE = 32


def read_squad(data, where: str = "squad") -> tuple[list[dict], list[str]]:
    """(questions, paragraphs) of SQuAD 2.0's JSON as RULER reads them: the distinct paragraphs, sorted;
    each answerable question with its answers, its paragraph and the other paragraphs of its article."""
    try:
        docs = sorted({p["context"] for d in data["data"] for p in d["paragraphs"]})
        at = {c: i for i, c in enumerate(docs)}
        qas = []
        for d in data["data"]:
            more = [at[p["context"]] for p in d["paragraphs"]]
            for p in d["paragraphs"]:
                for q in p["qas"]:
                    if not q["is_impossible"]:
                        qas.append({"query": q["question"], "outputs": [a["text"] for a in q["answers"]],
                                    "context": [at[p["context"]]],
                                    "more_context": [i for i in more if i != at[p["context"]]]})
    except (KeyError, TypeError) as e:
        raise DataError(f"{where}: not SQuAD 2.0's JSON (data / paragraphs / context / qas / question / answers / "
                        f"is_impossible): {type(e).__name__} {e}") from None
    return qas, docs


def read_hotpotqa(data, where: str = "hotpotqa") -> tuple[list[dict], list[str]]:
    """(questions, paragraphs) of HotpotQA's distractor-setting JSON as RULER reads them: each paragraph is
    "title\\nsentences"; a question's own documents are its ten (two gold, eight distractors)."""
    try:
        def doc(t, p):
            return f"{t}\n{''.join(p)}"
        docs = sorted({doc(t, p) for d in data for t, p in d["context"]})
        at = {c: i for i, c in enumerate(docs)}
        qas = [{"query": d["question"], "outputs": [d["answer"]], "context": [at[doc(t, p)] for t, p in d["context"]]}
               for d in data]
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{where}: not HotpotQA's JSON (records with question, answer, context [[title, "
                        f"sentences]]): {type(e).__name__} {e}") from None
    return qas, docs


READERS = {"squad": read_squad, "hotpotqa": read_hotpotqa}
_CORPORA: dict = {}


def corpus(kind: str, path: Path, load) -> tuple[list[dict], list[str]]:
    """``READERS[kind]`` on the JSON ``load()`` gives, once per file (and file state) per process."""
    st = path.stat()
    key = (kind, str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _CORPORA:
        _CORPORA[key] = READERS[kind](load(), str(path))
    return _CORPORA[key]


def input_output(rng: random.Random, index: int, num_docs: int, qas: list[dict], docs: list[str],
                 template: str = TEMPLATE) -> tuple[str, list[str], list[str]]:
    """(prompt, answers, the question's own paragraphs) as RULER's ``generate_input_output``."""
    q = qas[index]
    curr_docs, curr_more = q["context"], q.get("more_context", [])
    if num_docs < len(docs):
        if num_docs - len(curr_docs) > len(curr_more):
            taken = set(curr_docs + curr_more)
            addition = [i for i in range(len(docs)) if i not in taken]
            picked = curr_docs + curr_more + rng.sample(addition, max(0, num_docs - len(curr_docs) - len(curr_more)))
        else:
            picked = curr_docs + rng.sample(curr_more, max(0, num_docs - len(curr_docs)))
        chosen = [docs[i] for i in picked]
    else:
        chosen = list(docs)
    random.Random(SEED).shuffle(chosen)
    context = "\n\n".join(DOCUMENT_PROMPT.format(i=i + 1, document=d) for i, d in enumerate(chosen))
    return template.format(context=context, query=q["query"]), q["outputs"], [docs[i] for i in curr_docs]


def generate(count_tokens: Callable[[str], int], qas: list[dict], docs: list[str], *, max_seq_length: int,
             num_samples: int, size_rng: random.Random, sample_rng: Callable[[int], random.Random],
             tokens_to_generate: int = TOKENS_TO_GENERATE, incremental: int = 10, pre_samples: int = 0) -> dict:
    """lm-eval's ``qa_utils.generate_samples``: the number of paragraphs that fills ``max_seq_length`` for
    question 0 (drawn with ``size_rng``), then question ``i`` with ``sample_rng(i)``, with fewer paragraphs
    until it fits. ``{"samples": [...], "skipped": [indices whose own paragraphs do not fit]}``."""
    if num_samples + pre_samples > len(qas):
        raise ValueError(f"RULER qa: {num_samples + pre_samples} samples asked, the data has {len(qas)} questions")
    num_docs, total = incremental, 0
    while total + tokens_to_generate < max_seq_length:
        text, answer, _ = input_output(size_rng, 0, num_docs, qas, docs)
        total = count_tokens(text + f" {answer}")
        if total + tokens_to_generate > max_seq_length:
            num_docs -= incremental
            break
        num_docs += incremental
        if num_docs > len(docs):
            num_docs = len(docs)
            break
    num_docs = max(num_docs, 1)
    out, skipped = [], []
    for index in range(num_samples):
        rng, q = sample_rng(index), index + pre_samples
        min_docs = len(qas[q]["context"])
        sample = None
        for used in [*range(max(num_docs, min_docs), min_docs, -incremental), min_docs]:
            try:
                text, answer, own = input_output(rng, q, used, qas, docs)
            except ValueError:  # more paragraphs asked than there are: try fewer
                continue
            length = count_tokens(text) + tokens_to_generate
            if length <= max_seq_length:
                sample = (text, answer, own, length, used)
                break
        if sample is None:
            skipped.append(index)
            continue
        text, answer, own, length, used = sample
        out.append({"index": index, "input": text, "outputs": answer, "length": length,
                    "max_length": max_seq_length, "gen_prefix": ANSWER_PREFIX, "needles": own,
                    "haystack_units": used})
    return {"samples": out, "skipped": skipped}


def string_match_part(pred: str, refs: list) -> float:
    """RULER's ``string_match_part`` for one sample: 1 when any reference is in the prediction
    (case-insensitive), else 0."""
    return max(float(r.lower() in pred.lower()) for r in refs)
