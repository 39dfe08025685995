"""Reward models through transformers ``AutoModelForSequenceClassification``: the reference.

The score head is applied to every position of the body's last hidden state (as transformers'
own sequence classifiers do) and the reward is read at the last real token, or at each step tag
for per-step rewards. Reading the position from the attention mask, not from a pad token id, makes
the result independent of the padding side and of a pad token that also ends the chat template;
position ids follow the mask, so a left-padded row sees the positions an unpadded one does.
"""
from __future__ import annotations

import os
from typing import Optional

from evalkit.backends.reward_base import HEAD_PREFIXES, RewardBackend


class HFRewardBackend(RewardBackend):
    name = "hf-reward"
    api = "transformers AutoModelForSequenceClassification"
    chunk_size = 64

    def __init__(self, model: str, dtype: str = "float32", device: str = "auto", batch_size: int = 8,
                 padding_side: str = "right", threads: Optional[int] = None, **kw):
        super().__init__(model, **kw)
        import torch
        threads = threads or os.environ.get("EVALKIT_TORCH_THREADS")
        if threads:
            torch.set_num_threads(int(threads))
        if padding_side not in ("left", "right"):
            raise ValueError(f"padding_side={padding_side!r}: expected left or right")
        self.torch = torch
        self.device = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else
                                   ("cpu" if device == "auto" else device))
        self.dtype_name = dtype
        self.batch_size = max(1, int(batch_size))
        self.padding_side = padding_side
        self._model = None
        self.check_head()

    def identity(self) -> dict:
        return {**super().identity(), "dtype": self.dtype_name}

    def pooling_info(self) -> dict:
        return {**super().pooling_info(), "dtype": self.dtype_name}

    @property
    def model(self):
        if self._model is None:
            from transformers import AutoModelForSequenceClassification
            m, info = AutoModelForSequenceClassification.from_pretrained(
                self.path, dtype=getattr(self.torch, self.dtype_name), trust_remote_code=self.trust_remote_code,
                output_loading_info=True)
            # a checkpoint check_head could not read (pytorch_model.bin): transformers says which weights it
            # had to initialise at random; a score head among them is refused before any reward is computed
            head = head_names(info.get("missing_keys") or ())
            if head:
                raise ValueError(f"{self.path} holds no score head ({', '.join(head[:3])} not in its weights): it is "
                                 f"not a reward model, and a reward from it would come from a randomly initialised "
                                 f"head; give a reward model's folder (AutoModelForSequenceClassification weights)")
            if self.label >= m.config.num_labels:
                raise ValueError(f"reward label {self.label} but the model has {m.config.num_labels} label(s)")
            self._model = m.to(self.device).eval()
        return self._model

    def token_scores(self, ids_list: list[list[int]]):
        """Per-position scores of the label (with ``activation=softmax``: its probability over the
        labels), one 1-d tensor per row (float32, on the CPU)."""
        torch, model = self.torch, self.model
        width = max(len(x) for x in ids_list)
        pad = 0
        ids = torch.full((len(ids_list), width), pad, dtype=torch.long)
        mask = torch.zeros((len(ids_list), width), dtype=torch.long)
        for r, x in enumerate(ids_list):
            sl = slice(width - len(x), width) if self.padding_side == "left" else slice(0, len(x))
            ids[r, sl] = torch.tensor(x, dtype=torch.long)
            mask[r, sl] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            body = getattr(model, model.base_model_prefix)
            hidden = body(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                          position_ids=pos.to(self.device)).last_hidden_state
            logits = model.score(hidden).float()
            if self.activation == "softmax":
                logits = logits.softmax(-1)
            scores = logits[..., self.label].cpu()
        out = []
        for r, x in enumerate(ids_list):
            start = width - len(x) if self.padding_side == "left" else 0
            out.append(scores[r, start:start + len(x)])
        return out

    def _rewards(self, ids_list, tags_list):
        order = sorted(range(len(ids_list)), key=lambda i: -len(ids_list[i]))
        results: list = [None] * len(ids_list)
        for b in range(0, len(order), self.batch_size):
            rows = order[b:b + self.batch_size]
            for i, s in zip(rows, self.token_scores([ids_list[i] for i in rows])):
                tags = tags_list[i]
                results[i] = ([self.squash(s[t].item()) for t in tags] if tags is not None
                              else self.squash(s[-1].item()))
        return results


def head_names(names) -> list:
    """The score-head weights among ``names`` (transformers' missing keys)."""
    return [n for n in names if any(part.startswith(HEAD_PREFIXES) for part in n.split(".")[:3])]
