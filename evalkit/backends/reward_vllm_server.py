"""Reward models behind a running vLLM pooling server (``vllm serve RM --runner pooling``):
``--reward-model vllm-server:http://127.0.0.1:8000`` with ``api=`` one of

* ``classify`` (default): ``POST /classify``, the score head at the last token (sequence rewards);
* ``pooling``: ``POST /pooling``; ``pooling=classify`` (sequence), ``pooling=step`` (per-step
  rewards: the server runs a STEP pooler, ``--pooler-config '{"task": "token_classify",
  "tok_pooling_type": "STEP", "step_tag_id": ID}'``) or ``pooling=token`` (a score per token: the
  last token's, or the step tags');
* ``score`` / ``rerank``: ``POST /score`` (``text_1``/``text_2`` pairs) or ``/rerank`` (one query,
  its documents): for cross-encoders. The server joins the two texts itself (no chat template), so
  these take (prompt, response) pairs only.

Rendering: with a tokenizer at hand (``tokenizer=PATH``, or by default the served model's folder
when the server reports a ``root`` that exists here) the conversation is rendered and tokenized
here, exactly as the transformers and offline vLLM backends do, and token ids go in batches of
``batch_size``; ``tokenizer=server`` (or no local folder) sends each conversation as ``messages``
and the server renders its chat template. ``concurrency`` calls run at once (one thread pool for
the backend's life, each thread keeping its connection open until ``close()``); each call has
``timeout`` seconds and ``max_retries`` retries with backoff, and errors name the route.

The API key comes from the environment variable named by ``api_key_env`` (default
``VLLM_API_KEY``, what ``vllm serve`` itself reads); it is never recorded. The identity (the cache
key) holds the served model as ``GET /v1/models`` reports it (id, root, max_model_len), the local
folder's file and weight hashes when rendering here, ``revision=`` (pin a weights hash for a remote
server), the API, pooling and activation (and ``max_length`` when set); the server's address is
not part of it.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

from evalkit.backends import model_dirs as models
from evalkit.backends import reward_server_routes as routes
from evalkit.backends.openai_http import BackendError, _Http
from evalkit.backends.reward_base import RewardBackend, RewardInputError
from evalkit.records.redact import redact_url
from evalkit.taskapi.requests import RewardRequest

POOLINGS = {"classify": ("classify",), "pooling": ("classify", "step", "token"), "score": ("classify",),
            "rerank": ("classify",)}


class VLLMServerRewardBackend(RewardBackend):
    name = "vllm-server-reward"
    chunk_size = 256

    def __init__(self, model: str, api: str = "classify", pooling: str = "classify", model_name: Optional[str] = None,
                 api_key_env: str = "VLLM_API_KEY", revision: Optional[str] = None, tokenizer: Optional[str] = None,
                 batch_size: int = 32, concurrency: int = 4, timeout: float = 300, max_retries: int = 3, **kw):
        super().__init__(model, **kw)
        if api not in POOLINGS:
            raise ValueError(f"vllm-server reward api={api!r}: expected one of {', '.join(POOLINGS)}")
        if pooling not in POOLINGS[api]:
            raise ValueError(f"vllm-server reward api={api} takes pooling={'|'.join(POOLINGS[api])}, not {pooling!r}")
        if api in ("score", "rerank") and self.activation == "softmax":
            raise ValueError(f"vllm-server reward api={api} returns one score per pair: activation=softmax needs "
                             f"every label's score (use api=classify or pooling)")
        url = str(model).rstrip("/")
        url = url[:-3] if url.endswith("/v1") else url  # the pooling routes live at the root, /v1/models below
        self.api, self.pooling, self.route = api, pooling, routes.ROUTES[api]
        self.model_name, self.revision, self.tokenizer_opt = model_name, revision, tokenizer
        self.api_key_env = api_key_env
        self.batch_size, self.concurrency = max(1, int(batch_size)), max(1, int(concurrency))
        self.url, self.shown_url = url, redact_url(url)
        self.shown_spec = f"vllm-server:{self.shown_url}"
        self.http = _Http(url, os.environ.get(api_key_env) if api_key_env else None, float(timeout), int(max_retries),
                          0.5, 8.0, self.stats)
        self._card: Optional[dict] = None
        self._pool: Optional[ThreadPoolExecutor] = None

    @staticmethod
    def _local_path(model: str) -> None:
        if not str(model).startswith(("http://", "https://")):
            raise ValueError(f"vllm-server reward model {redact_url(str(model))!r}: expected the server's URL, "
                             f"e.g. vllm-server:http://127.0.0.1:8000")
        return None

    # ---- the served model ------------------------------------------------------------------------
    def _get(self, path: str):
        try:
            return self.http.call("GET", path)
        except BackendError as e:
            raise BackendError(f"vllm-server reward model: {e}") from None

    @property
    def card(self) -> dict:
        if self._card is None:
            listing = self._get("/v1/models")
            cards = [c for c in (listing.get("data") or []) if isinstance(c, dict)] if isinstance(listing, dict) else []
            ids = [c.get("id") for c in cards]
            if self.model_name:
                if self.model_name not in ids:
                    raise ValueError(f"vllm-server {self.shown_url} serves {ids}, not model_name={self.model_name!r}")
                self._card = cards[ids.index(self.model_name)]
            elif len(cards) == 1:
                self._card = cards[0]
            else:
                raise ValueError(f"vllm-server {self.shown_url} serves {ids or 'no models'}: name one with "
                                 f"model_name=")
        return self._card

    @property
    def path(self) -> Optional[str]:  # the local folder the ids are made with, or None (server renders)
        opt = self.tokenizer_opt
        if opt == "server":
            return None
        if opt:
            return models.resolve(opt)
        root = self.card.get("root")
        return root if root and os.path.isfile(os.path.join(root, "tokenizer_config.json")) else None

    @path.setter
    def path(self, value) -> None:  # the base class sets it; the served model decides it here
        pass

    @property
    def max_length(self) -> int:
        if self._max_length is None:
            self._max_length = int(self.card.get("max_model_len") or 2048)
        return self._max_length

    @property
    def display_name(self) -> str:
        return str(self.card.get("id"))

    def identity(self) -> dict:
        if self._identity is None:
            card, local = self.card, self.path
            rendered_here = bool(local) and self.api in ("classify", "pooling")  # /score, /rerank: the server joins
            self._identity = {
                "model": card.get("id"), "kind": "reward", "backend": self.name, "api": self.api,
                "pooling": self.pooling, "served": {k: card.get(k) for k in ("id", "root", "max_model_len")},
                "revision": self.revision, "rendering": "local" if rendered_here else "server",
                **(models.directory_identity(local) if local else {}), "activation": self.activation,
                "label": self.label, "step_tag": self.step_tag, "step_separator": self.step_separator,
                **self._max_length_identity()}
        return self._identity

    def pooling_info(self) -> dict:
        local = self.path if self.api in ("classify", "pooling") else None
        return {"api": f"vllm server POST {self.route}", "route": self.route, "server": self.shown_url,
                "served_model": self.display_name, "revision": self.revision,
                "pooling": {"classify": "LAST (sequence)", "step": "STEP (per step tag, on the server)",
                            "token": "ALL tokens: last token (sequence), step tag positions (per step)"}[self.pooling],
                "activation": self.activation, "label": self.label, "step_tag": self.step_tag,
                "step_separator": self.step_separator,
                "rendering": f"token ids made here with {local}" if local else
                ("the server's chat template" if self.api in ("classify", "pooling") else "text_1 + text_2 (server)")}

    # ---- requests --------------------------------------------------------------------------------
    def check_kind(self, steps: bool) -> None:
        if steps and not (self.api == "pooling" and self.pooling in ("step", "token")):
            raise RewardInputError(f"per-step rewards need api=pooling with pooling=step (a STEP pooler on the "
                                   f"server) or pooling=token; this backend has api={self.api}, pooling={self.pooling}")
        if not steps and self.pooling == "step":
            raise RewardInputError("sequence rewards need pooling=classify (a server with a STEP pooler gives "
                                   "per-step rewards only)")

    def _pair(self, req: RewardRequest) -> tuple[str, str]:
        roles = [r for r, _ in req.messages or ()]
        if roles != ["user", "assistant"]:
            raise RewardInputError(f"api={self.api} scores (prompt, response) pairs (text_1, text_2); this request "
                                   f"has {'raw text' if req.text is not None else 'messages ' + '/'.join(roles)}: "
                                   f"use api=classify")
        return req.messages[0][1], req.messages[1][1]

    def _units(self, requests: Sequence[RewardRequest]) -> list[tuple[list, list]]:
        """HTTP calls as (request positions, inputs); every input checked before the first call."""
        if self.api in ("score", "rerank"):
            pairs = [self._pair(r) for r in requests]
            groups: dict = {}
            for i, p in enumerate(pairs):
                groups.setdefault(p[0] if self.api == "rerank" else 0, []).append(i)
            return [(idx[b:b + self.batch_size], [pairs[i] for i in idx[b:b + self.batch_size]])
                    for idx in groups.values() for b in range(0, len(idx), self.batch_size)]
        if self.path:  # local rendering: batches of token ids
            self._meta = [self.request_ids(r) for r in requests]
            idx = list(range(len(requests)))
            return [(idx[b:b + self.batch_size], [self._meta[i][0] for i in idx[b:b + self.batch_size]])
                    for b in range(0, len(idx), self.batch_size)]
        if self.pooling == "token" and any(r.steps for r in requests):
            raise RewardInputError("pooling=token per-step rewards need the step tags' positions: pass "
                                   "tokenizer=PATH (the served model's folder) to render here")
        units, texts, self._meta = [], [], []
        for i, r in enumerate(requests):
            msgs, n_steps = self.step_messages(r) if r.text is None else (None, None)
            self._meta.append((None, n_steps))
            if r.text is not None:
                texts.append(i)
            else:
                units.append(([i], [{"messages": msgs}]))
        units += [(texts[b:b + self.batch_size], [requests[i].text for i in texts[b:b + self.batch_size]])
                  for b in range(0, len(texts), self.batch_size)]
        return units

    def _call(self, positions: list, inputs: list, requests) -> list:
        steps = requests[positions[0]].steps
        task = "token_classify" if steps or self.pooling in ("step", "token") else "classify"
        truncate = self.max_length if not steps and not all(isinstance(x, list) for x in inputs) else None
        payload = routes.body(self.api, self.display_name, inputs, task, truncate)
        try:
            reply = self.http.call("POST", self.route, payload)
            values = routes.read(self.api, reply, len(inputs), self.label, self.activation)
            if self.api != "pooling":
                return [v[0] for v in values]
            out = []
            for i, data in zip(positions, values):
                meta = self._meta[i][1]  # rendered here: the step tags' positions; by the server: the step count
                tags = meta if self.path else None
                n_steps = (None if meta is None else len(meta)) if self.path else meta
                out.append(routes.pooled_reward(data, self.pooling, self.label, tags, n_steps, self.activation))
            return out
        except (BackendError, routes.ReplyError) as e:
            hint = (f" (is {self.shown_url} a vLLM server started with --runner pooling, serving api={self.api}?)"
                    if "404" in str(e) or "does not support" in str(e) else "")
            raise BackendError(f"vllm-server reward model {self.display_name}: {e}{hint}") from None

    def reward(self, requests: Sequence[RewardRequest]) -> list:
        for steps in {bool(r.steps) for r in requests}:
            self.check_kind(steps)
        if len({bool(r.steps) for r in requests}) > 1:
            raise RewardInputError("one call mixes sequence and per-step reward requests")
        units = self._units(requests)
        results: list = [None] * len(requests)
        if self._pool is None:  # one pool for the backend's life: its threads keep their connections
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="reward-http")
        for (positions, _), values in zip(units, self._pool.map(lambda u: self._call(u[0], u[1], requests), units)):
            for i, v in zip(positions, values):
                results[i] = v
        self.stats["reward_requests"] += len(requests)
        return results

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self.http.close()
