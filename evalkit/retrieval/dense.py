"""Dense bi-encoder retrieval: a sentence embedder (transformers mean pooling, the reference, or
vLLM's ``LLM.embed``), L2-normalised vectors and inner-product search (``vector_index``: exact numpy,
faiss flat from 1,000,000 vectors, faiss HNSW/IVF on request). Both embedders read the same token ids (the model's tokenizer,
truncated at sentence-transformers' ``max_seq_length``), so they agree to float rounding."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from evalkit.retrieval.embed_models import embedder_identity, max_seq_length, pooling_mode


class Embedder:
    backend = ""

    def close(self) -> None:
        pass

    def __init__(self, model_dir: Path):
        from transformers import AutoTokenizer
        self.model_dir = Path(model_dir)
        self.max_length = max_seq_length(self.model_dir)
        self.pooling = pooling_mode(self.model_dir)
        if self.pooling != "mean":
            raise ValueError(f"{model_dir}: pooling {self.pooling!r}; evalkit's reference embedder does mean pooling")
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]

    def identity(self) -> dict:
        return {**embedder_identity(self.model_dir), "backend": self.backend}

    def identity_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:32]

    def __call__(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


class HFEmbedder(Embedder):
    """transformers ``AutoModel``, mean over the attention mask, L2 norm (sentence-transformers' recipe)."""
    backend = "transformers"

    def __init__(self, model_dir: Path, threads: Optional[int] = None):
        super().__init__(model_dir)
        import torch
        from transformers import AutoModel
        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.model = AutoModel.from_pretrained(str(self.model_dir), dtype=torch.float32).eval()

    def __call__(self, texts):
        torch = self.torch
        ids = self.token_ids(texts)
        width = max(len(x) for x in ids)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
        with torch.inference_mode():
            hidden = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()


class VLLMEmbedder(Embedder):
    """vLLM ``LLM(runner="pooling").embed`` on pre-tokenised prompts (same ids as the reference)."""
    backend = "vllm"

    def __init__(self, model_dir: Path, dtype: str = "float32", **llm_kwargs):
        super().__init__(model_dir)
        from evalkit.backends.vllm_engine import (engine_start_error, kv_cache_plan, platform_kind,
                                                  private_socket_dir)
        user = {k: llm_kwargs.pop(k, None) for k in ("gpu_memory_utilization", "kv_cache_memory_bytes", "kv_cache_space")}
        # the KV cache as the other vLLM paths size it (#38): the run's context and the free memory
        self.kv_cache = kv_cache_plan(platform_kind() == "cpu", str(self.model_dir), self.max_length, dtype,
                                      user["gpu_memory_utilization"], user["kv_cache_memory_bytes"],
                                      user["kv_cache_space"], llm_kwargs.get("max_num_seqs"))
        kw = {"enforce_eager": True, "max_model_len": self.max_length, **self.kv_cache.pop("args"), **llm_kwargs}
        from vllm import LLM
        private_socket_dir()
        args = dict(model=str(self.model_dir), runner="pooling", convert="embed", dtype=dtype, **kw)
        try:
            self.llm = LLM(**args)
        except Exception as e:  # noqa: BLE001 -- vLLM raises many kinds: one line naming the fix
            raise engine_start_error(e, args) from e
        self.dtype = dtype

    def identity(self):
        return {**super().identity(), "dtype": self.dtype}

    def close(self) -> None:
        """Stop the engine processes now (not at interpreter exit)."""
        if self.llm is not None:
            try:
                self.llm.llm_engine.engine_core.shutdown()
            except Exception:  # already gone
                pass
            self.llm = None
            import gc
            gc.collect()

    def __call__(self, texts):
        prompts = [{"prompt_token_ids": ids} for ids in self.token_ids(texts)]
        outs = self.llm.embed(prompts, use_tqdm=False)
        vecs = np.asarray([o.outputs.embedding for o in outs], dtype=np.float32)
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)


def make_embedder(backend: str, model_dir: Path, **kw) -> Embedder:
    if backend in ("hf", "transformers"):
        return HFEmbedder(model_dir, **kw)
    if backend == "vllm":
        return VLLMEmbedder(model_dir, **kw)
    raise ValueError(f"embedding backend {backend!r}: expected hf or vllm")


def search(query_vecs: np.ndarray, doc_vecs: np.ndarray, doc_ids: Sequence[str], query_ids: Sequence[str],
           depth: int, use_faiss: Optional[bool] = None) -> dict[str, dict[str, float]]:
    """Exact top-``depth`` by inner product (cosine on normalised vectors): {query: {doc: score}};
    ``use_faiss`` None: ``evalkit.retrieval.vector_index``'s auto choice (faiss flat from 1,000,000 docs)."""
    from evalkit.retrieval.vector_index import IndexSpec, search_run
    spec = IndexSpec() if use_faiss is None else IndexSpec("flat" if use_faiss else "numpy")
    return search_run(query_vecs, doc_vecs, doc_ids, query_ids, depth, spec)[0]
