"""Judge prompt templates: FastChat's eight MT-Bench prompts, bundled, plus the user's own files.

A template file is JSON Lines in FastChat's ``judge_prompts.jsonl`` format, one template a line:
``{"name", "type": "single"|"pairwise", "system_prompt", "prompt_template", "output_format":
"[[rating]]"|"[[A]]", "category", "description"}``. ``prompt_template`` is a ``str.format`` string
(write literal braces as ``{{ }}``); its placeholders say what the template needs:
``{question}``/``{answer}`` (single, one turn), ``{question_1}``, ``{answer_1}``, ... (multi-turn),
``{answer_a}``/``{answer_b}`` (pairwise), ``{ref_answer_1}`` (reference-guided).

Each template is versioned by a hash of its text, so a run record names exactly what the judge
was asked. Which template grades what follows FastChat's gen_judgment.py: one of eight *roles*
(single or pairwise x reference-guided or not x first or second turn), each mapped to a template
name that ``--judge-template ROLE=NAME`` can change.
"""
from __future__ import annotations

import hashlib
import logging
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from evalkit.taskapi.data import DataError, read_records

log = logging.getLogger(__name__)

BUNDLED_FILE = Path(__file__).with_name("judge_prompts.jsonl")
BUNDLED_SOURCE = ("https://github.com/lm-sys/FastChat fastchat/llm_judge/data/judge_prompts.jsonl "
                  "@0e6d3e4beaab66f4d3f93db72541a4abab8af28d (Apache-2.0)")
OUTPUT_FORMATS = {"single": "[[rating]]", "pairwise": "[[A]]"}

# role -> FastChat's template name (gen_judgment.py: make_judge_single / make_judge_pairwise)
DEFAULT_ROLES = {
    "single": "single-v1",
    "single-ref": "single-math-v1",
    "single-multi": "single-v1-multi-turn",
    "single-ref-multi": "single-math-v1-multi-turn",
    "pair": "pair-v2",
    "pair-ref": "pair-math-v1",
    "pair-multi": "pair-v2-multi-turn",
    "pair-ref-multi": "pair-math-v1-multi-turn",
}


def role_name(kind: str, ref: bool, multi_turn: bool) -> str:
    base = "single" if kind == "single" else "pair"
    return base + ("-ref" if ref else "") + ("-multi" if multi_turn else "")


@dataclass(frozen=True)
class JudgeTemplate:
    name: str
    type: str               # "single" or "pairwise"
    system_prompt: str
    prompt_template: str
    output_format: str      # "[[rating]]" or "[[A]]"
    category: str = "general"
    description: str = ""
    source: str = BUNDLED_SOURCE

    @property
    def fields(self) -> set:
        return {f for _, f, _, _ in string.Formatter().parse(self.prompt_template) if f}

    @property
    def multi_turn(self) -> bool:
        return "question_2" in self.fields

    @property
    def ref_based(self) -> bool:
        return "ref_answer_1" in self.fields

    @property
    def version(self) -> str:
        blob = "\x1f".join((self.type, self.system_prompt, self.prompt_template, self.output_format))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]

    def render(self, **values) -> str:
        missing = sorted(self.fields - set(values))
        if missing:
            raise ValueError(f"judge template {self.name!r} needs {', '.join(missing)}")
        return self.prompt_template.format(**values)

    def messages(self, user_prompt: str) -> tuple:
        """The judge's chat: FastChat's system message (when there is one), then the user prompt."""
        msgs = (("system", self.system_prompt),) if self.system_prompt.strip() else ()
        return msgs + (("user", user_prompt),)

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "type": self.type, "source": self.source}


_ALLOWED = {
    ("single", False): {"question", "answer", "ref_answer_1"},
    ("single", True): {"question_1", "question_2", "answer_1", "answer_2", "ref_answer_1", "ref_answer_2"},
    ("pairwise", False): {"question", "answer_a", "answer_b", "ref_answer_1"},
    ("pairwise", True): {"question_1", "question_2", "answer_a_1", "answer_a_2", "answer_b_1", "answer_b_2",
                         "ref_answer_1", "ref_answer_2"},
}


