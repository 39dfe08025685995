"""Credentials in URLs: ``https://user:key@host/v1?api-key=...`` must never be written anywhere
(run records, logs, the cache identity, error messages), while the request itself keeps them."""
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
