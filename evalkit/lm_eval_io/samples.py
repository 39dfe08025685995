"""One lm-eval sample (a line of ``samples_<task>_<date>.jsonl``) read into the parts of an evalkit
sample row: prompt, responses, per-sample metric values, extracted answers; and metric naming.

lm-eval writes one line per (doc, filter); its metric values sit at the top level of the line,
named in its ``metrics`` list (0.4.2+; older lines are read by their numeric fields). Metric names
become ``METRIC`` for the ``none`` filter and ``METRIC,FILTER`` otherwise (as lm-eval's results
keys), except the two GSM8K-style filters, which get evalkit's names so that runs pair.
"""
from __future__ import annotations

import math

#: (lm-eval metric, filter) -> evalkit's name for it
RENAMES = {("exact_match", "strict-match"): "exact_match_strict",
           ("exact_match", "flexible-extract"): "exact_match_flexible"}
#: a task entry's figures beside its metrics, kept in an exported config's metadata for the way back
ENTRY_FIGURES = ("breakdowns", "budget", "verifier_hash", "best_of_n", "grpo")
#: lm-eval's filter names -> the keys evalkit's tasks give their extracted answers under
EXTRACTED_KEYS = {"strict-match": "strict", "flexible-extract": "flexible"}
_SAMPLE_FIELDS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
                  "doc_hash", "prompt_hash", "target_hash", "evalkit"}
#: lm-eval output types -> evalkit's
OUTPUT_TYPES = {"multiple_choice": "multiple_choice", "generate_until": "generate",
                "loglikelihood": "multiple_choice", "loglikelihood_rolling": "loglikelihood_rolling"}


def metric_name(metric: str, filt: str) -> str:
    if filt in ("none", "", None):
        return metric
    return RENAMES.get((metric, filt), f"{metric},{filt}")


def split_results_key(key: str) -> tuple[str, str]:
    """``acc,none`` -> (acc, none); a key without a filter (lm-eval 0.4.0) -> (key, none)."""
    metric, _, filt = key.partition(",")
    return metric, filt or "none"


def number(v):
    """A finite float from a sample's metric value, or None (lists, strings, N/A, NaN)."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def arguments(sample: dict) -> list[list]:
    """The requests of a sample as [arg_0, arg_1, ...] lists (0.4.4+ dicts or older lists)."""
    args = sample.get("arguments") or []
    if isinstance(args, dict):
        out = []
        for k in sorted(args, key=lambda k: int(k.rsplit("_", 1)[-1]) if k.rsplit("_", 1)[-1].isdigit() else 0):
            v = args[k]
            out.append([v[a] for a in sorted(v)] if isinstance(v, dict) else list(v))
        return out
    return [list(a) if isinstance(a, (list, tuple)) else [a] for a in args]


def prompt_of(sample: dict):
    """The context the model read: one string (every request shares it), or the list of them."""
    contexts = []
    for a in arguments(sample):
        if a and isinstance(a[0], str) and a[0] not in contexts:
            contexts.append(a[0])
    if not contexts:
        return ""
    return contexts[0] if len(contexts) == 1 else contexts


def _as_bool(v) -> bool:
    return v if isinstance(v, bool) else str(v).strip().lower() == "true"


def responses_of(sample: dict, output_type: str) -> list:
    """evalkit's response shapes: [[logprob, is_greedy], ...] per choice, [texts], [total logprob]."""
    resps = sample.get("resps") or []
    if output_type in ("multiple_choice", "loglikelihood"):
        out = []
        for r in resps:
            x = r[0] if r and isinstance(r[0], (list, tuple)) else r
            out.append([float(x[0]), _as_bool(x[1]) if len(x) > 1 else False])
        return out
    if output_type == "generate_until":
        return [t for r in resps[:1] for t in (r if isinstance(r, list) else [r])]
    if output_type == "loglikelihood_rolling":
        first = resps[0] if resps else None
        while isinstance(first, (list, tuple)):
            first = first[0] if first else None
        return [float(first)] if first is not None else []
    return resps


def metric_values(sample: dict) -> dict:
    """{evalkit metric name: float} of one lm-eval line (its filter applied to the name)."""
    filt = sample.get("filter", "none")
    names = sample.get("metrics")
    if not isinstance(names, list):
        names = [k for k in sample if k not in _SAMPLE_FIELDS]
    out = {}
    for m in names:
        v = number(sample.get(m))
        if v is not None:
            out[metric_name(m, filt)] = v
    return out


def extracted_of(lines: list[dict], output_type: str, responses: list):
    if output_type in ("multiple_choice", "loglikelihood") and responses:
        return max(range(len(responses)), key=lambda i: responses[i][0])
    filtered = {ln.get("filter", "none"): ln.get("filtered_resps") for ln in lines}
    vals = {EXTRACTED_KEYS.get(f, f): (v[0] if isinstance(v, list) and v else v) for f, v in filtered.items()}
    return next(iter(vals.values())) if len(vals) == 1 else vals
