"""Target-token log-probabilities without materialising batch x length x vocabulary.

Scoring needs, at each read position, the log-probability of one token (a few, for choices that
share a context) and whether that token is the argmax. The vocabulary is large (49k for the
bundled model, 128k+ for current ones), so a forward that returns logits for a batch of long
windows holds ``B * T * V`` floats (3.2 GB for 8 x 2048 x 49k in fp32; 33 GB for 8 x 8k x 128k)
and a log-softmax over them as much again. Here the model's final hidden states are kept
(``B * T * hidden``, a hundred times smaller) and the output projection runs over a few hundred
positions at a time: each chunk is log-softmaxed, gives its argmax and the wanted tokens'
log-probabilities, then is dropped. The log-softmax is per position, so every number is the one a
full log-softmax (and lm-eval, which takes one) gives; ``logit - torch.logsumexp(logits)`` would be
closer to the float64 value but differs from log_softmax by up to ~1e-5 per token in fp32 on CPU,
which adds up over a document.

``SplitHead`` finds the model's decoder and output projection and checks once, on a short input,
that decoder + projection reproduce the model's own logits (models with extra post-processing
that it does not know fall back to full logits, still read chunk by chunk). ``is_out_of_memory``
recognises the errors a batch backs off on.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Sequence

log = logging.getLogger(__name__)

# logits held at once while reading (elements): 16M floats = 64 MB on CPU, 256 MB on a GPU
CPU_CHUNK_ELEMS = 2 ** 24
GPU_CHUNK_ELEMS = 2 ** 26


def is_out_of_memory(exc: BaseException) -> bool:
    """A CUDA or CPU allocation failure (retrying with a smaller batch can succeed)."""
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):
        pass
    if isinstance(exc, RuntimeError):
        msg = str(exc).lower()
        return "out of memory" in msg or "can't allocate memory" in msg or "cannot allocate memory" in msg
    return False


def release_memory(torch) -> None:
    """Give cached blocks back after an out-of-memory error so a smaller retry can use them."""
    import gc
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def token_logprobs(states, rows, tokens, head: Optional[Callable] = None, vocab: Optional[int] = None,
                   chunk_elems: int = CPU_CHUNK_ELEMS):
    """Log-probabilities of ``tokens[k]`` at position ``rows[k]`` of ``states`` and whether each is
    the argmax there.

    ``states`` is ``[N, hidden]`` final hidden states that ``head`` maps to logits, or ``[N, V]``
    logits already (``head=None``); ``vocab`` is the size of ``head``'s output. ``rows`` must be
    non-decreasing. Positions are projected ``chunk_elems // vocab`` at a time, so at most that
    many logits exist at once. Returns float32
    tensors ``(logprob [K], is_argmax [K])`` on the states' device.
    """
    import torch

    dev = states.device
    rows_t = torch.as_tensor(rows, dtype=torch.long, device=dev)
    toks_t = torch.as_tensor(tokens, dtype=torch.long, device=dev)
    lp = torch.empty(len(rows), dtype=torch.float32, device=dev)
    top = torch.empty(len(rows), dtype=torch.bool, device=dev)
    if not len(rows):
        return lp, top
    first, last = int(rows_t[0]), int(rows_t[-1]) + 1
    if head is None:
        vocab = states.shape[-1]
    start = first
    with torch.inference_mode():
        while start < last:
            # without a known vocabulary size the first chunk is one row, which tells it
            end = start + 1 if vocab is None else min(last, start + max(1, chunk_elems // vocab))
            block = states[start:end]
            logits = (head(block) if head is not None else block).float()
            vocab = logits.shape[-1]
            lo = int(torch.searchsorted(rows_t, start))
            hi = int(torch.searchsorted(rows_t, end))
            if hi > lo:
                local = rows_t[lo:hi] - start
                chunk_lp = torch.log_softmax(logits, dim=-1)
                lp[lo:hi] = chunk_lp[local, toks_t[lo:hi]]
                top[lo:hi] = chunk_lp.argmax(dim=-1)[local] == toks_t[lo:hi]
                del chunk_lp
            del logits
            start = end
    return lp, top


def full_token_logprobs(logits, rows: Sequence[int], tokens: Sequence[int]):
    """Reference: the same numbers from a full log-softmax over ``logits [N, V]`` (tests, bench)."""
    import torch

    lp = torch.log_softmax(logits.float(), dim=-1)
    r = torch.as_tensor(rows, dtype=torch.long)
    t = torch.as_tensor(tokens, dtype=torch.long)
    return lp[r, t], lp.argmax(dim=-1)[r] == t


class SplitHead:
    """The model as decoder (hidden states) + output projection, when that reproduces its logits.

    ``decoder`` is ``None`` for models where the split is unavailable or does not check out; the
    backend then asks the model for logits (keeping only the positions it reads where it can)."""

    def __init__(self, model, torch, probe: Sequence[int]):
        self.decoder = self.head = self.vocab = None
        self.softcap = None
        try:
            decoder = getattr(model, "base_model", None)
            proj = model.get_output_embeddings()
            if decoder is None or decoder is model or proj is None:
                return
            cfg = getattr(model, "config", None)
            self.softcap = getattr(cfg, "final_logit_softcapping", None)
            self.decoder, self.head = decoder, proj
            self.vocab = int(proj.weight.shape[0])
            ids = torch.tensor([list(probe)], device=model.device)
            with torch.inference_mode():
                want = model(input_ids=ids, use_cache=False).logits[0].float()
                got = self.logits(self.hidden(input_ids=ids, use_cache=False)[0]).float()
            scale = max(1.0, float(want.abs().max()))
            if want.shape != got.shape or float((want - got).abs().max()) > 1e-3 * scale:
                log.info("hf backend: decoder + output projection do not reproduce %s's logits; "
                         "reading full logits", type(model).__name__)
                self.decoder = self.head = None
        except Exception as e:  # any architecture the split does not fit: full logits instead
            if is_out_of_memory(e):
                raise
            log.info("hf backend: no decoder/output-projection split for this model (%s)", e)
            self.decoder = self.head = None

    @property
    def ok(self) -> bool:
        return self.decoder is not None

    def hidden(self, **kwargs):
        """Final hidden states ``[B, T, hidden]`` for a forward with these arguments."""
        return self.decoder(**kwargs).last_hidden_state

    def logits(self, hidden):
        out = self.head(hidden)
        if self.softcap:  # Gemma 2/3 cap their logits after the projection
            out = self.softcap * (out / self.softcap).tanh()
        return out
