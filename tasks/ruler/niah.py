"""RULER's needle-in-a-haystack generator (NVIDIA/RULER ``scripts/data/synthetic/niah.py``, as lm-eval
ports it in ``lm_eval/tasks/ruler/prepare_niah.py``), step for step, with its random draws taken
from a ``random.Random`` the caller gives instead of the global ``random`` module.

Called with one generator for the whole set (``seeding=sequential``) it makes exactly lm-eval's
samples when lm-eval's global ``random`` is seeded with the same seed (tested). evalkit's default
(``seeding=item``) gives the haystack-size search and every sample their own generators, seeded from
the run seed, the task, the length and the sample index, so a sample does not change with ``--limit``.
"""
from __future__ import annotations

import random
import re
import uuid
from functools import lru_cache
from typing import Callable, Optional

NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
TEMPLATE = ("Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
            "I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic "
            "{type_needle_v} for {query} mentioned in the provided text?")
REPEAT = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
DEPTHS = [round(x) for x in (100 * i / 39 for i in range(40))]  # np.round(np.linspace(0, 100, 40)): half to even
RANDOM_SEED = 42


@lru_cache(maxsize=1)
def words() -> list:
    """RULER's keys: every adjective-noun pair of ``wonderwords``' lists, sorted (6.2M; built once)."""
    import wonderwords
    r = wonderwords.RandomWord()
    return sorted({f"{a}-{n}" for a in r._categories["adjectives"] for n in r._categories["nouns"]})


def haystack(kind: str, essay_text: Optional[str] = None):
    if kind == "repeat":
        return REPEAT
    if kind == "needle":
        return NEEDLE
    if kind == "essay":
        if not essay_text:
            raise ValueError("the essay haystack needs its text (Paul Graham's essays: --data TASK=FILE)")
        return re.sub(r"\s+", " ", essay_text).split(" ")
    raise ValueError(f"unknown haystack {kind!r}")


def random_value(rng: random.Random, kind: str) -> str:
    if kind == "numbers":
        return str(rng.randint(10 ** 6, 10 ** 7 - 1))
    if kind == "words":
        return rng.choice(words())
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    raise ValueError(f"{kind} is not implemented.")


def input_output(rng: random.Random, num_haystack: int, hay, *, type_haystack: str, num_needle_k: int,
                 type_needle_k: str, num_needle_v: int, type_needle_v: str, template: str, num_needle_q: int = 1,
                 random_seed: int = RANDOM_SEED, sent_tokenize: Optional[Callable] = None) -> tuple:
    """(prompt, answers, query, needles) as RULER's ``generate_input_output``."""
    keys, values, needles = [], [], []
    for _ in range(num_needle_k):
        keys.append(random_value(rng, type_needle_k))
        value = []
        for _ in range(num_needle_v):
            value.append(random_value(rng, type_needle_v))
            needles.append(NEEDLE.format(type_needle_v=type_needle_v, key=keys[-1], value=value[-1]))
        values.append(value)
    random.Random(random_seed).shuffle(needles)
    if type_haystack == "essay":
        sents = sent_tokenize(" ".join(hay[:num_haystack]).strip())
        cuts = [0] + sorted(int(len(sents) * (d / 100)) for d in rng.sample(DEPTHS, len(needles))) + [len(sents)]
        parts = []
        for i in range(1, len(cuts)):
            parts.append(" ".join(sents[cuts[i - 1]:cuts[i]]))
            if i - 1 < len(needles):
                parts.append(needles[i - 1])
        context = " ".join(parts)
    else:
        if type_haystack == "repeat":
            sentences = [hay] * num_haystack
        else:
            sentences = [hay.format(type_needle_v=type_needle_v, key=random_value(rng, type_needle_k),
                                    value=random_value(rng, type_needle_v)) for _ in range(num_haystack)]
        for index, element in zip(sorted(rng.sample(range(num_haystack), len(needles)), reverse=True), needles):
            sentences.insert(index, element)
        context = "\n".join(sentences)
    indices = rng.sample(range(num_needle_k), num_needle_q)
    queries = [keys[i] for i in indices]
    answers = [a for i in indices for a in values[i]]
    query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
    if num_needle_q * num_needle_v == 1:
        template = template.replace("Some", "A").replace("are all", "is").replace("are", "is")
        template = template.replace("answers", "answer")
        type_needle_v = type_needle_v[:-1]
    return template.format(type_needle_v=type_needle_v, context=context, query=query), answers, query, needles


def generate(count_tokens: Callable[[str], int], hay, *, max_seq_length: int, type_haystack: str,
             type_needle_k: str, type_needle_v: str, template: str = TEMPLATE, num_samples: int = 500,
             tokens_to_generate: int = 128, num_needle_v: int = 1, num_needle_k: int = 1, num_needle_q: int = 1,
             random_seed: int = RANDOM_SEED, size_rng: random.Random, sample_rng: Callable[[int], random.Random],
             sent_tokenize: Optional[Callable] = None) -> list[dict]:
    """RULER's ``generate_samples``: find the haystack size that fills ``max_seq_length`` (with
    ``size_rng``), then each sample (with ``sample_rng(index)``), shrinking its haystack until it fits."""
    num_needle_k = max(num_needle_k, num_needle_q)
    num_needles = num_needle_k * num_needle_v
    incremental = 500 if type_haystack == "essay" else 25
    if type_haystack != "essay" and max_seq_length < 4096:
        incremental = 5
    kw = dict(type_haystack=type_haystack, num_needle_k=num_needle_k, type_needle_k=type_needle_k,
              num_needle_v=num_needle_v, type_needle_v=type_needle_v, template=template,
              num_needle_q=num_needle_q, random_seed=random_seed, sent_tokenize=sent_tokenize)
    num_haystack = max(incremental, num_needles)
    total = 0
    while total + tokens_to_generate < max_seq_length:
        text, answer, _, _ = input_output(size_rng, num_haystack, hay, **kw)
        total = count_tokens(text + " ".join(answer))
        if total + tokens_to_generate > max_seq_length:
            num_haystack -= incremental
            break
        if type_haystack == "essay" and num_haystack > len(hay):
            num_haystack = len(hay)
            break
        if num_haystack > max_seq_length:
            raise ValueError(f"haystack {type_haystack!r} grew past {max_seq_length} units without filling "
                             f"{max_seq_length} tokens: the tokenizer under-reports lengths")
        num_haystack += incremental
    num_haystack = max(num_haystack, num_needles)
    out = []
    for index in range(num_samples):
        rng, used, sample = sample_rng(index), num_haystack, None
        while used > 0:
            try:
                text, answer, query, needles = input_output(rng, used, hay, **kw)
                length = count_tokens(text) + tokens_to_generate
                if length <= max_seq_length:
                    sample = (text, answer, query, needles, length)
                    break
            except ValueError:  # rng.sample larger than the population: try smaller
                pass
            used -= incremental
        if sample is None:
            continue
        text, answer, query, needles, length = sample
        v = type_needle_v
        out.append({"index": index, "input": text, "outputs": answer, "length": length,
                    "max_length": max_seq_length, "needles": needles, "haystack_units": used,
                    "gen_prefix": (f"The special magic {v[:-1]} for {query} mentioned in the provided text is"
                                   if num_needle_q * num_needle_v == 1
                                   else f"The special magic {v} for {query} mentioned in the provided text are")})
    if not out:
        raise ValueError(f"no {type_haystack} sample fits {max_seq_length} tokens with {num_needles} needle(s) and "
                         f"{tokens_to_generate} generated tokens: ask for a longer length")
    return out
