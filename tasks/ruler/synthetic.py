"""RULER's variable tracking (``vt``), common-words extraction (``cwe``) and frequent-words extraction
(``fwe``) generators (NVIDIA/RULER ``scripts/data/synthetic/variable_tracking.py``,
``common_words_extraction.py``, ``freq_words_extraction.py``), step for step as lm-eval ports them
(``lm_eval/tasks/ruler/vt_utils.py``, ``cwe_utils.py``, ``fwe_utils.py``).

What differs: every random draw comes from generators the caller gives, not the global ``random`` /
``numpy.random`` state. ``Draws`` bundles the three streams RULER uses: ``py`` (its global ``random``),
``np`` (``numpy.random``: variable tracking's values) and ``shuffle`` (cwe's module-level
``RNG = random.Random(42)``, a stream that lm-eval carries across lengths and runs). Given one shared
set of streams (``seeding=sequential``) the output is exactly lm-eval's (tested); evalkit's default
seeds each sample's streams from the run seed and the sample. Where lm-eval would loop forever on a
sample that cannot fit (its bare ``except`` retry), this raises ``ValueError``.
"""
from __future__ import annotations

import math
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .niah import REPEAT


@dataclass
class Draws:
    py: random.Random
    np: np.random.RandomState
    shuffle: random.Random

    @classmethod
    def seeded(cls, seed: int) -> Draws:
        return cls(random.Random(seed), np.random.RandomState(seed % 2 ** 32), random.Random(seed ^ 0x5EED))


# ---------------------------------------------------------------- variable tracking
VT_TEMPLATE = ("Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
               "Question: Find all variables that are assigned the value {query} in the text above.")
VT_PREFIX = (" Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables "
             "are assgined the value {query}, they are: ")  # RULER's spelling


def vt_chains(d: Draws, num_chains: int, num_hops: int, is_icl: bool = False):
    k = 3 if is_icl else 5
    num_hops = min(10, num_hops) if is_icl else num_hops
    vars_all = ["".join(d.py.choices(string.ascii_uppercase, k=k)) for _ in range((num_hops + 1) * num_chains)]
    while len(set(vars_all)) < num_chains * (num_hops + 1):
        vars_all.append("".join(d.py.choices(string.ascii_uppercase, k=k)))
    out_vars, chains = [], []
    for i in range(0, len(vars_all), num_hops + 1):
        v = vars_all[i:i + num_hops + 1]
        out_vars.append(v)
        chain = [f"VAR {v[0]} = {d.np.randint(10000, 99999)}"]
        chain += [f"VAR {v[j + 1]} = VAR {v[j]} " for j in range(num_hops)]
        chains.append(chain)
    return out_vars, chains


def vt_input_output(d: Draws, num_noises: int, num_chains: int, num_hops: int, is_icl: bool = False):
    """(prompt with answer prefix, answer variables, chain statements) as RULER's ``generate_input_output``."""
    variables, chains = vt_chains(d, num_chains, num_hops, is_icl)
    sentences = [REPEAT + "\n"] * num_noises
    if len(sentences) <= len(chains[0]):
        sentences = [n + "." if n.strip() else n for n in [x for s in sentences for x in s.split(".")]]
        if len(sentences) <= len(chains[0]):
            chains = [c[:len(sentences) - 1] for c in chains]
    for chain in chains:
        positions = sorted(d.py.sample(range(len(sentences)), len(chain)))
        for j, at in enumerate(positions):
            sentences.insert(at + j, chain[j])
    context = " ".join(sentences).replace(". \n", ".\n")
    value = chains[0][0].split("=")[-1].strip()
    text = (VT_TEMPLATE + VT_PREFIX).format(context=context, query=value, num_v=num_hops + 1)
    return text, variables[0], [c.strip() for ch in chains for c in ch]


def vt_randomize_icl(d: Draws, icl: str) -> str:
    cut = icl.index(VT_PREFIX[-10:])
    for item in icl[cut + 10:].strip().split():
        icl = icl.replace(item, "".join(d.py.choices(string.ascii_uppercase, k=len(item))))
    return icl


