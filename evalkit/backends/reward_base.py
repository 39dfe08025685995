"""What every reward-model backend shares: the model's identity, how a reward request becomes token
ids, and how per-step rewards are laid out.

A reward backend answers one request kind, ``reward`` (``evalkit.taskapi.requests.RewardRequest``). Both
backends (transformers, vLLM offline) tokenize here, with the reward model's own tokenizer and chat
template, and hand the engine identical token ids: their rewards differ only by numerics.

* ``activation``: ``none`` (the raw score head output, what reward models mean by a reward; the
  default), ``sigmoid`` (of the label's logit: vLLM's default for one-label classifiers) or
  ``softmax`` (the label's probability over all labels: vLLM's default for heads with two or more
  labels, how Qwen2.5-Math-PRM is read). Every engine returns raw logits and ``activate`` applies
  the activation here, so all backends compute the same function. It is part of the identity, so
  raw and squashed rewards never share a cache entry; so is ``max_length`` when it is set.
* Per-step rewards (``RewardRequest(steps=True)``, a process reward model): the response is cut at
  ``step_separator`` (default a blank line), each step is followed by ``step_tag`` (default
  ``<extra_0>``, Qwen2.5-Math-PRM's) and the reward of a step is the score at its tag. A tag that
  also occurs in the rest of the rendered text would count as a step (vLLM's STEP pooler counts
  every occurrence): such a request is refused with a clear error.
* ``step_agg`` (``min``, ``last`` or ``product``): how best-of-N turns a completion's step rewards
  into one score (``evalkit.scoring.step_agg``). Not part of the identity: the cache holds
  the per-step rewards, so every aggregation reuses them.
"""
from __future__ import annotations

import json
import math
import os
import struct
from typing import Optional, Sequence

from evalkit.backends import model_dirs as models
from evalkit.backends.base import Backend
from evalkit.taskapi.requests import RewardRequest

ACTIVATIONS = ("none", "sigmoid", "softmax")
DEFAULT_STEP_TAG = "<extra_0>"


class RewardInputError(ValueError):
    """A reward request the model cannot score as asked (too long, a step tag in the prompt)."""


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def activate(values: Sequence[float], label: int, activation: str) -> float:
    """The reward at one position from its raw per-label scores: the label's logit, its sigmoid or
    its softmax probability over the labels."""
    values = [float(v) for v in values]
    if activation == "softmax":
        if len(values) < 2:
            raise RewardInputError("activation=softmax needs a score head with two or more labels (softmax over "
                                   "one label is always 1); use activation=sigmoid")
        top = max(values)
        exps = [math.exp(v - top) for v in values]
        return exps[label] / sum(exps)
    return sigmoid(values[label]) if activation == "sigmoid" else values[label]


def config_labels(path: str) -> Optional[int]:
    """How many labels the score head in ``path/config.json`` has (None: not said)."""
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(cfg.get("id2label"), dict):
        return len(cfg["id2label"])
    return int(cfg["num_labels"]) if isinstance(cfg.get("num_labels"), int) else None


#: where reward and classification heads keep their weights (transformers' and TRL's names)
HEAD_PREFIXES = ("score", "classifier", "v_head", "value_head", "reward_head", "rm_head", "summary")


