"""User-facing errors: the CLI prints their message on one line and exits 2 (no traceback
unless ``--verbose``). Lower layers raise these; ``evalkit.cli.main`` decides how they are shown."""
from __future__ import annotations


class EvalkitError(Exception):
    """A user-facing error: printed without a traceback, exit code 2."""


class CacheError(EvalkitError):
    """The response cache cannot be opened, read or written; the message names the file."""


class ConfigError(EvalkitError, ValueError):
    """A config file or option is invalid; the message names the file, key or flag."""


class RequestsFailed(EvalkitError):
    """Some requests got no usable answer. Nothing of theirs was cached; what finished was."""

    def __init__(self, message: str, failed: int, committed: int):
        super().__init__(message)
        self.failed, self.committed = failed, committed


class RequestFailure:
    """What a streaming backend yields instead of a result when one request's reply is unusable
    (a malformed server reply): the engine counts it, caches nothing for it and goes on."""

    __slots__ = ("problem",)

    def __init__(self, problem: str):
        self.problem = problem

    def __repr__(self):
        return f"RequestFailure({self.problem!r})"
