"""A model role of a run: the evaluated model, the simulated user, the judge and a second judge.

Each role is one ``ModelRole``: the spec and the options the user gave, with the flags they were given
with (``--judge`` and ``--judge-args``), so every error names the flag the user typed. One parser
(``ModelRole.of``), one check (``check``: the spec's backend and name, the options' types and ranges
and whether the backend takes them, all before any model loads), one factory (``make``) and one close
(``close_all``). Options given for a role that is not named (``--judge-args`` without ``--judge``) are
refused, never dropped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from evalkit.backends import DATA_PARALLEL_ARGS, _check_args, backend_class, make_backend, split_spec
from evalkit.run import validation
from evalkit.util.kvargs import parse_model_args


@dataclass
class ModelRole:
    role: str                       # "model", "user", "judge", "second judge"
    spec: Optional[str]
    args: dict = field(default_factory=dict)
    spec_flag: str = "--model"
    args_flag: str = "--model-args"

    @classmethod
    def of(cls, role: str, spec: Optional[str], args_text: str = "", spec_flag: str = "--model",
           args_flag: str = "--model-args") -> "ModelRole":
        """The role from its two flags' values; options without a model are an error naming both flags."""
        if not spec:
            if (args_text or "").strip():
                raise validation.ConfigError(f"{args_flag} given without {spec_flag}: name the {role} model with "
                                             f"{spec_flag} BACKEND:MODEL, or drop {args_flag}")
            return cls(role, None, {}, spec_flag, args_flag)
        return cls(role, spec, parse_model_args(args_text, args_flag), spec_flag, args_flag).check()

    @property
    def given(self) -> bool:
        return bool(self.spec)

    @property
    def prefix(self) -> str:
        return split_spec(self.spec, self.spec_flag)[0]

    def check(self) -> "ModelRole":
        """The spec and options as far as they can be checked without loading anything."""
        prefix, name = split_spec(self.spec, self.spec_flag)
        if prefix in ("hf", "vllm") and name.startswith(("/", "./", "../", "~")) and \
                not Path(name).expanduser().exists():
            raise validation.ConfigError(f"{self.spec_flag} {self.spec!r}: no such folder {name}")
        validation.check_model_args(prefix, self.args, self.args_flag)
        _check_args(backend_class(prefix), prefix,
                    {k: v for k, v in self.args.items() if k not in DATA_PARALLEL_ARGS}, self.args_flag)
        return self

    def make(self, **extra):
        """The role's backend (None when the role is not given); a backend's own complaint about its
        options names this role's flag."""
        if not self.given:
            return None
        from evalkit.backends.openai_http import BackendError
        try:
            backend = make_backend(self.spec, self.args, flags=(self.spec_flag, self.args_flag), **extra)
        except (ValueError, BackendError) as e:  # (an openai: server is asked its models when made)
            own = self._own_flags(str(e))
            if own == str(e):
                raise
            raise type(e)(own) from None
        http = getattr(backend, "http", None)
        if http is not None and self.spec_flag != "--model":
            http.url_flag = f"{self.args_flag} base_url="  # where this role's server address is given
        return backend

    def _own_flags(self, message: str) -> str:
        """A backend's message with the main model's flags replaced by this role's."""
        if self.spec_flag == "--model":
            return message
        return message.replace("--model-args", self.args_flag).replace("--base-url", f"{self.args_flag} base_url=")


def close_all(*backends) -> None:
    for b in backends:
        if b is not None:
            b.close()
