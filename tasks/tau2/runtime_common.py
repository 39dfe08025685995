"""The τ²-bench domain database as a tool environment, run inside evalkit's sandbox. This file is
never imported by evalkit: its text heads a ``ToolEnv`` source (``tasks/tau2/env.py``) and is
followed by one domain's tools (``runtime_airline.py``, ``runtime_retail.py``), which define
``TOOLS`` ({name: function(db, **arguments)}) and ``normalise(db)``.

The state carried between calls is small: the database file's key in ``FILES`` (its bytes, handed in
by the sandbox) and the records the episode
touched (``changes``: {table: {key: record or None}}); each call loads the released database,
applies the changes, runs the tool on it and keeps the records it read or wrote. Tool results are
what τ²-bench's ``Environment.to_json_str`` makes of them (``json.dumps(model_dump(), default=str)``)
and errors what its ``get_response`` gives the agent ("Error: " and the message).
``snapshot`` is τ²-bench's ``get_db_hash`` (sha256 of the database dumped with sorted keys) and
the keys of the records that changed.
"""
import gzip
import hashlib
import json


class ToolError(Exception):
    """A tool refused (τ²-bench raises ValueError); the agent reads "Error: <message>"."""

    evalkit_plain = True


class _Tracked(dict):
    """A table that remembers the keys a tool read or wrote."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.touched = set()

    def __getitem__(self, key):
        self.touched.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.touched.add(key)
        return super().get(key, default)

    def __setitem__(self, key, value):
        self.touched.add(key)
        super().__setitem__(key, value)

    def pop(self, key, *default):
        self.touched.add(key)
        return super().pop(key, *default)


def _read(key):
    """The JSON file ``FILES[key]`` (gzip-compressed or not), as the sandbox handed it in."""
    data = FILES[key]  # noqa: F821 (set by the sandbox's tool driver)
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def _database(state):
    db = _read(state["file"])
    normalise(db)  # noqa: F821 (defined by the domain's tools below)
    for table, rows in state["changes"].items():
        for key, record in rows.items():
            if record is None:
                db[table].pop(key, None)
            else:
                db[table][key] = record
    return db


def setup(config):
    return {"file": "db", "changes": {}}


def to_json_str(resp):
    """τ²-bench's ``Environment.to_json_str``: text as it is, models (here: their dicts) and lists of
    them as ``json.dumps(..., default=str)``."""
    return resp if isinstance(resp, str) else json.dumps(resp, default=str)


def call(state, name, arguments):
    if name not in TOOLS:  # noqa: F821
        raise ToolError(f"Tool '{name}' not found.")
    db = _database(state)
    tables = {t: _Tracked(rows) for t, rows in db.items()}
    db.update(tables)
    try:
        result = TOOLS[name](db, **arguments)  # noqa: F821
    except ToolError:
        raise
    except Exception as e:  # τ²-bench's get_response turns any exception into "Error: {e}"
        raise ToolError(str(e)) from None
    finally:
        for t, rows in tables.items():
            for key in rows.touched:
                state["changes"].setdefault(t, {})[key] = rows[key] if key in rows else None
    return to_json_str(result)


def db_hash(db):
    return hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest()


def snapshot(state):
    db = _database(state)
    base = _read(state["file"])
    normalise(base)  # noqa: F821
    changed = sorted(f"{t}/{k}" for t, rows in state["changes"].items() for k, r in rows.items()
                     if base[t].get(k) != r)
    return {"db_hash": db_hash(db), "changed": changed}