def vt_generate(count: Callable[[str], int], *, max_seq_length: int, num_samples: int, size_draws: Draws,
                sample_draws: Callable[[int], Draws], incremental: int = 10, num_chains: int = 1, num_hops: int = 4,
                add_fewshot: bool = True, tokens_to_generate: int = 30, icl_example: dict | None = None) -> list:
    """RULER's ``sys_vartrack_w_noise_random``."""
    example_tokens, icl = 0, None
    if add_fewshot and icl_example is not None:
        icl = icl_example["input"] + " " + " ".join(icl_example["outputs"]) + "\n\n"
        example_tokens = count(icl)
    is_icl = add_fewshot and icl_example is None
    num_noises, total = incremental, 0
    while total + tokens_to_generate + example_tokens < max_seq_length:
        text, answer, _ = vt_input_output(size_draws, num_noises, num_chains, num_hops, is_icl)
        total = count(text + f" {answer}")
        if total + tokens_to_generate + example_tokens > max_seq_length:
            num_noises -= incremental
            break
        num_noises += incremental
    out = []
    for index in range(num_samples):
        d, used = sample_draws(index), num_noises
        while True:
            text, answer, chains = vt_input_output(d, used, num_chains, num_hops, is_icl)
            length = count(text) + tokens_to_generate + example_tokens
            if length <= max_seq_length:
                break
            if used <= incremental:
                raise ValueError(f"variable tracking: no sample fits {max_seq_length} tokens")
            used -= incremental
        if icl is not None:
            cut = text.index(VT_TEMPLATE[:20])
            text = text[:cut] + vt_randomize_icl(d, icl) + "\n\n" + text[cut:]
        at = text.rfind(" Answer: According to the chain(s) of variable assignment")
        gen_prefix = text[at:].strip()
        if icl is not None:
            text = text[:at]
        out.append({"index": index, "input": text, "outputs": answer, "length": length,
                    "max_length": max_seq_length, "gen_prefix": gen_prefix, "needles": chains})
    return out


def vt_dataset(count, *, max_seq_length: int, num_samples: int, icl_draws: Draws, size_draws: Draws,
               sample_draws: Callable[[int], Draws]) -> list:
    """lm-eval's ``vt_utils.get_dataset``: a 500-token in-context example, then the samples."""
    icl = vt_generate(count, max_seq_length=500, num_samples=1, incremental=5, size_draws=icl_draws,
                      sample_draws=lambda i: icl_draws)[0]
    return vt_generate(count, max_seq_length=max_seq_length, num_samples=num_samples, size_draws=size_draws,
                       sample_draws=sample_draws, icl_example=icl)


# ---------------------------------------------------------------- common words
CWE_TEMPLATE = ("Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
                "ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above "
                "list?")
CWE_PREFIX = " Answer: The top 10 words that appear most often in the list are:"


@lru_cache(maxsize=1)
def cwe_words() -> list:
    """``wonderwords``' nouns, adjectives and verbs, sorted, shuffled with ``Random(42)`` (RULER's)."""
    import wonderwords
    r = wonderwords.RandomWord()
    words = sorted({w for x in ["noun", "adjective", "verb"] for w in r._categories[x]})
    random.Random(42).shuffle(words)
    return words


def _numbered(words: list) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))


def cwe_example(d: Draws, num_words: int, common_repeats: int, uncommon_repeats: int, common_nums: int = 10):
    full = d.py.sample(cwe_words(), num_words)
    common, uncommon = full[:common_nums], full[common_nums:]
    words = common * int(common_repeats) + uncommon * int(uncommon_repeats)
    d.shuffle.shuffle(words)
    return _numbered(words), common


def cwe_input_output(d: Draws, num_words: int, max_seq_length: int):
    if max_seq_length < 4096:
        ex_context, ex_answer = cwe_example(d, 20, 3, 1)
        context, answer = cwe_example(d, num_words, 6, 1)
    else:
        ex_context, ex_answer = cwe_example(d, 40, 10, 3)
        context, answer = cwe_example(d, num_words, 30, 3)
    template = CWE_TEMPLATE + CWE_PREFIX
    example = template.format(context=ex_context) + _numbered(ex_answer)
    return example, template.format(context=context), answer


