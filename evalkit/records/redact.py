"""Secrets never reach a record, a log or the cache. ``scrub`` drops them from any dict tree (keys
that name credentials, values that look like keys); credentials in URLs
(``https://user:key@host/v1?api-key=...``) are redacted wherever a URL is written (run records, logs,
the cache identity, error messages), while the request itself keeps them."""
from __future__ import annotations

import re
import urllib.parse

# query parameters that carry credentials (api-key, api_key, key, token, access_token, sig, ...)
_SECRET_PARAM = re.compile(r"(^|[_-])(api[_-]?key|apikey|key|token|secret|password|passwd|sig|signature|"
                           r"auth|authorization|credentials?|code)$", re.I)
_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
REDACTED = "REDACTED"


def redact_url(url: str) -> str:
    """The URL with userinfo and secret query values replaced by ``REDACTED``."""
    try:
        u = urllib.parse.urlsplit(url)
    except ValueError:
        return url
    if not u.scheme or not u.netloc:
        return url
    netloc = u.netloc
    if "@" in netloc:
        host = netloc.rsplit("@", 1)[1]
        netloc = f"{REDACTED}@{host}"
    query = u.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        query = urllib.parse.urlencode([(k, REDACTED if _SECRET_PARAM.search(k) else v) for k, v in pairs],
                                       safe=REDACTED)
    return urllib.parse.urlunsplit((u.scheme, netloc, u.path, query, u.fragment))


def has_credentials(url: str) -> bool:
    return redact_url(url) != url


def redact_text(text: str) -> str:
    """Every URL inside ``text`` redacted (for log lines and error messages)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


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
    if isinstance(obj, str) and "://" in obj:  # user:key@host and ?api-key= in URLs
        return redact_text(obj)
    return obj
