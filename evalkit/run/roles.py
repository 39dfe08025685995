"""A model role of a run: the evaluated model, the simulated user, the judge, a second judge and a
reward model (``RewardRole``: its own spec forms and backends).

Each role is one ``ModelRole``: the spec and the options the user gave, with the flags they were given
with (``--judge`` and ``--judge-args``), so every error names the flag the user typed. One parser
(``ModelRole.of``), one check (``check``: the spec's backend and name, the options' types and ranges
and whether the backend takes them, all before any model loads), one factory (``make``) and one close
(``close_all``). Options given for a role that is not named (``--judge-args`` without ``--judge``) are
refused, never dropped. ``load`` gives a made role as the run takes it (``Bound``: the backend, and
the spec and options its record names).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Optional, Union

from evalkit.backends import DATA_PARALLEL_ARGS, make_backend, split_spec
from evalkit.backends.options import OPTIONS
from evalkit.run import validation
from evalkit.util.kvargs import parse_model_args


class Bound(NamedTuple):
    """A role's backend as a run uses it, with the spec and options its record names."""
    backend: object
    spec: str = ""
    args: Optional[dict] = None


@dataclass
class ModelRole:
    role: str                       # "model", "simulated user", "judge", "second judge", "reward"
    spec: Optional[str]
    args: dict = field(default_factory=dict)
    spec_flag: str = "--model"
    args_flag: str = "--model-args"

    @classmethod
    def of(cls, role: str, spec: Optional[str], args: Union[str, dict, None] = "", spec_flag: str = "--model",
           args_flag: str = "--model-args") -> "ModelRole":
        """The role from its two flags' values (the options as K=V,... text or a dict); options without
        a model are an error naming both flags."""
        text = isinstance(args, str)
        if not spec:
            if (args or "").strip() if text else args:
                raise validation.ConfigError(f"{args_flag} given without {spec_flag}: name the {role} model with "
                                             f"{spec_flag} BACKEND:MODEL, or drop {args_flag}")
            return cls(role, None, {}, spec_flag, args_flag)
        return cls(role, spec, parse_model_args(args, args_flag) if text else dict(args or {}), spec_flag,
                   args_flag).check()

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
        validation.check_model_args(prefix, self.args, self.args_flag)  # types and ranges, then unknown keys
        if prefix in OPTIONS:
            OPTIONS[prefix].parse({k: v for k, v in self.args.items() if k not in DATA_PARALLEL_ARGS},
                                  self.args_flag)
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

    def load(self, **extra) -> Optional[Bound]:
        """The made role as a run takes it (None when the role is not given)."""
        backend = self.make(**extra)
        return None if backend is None else Bound(backend, self.spec, self.args)

    def _own_flags(self, message: str) -> str:
        """A backend's message with the main model's flags replaced by this role's."""
        if self.spec_flag == "--model":
            return message
        return message.replace("--model-args", self.args_flag).replace("--base-url", f"{self.args_flag} base_url=")


class RewardRole(ModelRole):
    """The reward model (``--reward-model``; ``evalkit reward --model``): hf:, vllm: or vllm-server: specs
    and the reward backends (``evalkit.backends.reward_catalog``)."""

    @property
    def prefix(self) -> str:
        from evalkit.backends.reward_catalog import split_reward_spec
        return split_reward_spec(self.spec, self.spec_flag)[0]

    def check(self) -> "RewardRole":
        validation.check_model_args("hf" if self.prefix == "hf" else "vllm", self.args, self.args_flag)
        return self

    def make(self, **extra):
        """The reward backend; it loads nothing, so impossible settings fail here, before any model loads."""
        if not self.given:
            return None
        from evalkit.backends.reward_catalog import make_reward_backend
        return make_reward_backend(self.spec, {**self.args, **extra}, self.spec_flag)


def close_all(*backends) -> None:
    """Close each backend (a ``Bound`` role's too); None stands for a role not given."""
    for b in backends:
        b = b.backend if isinstance(b, Bound) else b
        if b is not None:
            b.close()
