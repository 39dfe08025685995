"""The JSON Schema of run records, generated from the dataclasses in ``evalkit.records``.

The shipped copy is ``evalkit/records/run.schema.json``; ``python -m evalkit.records.schema`` writes
it again and a test checks that the two agree. Tools in other languages validate records with it.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import typing
from pathlib import Path

from evalkit.records import record as records
from evalkit.records.values import MetricValue

SCHEMA_PATH = Path(__file__).with_name("run.schema.json")
_SIMPLE = {str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
           bool: {"type": "boolean"}, dict: {"type": "object"}, list: {"type": "array"}}


def _type_schema(hint) -> dict:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return {"anyOf": [_type_schema(a) for a in args]}
    if hint is type(None):
        return {"type": "null"}
    if hint is MetricValue:
        return {"$ref": "#/$defs/MetricValue"}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1]) if args else {}}
    if origin is list:
        return {"type": "array"}
    return dict(_SIMPLE.get(hint, {}))


def _object_schema(cls) -> dict:
    hints = typing.get_type_hints(cls)
    props, required = {}, []
    for f in dataclasses.fields(cls):
        if f.name == "other":
            continue
        props[f.name] = _type_schema(hints[f.name])
        if cls is records.Run and f.name == "kind":
            props[f.name] = {"enum": list(records.KINDS)}
        if f.name not in cls.OMIT_IF_NONE and f.name not in ("kind",):
            required.append(f.name)
    doc = " ".join((cls.__doc__ or "").split())
    return {"type": "object", "description": doc, "properties": props, "required": required,
            "additionalProperties": True}


_NUMBER_OR_NULL = {"type": ["number", "null"]}
METRIC_VALUE = {
    "type": "object", "description": " ".join((MetricValue.__doc__ or "").split()),
    "properties": {"value": _NUMBER_OR_NULL, "stderr": _NUMBER_OR_NULL, "ci_low": _NUMBER_OR_NULL,
                   "ci_high": _NUMBER_OR_NULL, "n": {"type": "integer", "minimum": 0}, "kind": {"type": "string"},
                   "higher_is_better": {"type": "boolean"}},
    "required": ["value"], "additionalProperties": True}
# what every record of every schema has (schema-1 records lack kind and the blocks added later)
REQUIRED = {"Run": ["schema_version", "run_id", "created_at", "model", "config", "tasks"],
            "ModelInfo": ["name", "backend"],
            "TaskEntry": ["version", "output_type", "n_docs", "metrics"]}


def generate() -> dict:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "evalkit run record (run.json)",
              "description": f"schema_version {records.SCHEMA_VERSION}; records of schema 1 lack 'kind'.",
              **_object_schema(records.Run),
              "$defs": {c.__name__: _object_schema(c) for c in (records.ModelInfo, records.TaskEntry)}}
    schema["required"] = REQUIRED["Run"]
    for name, d in schema["$defs"].items():
        d["required"] = REQUIRED[name]
    schema["$defs"]["MetricValue"] = METRIC_VALUE
    return schema


def main(argv=None) -> int:
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(json.dumps(generate(), indent=2) + "\n", encoding="utf-8")
    print(SCHEMA_PATH, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
