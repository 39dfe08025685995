"""``k=v,k2=v2`` option strings (``--model-args``, ``--gen-kwargs``, ``--task-args``, metric specs)."""
from __future__ import annotations


def parse_model_args(text: str | None, flag: str = "--model-args") -> dict:
    """``k=v,k2=v2`` with ints, floats, booleans and ``none`` typed (``flag`` names the option in errors)."""
    out = {}
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part or not part.split("=", 1)[0].strip():
            raise ValueError(f"{flag}: {part!r} is not key=value")
        k, v = part.split("=", 1)
        out[k.strip()] = _coerce(v.strip())
    return out


def _coerce(v: str):
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v
