"""Short content hashes of JSON-able values: doc and prompt hashes, dataset fingerprints, identities."""
from __future__ import annotations

import hashlib
import json


def content_hash(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
