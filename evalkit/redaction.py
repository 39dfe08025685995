"""Secrets never reach a record, a log or the cache: ``scrub`` drops them from any dict tree."""
from __future__ import annotations

import re

# key names that hold credentials: api_key, token, hf_token, access_token, client_secret, password...
_SECRET_KEY = re.compile(r"(^|[_-])(api_?key|apikey|token|secret|password|passwd|authorization|bearer|credentials?)$")
# settings that end in "token" but are flags or ids, not credentials (add_bos_token, pad_token)
_NOT_SECRET = re.compile(r"(^|_)(bos|eos|pad|unk|sep|cls|mask)_token(_id)?$")
# values that look like keys whatever their field is called (OpenAI/HF style)
_SECRET_VALUE = re.compile(r"^(sk-|hf_|Bearer\s)[A-Za-z0-9_\-]{12,}")


def _is_secret(key) -> bool:
    k = str(key).lower()
    return bool(_SECRET_KEY.search(k)) and not _NOT_SECRET.search(k)


def scrub(obj):
    """Drop anything that looks like a secret from a dict tree before it is written anywhere."""
    if isinstance(obj, dict):
        return {k: ("<redacted>" if _is_secret(k) else scrub(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    if isinstance(obj, str) and _SECRET_VALUE.match(obj):
        return "<redacted>"
    return obj