def weight_names(path: str) -> Optional[list]:
    """The tensor names of a safetensors checkpoint in ``path`` (its index or its file headers; None:
    no safetensors checkpoint to read)."""
    index = os.path.join(path, "model.safetensors.index.json")
    try:
        if os.path.exists(index):
            with open(index, encoding="utf-8") as f:
                return list(json.load(f)["weight_map"])
        files = sorted(x for x in os.listdir(path) if x.endswith(".safetensors"))
        names = []
        for name in files:
            with open(os.path.join(path, name), "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                names += [k for k in json.loads(f.read(n)) if k != "__metadata__"]
        return names or None
    except (OSError, ValueError, KeyError, struct.error):
        return None


def has_score_head(path: str) -> Optional[bool]:
    """Whether the checkpoint holds a score head's weights (None: cannot tell)."""
    names = weight_names(path)
    if names is None:
        return None
    parts = {n.split(".")[i] for n in names for i in range(min(3, n.count(".") + 1))}
    return any(p.startswith(HEAD_PREFIXES) for p in parts)


class RewardBackend(Backend):
    """Base of the reward backends; subclasses implement ``_rewards(ids_list, tag_positions)``."""

    name = "reward"
    api = "?"

    def __init__(self, model: str, activation: str = "none", label: int = 0, max_length: Optional[int] = None,
                 step_tag: str = DEFAULT_STEP_TAG, step_separator: str = "\n\n", trust_remote_code: bool = False,
                 step_agg: Optional[str] = None):
        if activation not in ACTIVATIONS:
            raise ValueError(f"reward model activation={activation!r}: expected one of {', '.join(ACTIVATIONS)}")
        from evalkit.scoring.step_agg import check_step_agg
        self.step_agg = check_step_agg(step_agg, activation)
        self.spec = model
        self.path = self._local_path(model)
        self.activation = activation
        self.label = int(label)
        if self.label < 0:
            raise ValueError(f"reward model label={label}: expected a label index >= 0")
        self.step_tag = step_tag
        self.step_separator = step_separator.encode().decode("unicode_escape") if "\\" in step_separator \
            else step_separator
        self.trust_remote_code = bool(trust_remote_code) and str(trust_remote_code).lower() not in ("0", "false")
        self._max_length = int(max_length) if max_length else None
        self.max_length_set = self._max_length  # a chosen limit cuts inputs: part of the identity when set
        self._tokenizer = None
        self._identity = None
        self.stats = __import__("collections").Counter()

    @staticmethod
    def _local_path(model: str) -> str:
        path = models.resolve(model)
        if not os.path.isdir(path):
            raise ValueError(f"reward model {model!r}: not a local model folder (hub downloads are not available "
                             f"here; pass a folder with config.json and the weights)")
        return path

    # ---- identity --------------------------------------------------------------------------------
    def identity(self) -> dict:
        if self._identity is None:
            self._identity = {"model": os.path.basename(self.path.rstrip("/")), "kind": "reward", "backend": self.name,
                              **models.directory_identity(self.path), "activation": self.activation,
                              "label": self.label, "step_tag": self.step_tag, "step_separator": self.step_separator,
                              **self._max_length_identity()}
        return self._identity

    def _max_length_identity(self) -> dict:
        return {"max_length": self.max_length_set} if self.max_length_set else {}

    @property
    def display_name(self) -> str:
        return os.path.basename(self.path.rstrip("/"))

    def pooling_info(self) -> dict:
        """What the run record says about how rewards were read off the model."""
        return {"api": self.api, "pooling": "last token (sequence), step tag (per step)",
                "activation": self.activation, "label": self.label, "step_tag": self.step_tag,
                "step_separator": self.step_separator}

    def per_step(self) -> bool:
        """Whether best-of-N asks this model for per-step rewards (``step_agg`` set, or a STEP pooler)."""
        return self.step_agg is not None or getattr(self, "pooling", None) == "step"

    def check_head(self) -> None:
        """Refuse, before the model loads, a checkpoint without a score head (its rewards would come
        from a randomly initialised one, different at every load) and a label or an activation its
        score head cannot give."""
        if os.path.isdir(self.path) and has_score_head(self.path) is False:
            raise ValueError(f"{self.path} holds no score head (no score.*/classifier.* weights): it is not a reward "
                             f"model, and a reward from it would come from a randomly initialised head; give a reward "
                             f"model's folder (AutoModelForSequenceClassification weights)")
        n = config_labels(self.path)
        if n is not None and self.label >= n:
            raise ValueError(f"reward label {self.label} but the model has {n} label(s)")
        if n is not None and n < 2 and self.activation == "softmax":
            raise ValueError("activation=softmax needs a score head with two or more labels (softmax over one "
                             "label is always 1); use activation=sigmoid")

    # ---- tokenization ----------------------------------------------------------------------------
    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer
            self._tokenizer = AutoTokenizer.from_pretrained(self.path, trust_remote_code=self.trust_remote_code)
        return self._tokenizer

    @property
    def max_length(self) -> int:
        if self._max_length is None:
            with open(os.path.join(self.path, "config.json"), encoding="utf-8") as f:
                cfg = json.load(f)
            self._max_length = int(cfg.get("max_position_embeddings") or 2048)
        return self._max_length

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def step_tag_id(self) -> int:
        ids = self.encode(self.step_tag)
        if len(ids) != 1:
            raise RewardInputError(f"step_tag {self.step_tag!r} is {len(ids)} tokens for this tokenizer; "
                                   f"per-step rewards need a single-token tag (set --reward-args step_tag=...)")
        return ids[0]

    def step_messages(self, req: RewardRequest) -> tuple[list[dict], Optional[int]]:
        """The request's messages (with ``steps``: the response cut into steps, each followed by the
        step tag, and the number of steps; a tag already in the text is refused)."""
        msgs = req.message_dicts()
        if not req.steps:
            return msgs, None
        for m in msgs:
            if self.step_tag in m["content"]:
                raise RewardInputError(
                    f"step tag {self.step_tag!r} occurs in the {m['role']} message: every occurrence would "
                    f"count as a step; choose another step_tag or remove it from the text")
        steps = [s for s in msgs[-1]["content"].split(self.step_separator) if s.strip()] or [""]
        msgs[-1] = {**msgs[-1], "content": "".join(s + self.step_tag for s in steps)}
        return msgs, len(steps)

    def request_ids(self, req: RewardRequest) -> tuple[list[int], Optional[list[int]]]:
        """(token ids, positions of the step tags or None) of one request, checked."""
        if req.text is not None:
            if req.steps:
                raise RewardInputError("per-step rewards need messages (a prompt and a response), not raw text")
            ids = self.tokenizer(req.text)["input_ids"]
            tags = None
        else:
            msgs, n_steps = self.step_messages(req)
            if req.steps:
                tag_id = self.step_tag_id()
            text = self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=False)
            ids = self.encode(text)
            tags = [i for i, t in enumerate(ids) if t == tag_id] if req.steps else None
            if req.steps and len(tags) != n_steps:
                raise RewardInputError(f"{n_steps} steps but {len(tags)} step tags after tokenization "
                                       f"(the chat template or tokenizer merged the tag {self.step_tag!r})")
        if len(ids) > self.max_length:
            if req.steps:
                raise RewardInputError(f"reward input is {len(ids)} tokens, over the reward model's "
                                       f"{self.max_length}-token context (per-step rewards are never cut)")
            # the reward is read at the end: keep the response and cut the start of the conversation,
            # counted (``reward_inputs_cut`` in the run's reward engine stats) rather than failing the run
            ids = ids[-self.max_length:]
            self.stats["reward_inputs_cut"] += 1
        return ids, tags

    # ---- the one request kind --------------------------------------------------------------------
    def reward(self, requests: Sequence[RewardRequest]) -> list:
        for steps in {bool(r.steps) for r in requests}:
            self.check_kind(steps)
        inputs = [self.request_ids(r) for r in requests]
        out = self._rewards([ids for ids, _ in inputs], [tags for _, tags in inputs])
        self.stats["reward_requests"] += len(requests)
        self.stats["reward_tokens"] += sum(len(ids) for ids, _ in inputs)
        return out

    def check_kind(self, steps: bool) -> None:
        """Refuse, before any tokenization, a kind of reward (sequence or per step) this backend cannot give."""

    def _rewards(self, ids_list: list[list[int]], tags_list: list[Optional[list[int]]]) -> list:
        raise NotImplementedError

    def squash(self, x: float) -> float:
        return sigmoid(x) if self.activation == "sigmoid" else float(x)

    def read_label(self, values) -> float:
        """The reward at one position from the raw per-label scores an engine returned."""
        return activate(values.tolist() if hasattr(values, "tolist") else values, self.label, self.activation)

    # a reward model answers nothing else
    def loglikelihood(self, requests):
        raise NotImplementedError(f"{self.name} is a reward model: it scores (prompt, response) pairs, it does "
                                  f"not compute log-likelihoods (use it as --reward-model)")

    def generate(self, requests):
        raise NotImplementedError(f"{self.name} is a reward model: it does not generate (use it as --reward-model)")
