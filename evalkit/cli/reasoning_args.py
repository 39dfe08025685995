"""``evalkit run`` options for reasoning models: trace markers and ``--keep-thinking`` (how answers
are separated from traces), ``--chat-template-kwargs`` (variables for the chat template, e.g.
``enable_thinking``) and the ``--reasoning`` preset (a thinking budget and the model's own sampling)."""
from __future__ import annotations

import json
import logging
import os

from evalkit.backends.openai_reasoning import EFFORTS
from evalkit.scoring.harmony import OFFLINE_EFFORTS
from evalkit.util.errors import ConfigError
from evalkit.scoring.thinking import pop_options

log = logging.getLogger(__name__)

DEFAULT_THINKING_BUDGET = 8192


def add_reasoning_args(p) -> None:
    g = p.add_argument_group("reasoning models")
    g.add_argument("--keep-thinking", action="store_true",
                   help="score the raw text, reasoning trace included (default: the trace between <think> and "
                        "</think>, or in the server's reasoning field, is split off and only the answer is scored; "
                        "other markers: --model-args think_start=...,think_end=...)")
    g.add_argument("--chat-template-kwargs", default=None, metavar="JSON",
                   help='variables for the chat template, e.g. \'{"enable_thinking": false}\' (hf and vllm render '
                        'with them; openai sends them as chat_template_kwargs); part of the cache identity')
    g.add_argument("--reasoning", action="store_true",
                   help=f"reasoning preset: max_tokens raised to --thinking-budget (default "
                        f"{DEFAULT_THINKING_BUDGET}), sampling from the model's generation_config.json when it "
                        f"recommends any (temperature, top_p), greedy otherwise; --gen-kwargs still win")
    g.add_argument("--reasoning-effort", default=None, metavar="LEVEL",
                   help="reasoning effort (low, medium, high; openai: also minimal): openai sends it as "
                        "reasoning_effort; hf and vllm render it into the chat template (gpt-oss: 'Reasoning: LEVEL' "
                        "in the harmony system message); same as --model-args reasoning_effort=LEVEL")
    g.add_argument("--thinking-budget", type=int, default=None, metavar="N",
                   help="max_tokens under --reasoning (the trace and the answer share it)")
    g.add_argument("--thinking-budgets", default=None, metavar="B1,B2,...",
                   help="test-time scaling from one trace (budget forcing, as in s1): each trace is generated "
                        "once up to the largest budget; for every budget B it is cut at B tokens, closed with "
                        "</think> and the model answers; the record gives every metric per budget with its CI "
                        "(breakdowns thinking_budget:B). Needs a model that thinks (a <think> template)")
    g.add_argument("--forced-answer-tokens", type=int, default=None, metavar="N",
                   help="new tokens for each forced answer under --thinking-budgets (default 256)")


def apply(args, config, model_args: dict, prefix: str) -> None:
    """Move the trace options out of the backend's model args into ``config.thinking``, put
    ``--chat-template-kwargs`` into the model args and apply ``--reasoning`` to the generation
    overrides. Errors are one line naming the flag."""
    try:
        thinking = pop_options(model_args)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if getattr(args, "keep_thinking", False):
        thinking["keep_thinking"] = True
    config.thinking = thinking
    raw = getattr(args, "chat_template_kwargs", None)
    if raw:
        try:
            kwargs = json.loads(raw)
        except ValueError as e:
            raise ConfigError(f"--chat-template-kwargs {raw!r}: not JSON ({e}); e.g. '{{\"enable_thinking\": false}}'")
        if not isinstance(kwargs, dict):
            raise ConfigError(f"--chat-template-kwargs {raw!r}: expected a JSON object")
        model_args["chat_template_kwargs"] = kwargs
    effort = getattr(args, "reasoning_effort", None)
    if effort is not None:
        allowed = EFFORTS if prefix == "openai" else OFFLINE_EFFORTS
        if effort not in allowed:
            raise ConfigError(f"--reasoning-effort {effort!r}: expected one of {', '.join(allowed)}"
                              + ("" if prefix == "openai" else f" ({prefix}: rendered into the chat template)"))
        if model_args.get("reasoning_effort", effort) != effort:
            raise ConfigError(f"--reasoning-effort {effort} and --model-args reasoning_effort="
                              f"{model_args['reasoning_effort']} differ")
        model_args["reasoning_effort"] = effort
    budgets = getattr(args, "thinking_budgets", None)
    if budgets is not None and getattr(args, "thinking_budget", None) is not None:
        raise ConfigError("--thinking-budget and --thinking-budgets do not go together: the sweep cuts each trace at "
                          "every budget it names (the largest bounds the trace); give one of them")
    if budgets is not None and int(config.gen_overrides.get("n", 1)) > 1:
        raise ConfigError(f"--thinking-budgets takes one completion per problem (it cuts one trace at each budget); "
                          f"drop --repeats / n={config.gen_overrides['n']}")
    if budgets is not None:
        from evalkit.run.budget_forcing import BudgetForcing
        try:
            config.budget_forcing = BudgetForcing.parse(budgets, getattr(args, "forced_answer_tokens", None)).to_record()
        except ValueError as e:
            raise ConfigError(str(e)) from None
    elif getattr(args, "forced_answer_tokens", None) is not None:
        raise ConfigError("--forced-answer-tokens applies with --thinking-budgets")
    budget = getattr(args, "thinking_budget", None)
    if budget is not None and budget < 1:
        raise ConfigError("--thinking-budget must be >= 1")
    if not getattr(args, "reasoning", False):
        if budget is not None:
            raise ConfigError("--thinking-budget applies with --reasoning")
        return
    config.gen_overrides = preset_overrides(config.gen_overrides, budget, model_card_sampling(args.model, prefix))


def preset_overrides(given: dict, budget, card: dict) -> dict:
    """The ``--reasoning`` generation overrides: the budget and the card's sampling, under what the
    user gave with --gen-kwargs."""
    out = {"max_tokens": int(budget or DEFAULT_THINKING_BUDGET)}
    if card:
        out.update(card)
    else:
        out["temperature"] = 0.0
    out.update(given)
    return out


def model_card_sampling(spec: str, prefix: str) -> dict:
    """temperature/top_p a local model's generation_config.json recommends (do_sample true), else {}."""
    if prefix not in ("hf", "vllm"):
        return {}
    from evalkit.backends import model_dirs as models
    name = spec.split(":", 1)[1]
    try:
        folder = models.resolve(name, auto_prepare=False)
    except (RuntimeError, ValueError):  # not prepared yet: no model card to read, the run prepares it
        return {}
    path = os.path.join(folder, "generation_config.json")
    try:
        with open(path, encoding="utf-8") as f:
            gc = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(gc, dict) or not gc.get("do_sample"):
        return {}
    out = {k: float(gc[k]) for k in ("temperature", "top_p") if isinstance(gc.get(k), (int, float))
           and not isinstance(gc.get(k), bool)}
    if out:
        log.info("--reasoning: sampling from %s: %s", path, out)
    return out
