"""Is the Hugging Face hub reachable? Asked once, in about a second, before a hub lookup that would
otherwise retry for half a minute offline. When it is not, the process goes offline
(``HF_HUB_OFFLINE=1``, ``HF_DATASETS_OFFLINE=1``): what is in the local HF cache still loads."""
from __future__ import annotations

import os
import socket
import urllib.parse
from functools import lru_cache
from typing import Optional

OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def offline_by_choice() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in OFFLINE_VARS)


@lru_cache(maxsize=1)
def unreachable() -> Optional[str]:
    """Why the hub cannot be reached (None: it can, or a proxy decides and we cannot tell)."""
    if offline_by_choice() or any(os.environ.get(v) for v in PROXY_VARS):
        return None
    host = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=1.5).close()
        return None
    except OSError as e:
        return f"{host} cannot be reached ({e.strerror or type(e).__name__})"


def go_offline_if_unreachable() -> Optional[str]:
    reason = unreachable()
    if reason:
        for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
            os.environ[v] = "1"
    return reason


def hint(reason: Optional[str]) -> str:
    if reason:
        return f" The hub is not reachable ({reason}); evalkit looked only in the local cache."
    if offline_by_choice():
        return " HF_HUB_OFFLINE is set, so only the local cache was searched."
    return " Offline? Set HF_HUB_OFFLINE=1 to skip the hub lookup."
