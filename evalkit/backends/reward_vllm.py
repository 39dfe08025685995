"""Reward models through vLLM's offline pooling API: ``LLM(runner="pooling")`` and ``LLM.encode``.

vLLM 0.32 has no ``LLM.reward`` and no ``task=``; one engine serves one pooling task:

* ``pooling=classify`` (default): ``encode(pooling_task="classify")``, the score head at the last
  token: sequence rewards (any ``*ForSequenceClassification``).
* ``pooling=step``: ``PoolerConfig(task="token_classify", tok_pooling_type="STEP",
  step_tag_id=<the step tag's id>)``: per-step rewards at each step tag (process reward models).
* ``pooling=token``: ``encode(pooling_task="token_classify")`` with the model's token pooler (ALL
  for ``Qwen2ForRewardModel``): a score per token; the reward is the last token's, per-step rewards
  are read at the step tags' positions.

vLLM returns raw logits (``PoolingParams(use_activation=False)``) and ``activation=`` (sigmoid of
the label, or softmax over the labels) is applied by ``RewardBackend.read_label``, as for every
backend: vLLM's own activation depends on the head (sigmoid for one label, softmax for more, or the
config's ``problem_type``) and would not match the name. Prompts go in as the token ids
``RewardBackend`` makes, the same ids the transformers backend scores.
"""
from __future__ import annotations

import logging
from typing import Optional

from evalkit.backends.reward_base import RewardBackend, RewardInputError
from evalkit.backends.vllm_engine import (engine_start_error, kv_cache_plan, offline_cpu_binding, platform_kind,
                                         private_socket_dir, shutdown_engine)

log = logging.getLogger(__name__)
POOLINGS = ("classify", "step", "token")


class VLLMRewardBackend(RewardBackend):
    name = "vllm-reward"
    api = "vllm offline LLM(runner='pooling').encode"
    chunk_size = 256

    def __init__(self, model: str, pooling: str = "classify", dtype: str = "auto", max_model_len: Optional[int] = None,
                 enforce_eager: Optional[bool] = None, gpu_memory_utilization: Optional[float] = None, seed: int = 0,
                 progress: bool = False, kv_cache_memory_bytes: Optional[int] = None,
                 kv_cache_space: Optional[float] = None, max_num_seqs: Optional[int] = None, **kw):
        super().__init__(model, **kw)
        if pooling not in POOLINGS:
            raise ValueError(f"vllm reward pooling={pooling!r}: expected one of {', '.join(POOLINGS)}")
        self.pooling = pooling
        self._on_cpu = platform_kind() == "cpu"
        if dtype == "auto" and self._on_cpu:
            dtype = "float32"
        self.dtype_name = dtype
        self.kv_cache = kv_cache_plan(self._on_cpu, self.path, max_model_len, dtype, gpu_memory_utilization,
                                      kv_cache_memory_bytes, kv_cache_space, max_num_seqs)  # in pooling_info
        self.engine_args = dict(model=self.path, runner="pooling", dtype=dtype, seed=int(seed),
                                enforce_eager=self._on_cpu if enforce_eager is None else bool(enforce_eager),
                                trust_remote_code=self.trust_remote_code,
                                **self.kv_cache.pop("args"))
        if max_num_seqs:
            self.engine_args["max_num_seqs"] = int(max_num_seqs)
        if max_model_len:
            self.engine_args["max_model_len"] = int(max_model_len)
            self._max_length = self.max_length_set = int(max_model_len)
        self.progress = progress
        self._llm = None
        self.check_head()

    def identity(self) -> dict:
        # the engine's numerics: dtype (pooling only decides which requests the engine can answer).
        # Before evalkit applied activations itself (raw logits from vLLM), vLLM applied softmax to
        # heads with several labels under activation=sigmoid: such cache entries must not be reused.
        ident = {**super().identity(), "dtype": self.dtype_name}
        if self.activation != "none":
            ident["activation_applied_by"] = "evalkit"
        return ident

    def pooling_info(self) -> dict:
        return {**super().pooling_info(), "dtype": self.dtype_name, "vllm_pooling_task":
                "classify" if self.pooling == "classify" else "token_classify",
                "pooling": {"classify": "LAST (sequence)", "step": "STEP (per step tag)",
                            "token": "ALL tokens: last token (sequence), step tag positions (per step)"}[self.pooling],
                "kv_cache": dict(self.kv_cache)}

    @property
    def llm(self):
        if self._llm is None:
            from vllm import LLM
            args = dict(self.engine_args)
            if self.pooling == "step":
                from vllm.config import PoolerConfig
                args["pooler_config"] = PoolerConfig(task="token_classify", tok_pooling_type="STEP",
                                                     step_tag_id=self.step_tag_id())
            private_socket_dir()
            with offline_cpu_binding(self._on_cpu):
                try:
                    self._llm = LLM(**args)
                except Exception as e:  # noqa: BLE001 -- vLLM raises many kinds (EngineCore, OOM, asserts): one line
                    raise engine_start_error(e, args) from e
        return self._llm

    def check_kind(self, steps: bool) -> None:
        want = "step" if steps else "classify"
        if self.pooling == "token":
            return
        if want != self.pooling:
            raise RewardInputError(f"{'per-step' if steps else 'sequence'} rewards need a vllm reward engine with "
                                   f"pooling={want} (this one has pooling={self.pooling}; vLLM serves one pooling "
                                   f"task per engine)")

    def _rewards(self, ids_list, tags_list):
        if not ids_list:
            return []
        steps = tags_list[0] is not None
        if self.pooling != "token" and any((t is not None) != steps for t in tags_list):
            raise RewardInputError("one engine chunk mixes sequence and per-step reward requests")
        from vllm import PoolingParams, TokensPrompt
        params = PoolingParams(use_activation=False)  # raw logits: read_label applies the activation
        task = "token_classify" if steps or self.pooling == "token" else "classify"
        outs = self.llm.encode([TokensPrompt(prompt_token_ids=x) for x in ids_list], params,
                               pooling_task=task, use_tqdm=self.progress)
        results = []
        for out, ids, tags in zip(outs, ids_list, tags_list):
            data = out.outputs.data.float().cpu()
            if self.pooling == "token":  # one row per prompt token
                rows = data.reshape(len(ids), -1)
                results.append([self.read_label(rows[t]) for t in tags] if tags is not None
                               else self.read_label(rows[-1]))
            elif steps:
                rows = data.reshape(len(tags), -1) if data.numel() != len(tags) else data.reshape(-1, 1)
                if rows.shape[0] != len(tags):
                    raise RuntimeError(f"vLLM returned {rows.shape[0]} step scores for {len(tags)} step tags")
                results.append([self.read_label(r) for r in rows])
            else:
                results.append(self.read_label(data.reshape(-1)))
        return results

    def close(self) -> None:
        if self._llm is None:
            return
        llm, self._llm = self._llm, None
        shutdown_engine(llm)