def cwe_generate(count: Callable[[str], int], *, max_seq_length: int, num_samples: int, size_draws: Draws,
                 sample_draws: Callable[[int], Draws], incremental: int = 10, tokens_to_generate: int = 120) -> list:
    """RULER's ``sys_word_pair_random`` as lm-eval ports it (the in-context example is drawn, recorded as
    ``input_example``, and not put in the prompt: lm-eval's ``doc_to_text`` is ``{{input}}``)."""
    num_words, total = incremental, 0
    while total + tokens_to_generate < max_seq_length:
        example, text, answer = cwe_input_output(size_draws, num_words, max_seq_length)
        total = count(example + "\n" + text + " " + _numbered(answer))
        if total + tokens_to_generate > max_seq_length:
            num_words -= incremental
            break
        num_words += incremental
        if num_words > len(cwe_words()):
            num_words = len(cwe_words())
            break
    out = []
    for index in range(num_samples):
        d, used = sample_draws(index), num_words
        while True:
            example, text, answer = cwe_input_output(d, used, max_seq_length)
            length = count(text) + tokens_to_generate
            if length <= max_seq_length:
                break
            if used <= incremental:
                raise ValueError(f"common words: no sample fits {max_seq_length} tokens")
            used -= incremental
        out.append({"index": index, "input": text[:text.rfind(CWE_PREFIX)].strip(), "input_example": example,
                    "outputs": answer, "length": length, "max_length": max_seq_length,
                    "gen_prefix": CWE_PREFIX.strip(), "needles": []})
    return out


# ---------------------------------------------------------------- frequent words
FWE_TEMPLATE = ("Read the following coded text and track the frequency of each coded word. Find the three most "
                "frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore "
                "the dots '....'. What are the three most frequently appeared words in the above coded text?")
FWE_PREFIX = " Answer: According to the coded text above, the three most frequently appeared words are:"
FWE_SEED = 42


def _zeta(alpha: float) -> float:
    if alpha == 2.0:
        return math.pi ** 2 / 6  # == scipy.special.zeta(2.0) to the last bit
    from scipy.special import zeta
    return float(zeta(alpha))


def fwe_input_output(d: Draws, count, max_len: int, num_words: int = -1, coded_wordlen: int = 6,
                     vocab_size: int = 2000, incremental: int = 10, alpha: float = 2.0):
    vocab = ["".join(d.py.choices(string.ascii_lowercase, k=coded_wordlen)) for _ in range(vocab_size)]
    while len(set(vocab)) < vocab_size:
        vocab.append("".join(d.py.choices(string.ascii_lowercase, k=coded_wordlen)))
    vocab = sorted(set(vocab))
    random.Random(FWE_SEED).shuffle(vocab)
    vocab[0] = "..."  # the top-ranked word is noise
    template = FWE_TEMPLATE + FWE_PREFIX

    def text_of(n):
        k = np.arange(1, len(vocab) + 1)
        counts = (n * (k ** -alpha) / _zeta(alpha)).astype(int)
        words = [w for w, c in zip(vocab, counts) for _ in range(c)]
        random.Random(FWE_SEED).shuffle(words)
        return template.format(context=" ".join(words)), vocab[1:4]

    if num_words > 0:
        text, answer = text_of(num_words)
        while count(text) > max_len:
            num_words -= incremental
            text, answer = text_of(num_words)
    else:
        num_words = max_len // coded_wordlen
        text, answer = text_of(num_words)
        while count(text) < max_len:
            num_words += incremental
            text, answer = text_of(num_words)
        num_words -= incremental
    text, answer = text_of(num_words)
    return text, answer, num_words


def fwe_generate(count: Callable[[str], int], *, max_seq_length: int, num_samples: int, size_draws: Draws,
                 sample_draws: Callable[[int], Draws], vocab_size: int = -1, coded_wordlen: int = 6,
                 alpha: float = 2.0, tokens_to_generate: int = 50) -> list:
    """RULER's ``sys_kwext``. As in RULER, the text is sized to ``max_seq_length`` without room for the
    answer, so ``length`` (prompt + 50) can pass ``max_seq_length`` by up to 50 tokens."""
    vocab_size = max_seq_length // 50 if vocab_size == -1 else vocab_size
    kw = {"coded_wordlen": coded_wordlen, "vocab_size": vocab_size, "incremental": max_seq_length // 32, "alpha": alpha}
    _, _, n = fwe_input_output(size_draws, count, max_seq_length, **kw)
    out = []
    for index in range(num_samples):
        text, answer, _ = fwe_input_output(sample_draws(index), count, max_seq_length, num_words=n, **kw)
        out.append({"index": index, "input": text[:text.rfind(FWE_PREFIX)].strip(), "outputs": answer,
                    "length": count(text) + tokens_to_generate, "max_length": max_seq_length,
                    "gen_prefix": FWE_PREFIX.strip(), "needles": []})
    return out
