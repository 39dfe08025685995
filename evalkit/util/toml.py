"""TOML reading on every supported Python: the standard library's ``tomllib`` (3.11+), else ``tomli``
(the same parser, a dependency of evalkit on 3.10)."""
from __future__ import annotations

try:
    import tomllib as _toml
except ImportError:  # Python 3.10
    import tomli as _toml

loads = _toml.loads
load = _toml.load
TOMLDecodeError = _toml.TOMLDecodeError