def _template_from(data: dict, where: str) -> JudgeTemplate:
    for key in ("name", "type", "system_prompt", "prompt_template", "output_format"):
        if not isinstance(data.get(key), str):
            raise DataError(f"{where}: judge template field {key!r} is missing or not a string")
    kind = data["type"]
    if kind not in OUTPUT_FORMATS:
        raise DataError(f"{where}: judge template type {kind!r} is not 'single' or 'pairwise'")
    if data["output_format"] != OUTPUT_FORMATS[kind]:
        raise DataError(f"{where}: a {kind} template must use output_format {OUTPUT_FORMATS[kind]!r} "
                        f"(got {data['output_format']!r}); evalkit parses only those")
    t = JudgeTemplate(data["name"], kind, data["system_prompt"], data["prompt_template"], data["output_format"],
                      str(data.get("category", "general")), str(data.get("description", "")), where)
    try:
        fields = t.fields
    except ValueError as e:
        raise DataError(f"{where}: prompt_template of {t.name!r} is not a format string ({e}); "
                        f"write literal braces as {{{{ }}}}") from None
    unknown = fields - _ALLOWED[(kind, t.multi_turn)]
    if unknown:
        raise DataError(f"{where}: template {t.name!r} uses unknown placeholders {sorted(unknown)}; allowed: "
                        f"{sorted(_ALLOWED[(kind, t.multi_turn)])}")
    return t


def load_templates(extra_files: Iterable[str] = ()) -> dict[str, JudgeTemplate]:
    """The bundled FastChat templates, then each user file's (a same-named template replaces it)."""
    out = {}
    for rec in read_records(BUNDLED_FILE):
        t = _template_from(rec.data, BUNDLED_SOURCE)
        out[t.name] = t
    for path in extra_files:
        for rec in read_records(path):
            t = _template_from(rec.data, str(rec.where))
            if t.name in out:
                log.warning("judge template %r from %s replaces the one from %s", t.name, rec.where, out[t.name].source)
            out[t.name] = t
    return out


class TemplateSet:
    """The templates of one run and which one plays each role."""

    def __init__(self, extra_files: Iterable[str] = (), roles: Optional[dict] = None):
        self.templates = load_templates(extra_files)
        self.roles = dict(DEFAULT_ROLES)
        for role, name in (roles or {}).items():
            if role not in DEFAULT_ROLES:
                raise ValueError(f"--judge-template {role}={name}: unknown role; roles: {', '.join(DEFAULT_ROLES)}")
            self.roles[role] = name
        for role, name in self.roles.items():
            t = self.templates.get(name)
            if t is None:
                raise ValueError(f"judge template {name!r} (role {role}) not found; have: {', '.join(self.templates)}")
            kind = "single" if role.startswith("single") else "pairwise"
            if t.type != kind or t.multi_turn != role.endswith("-multi") or t.ref_based != ("-ref" in role):
                raise ValueError(f"judge template {name!r} cannot play role {role}: it is a {t.type} template, "
                                 f"{'multi' if t.multi_turn else 'single'}-turn, "
                                 f"{'with' if t.ref_based else 'without'} a reference")

    def pick(self, kind: str, ref: bool, multi_turn: bool) -> JudgeTemplate:
        return self.templates[self.roles[role_name(kind, ref, multi_turn)]]

    def describe(self) -> dict:
        return {role: self.templates[name].describe() for role, name in self.roles.items()}


def parse_roles(items: Iterable[str]) -> dict:
    """``ROLE=NAME`` items (``--judge-template``) as a dict."""
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--judge-template {item!r}: expected ROLE=NAME, e.g. single=my-single-v1")
        role, name = (x.strip() for x in item.split("=", 1))
        out[role] = name
    return out
