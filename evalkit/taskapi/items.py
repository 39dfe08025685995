"""The typed items a task works with: ``Doc`` (one evaluation item), ``Sample`` (its scored outcome,
one line of the samples file, built by ``make_sample`` only), ``Scored`` (what a task's scoring returns) and
``RunContext`` (the run as tasks see it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from evalkit.util.hashing import content_hash  # noqa: F401 (re-exported: tasks hash their docs with it)




@dataclass
class Doc:
    """One evaluation item, typed. ``query`` is the prompt body without few-shot examples."""

    id: str
    query: str
    target: Any = None                    # reference answer(s)
    choices: Optional[list[str]] = None   # multiple choice options (continuations)
    gold: Optional[int] = None            # index of the right choice
    fewshot_target: Optional[str] = None  # text shown after the query when used as an example
    meta: dict = field(default_factory=dict)

    def hash(self) -> str:
        if "_hash" not in self.__dict__:
            self.__dict__["_hash"] = content_hash({f: getattr(self, f) for f in self.__dataclass_fields__})
        return self.__dict__["_hash"]


@dataclass
class Sample:
    """The scored outcome of one doc, written as one line of the samples file."""

    doc_id: str
    doc_hash: str
    prompt: Any
    responses: list
    target: Any
    metrics: dict
    extracted: Any = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}  # shallow: rows are written, not mutated
        d["prompt_hash"] = content_hash(self.prompt)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Sample":
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})


_UNSET = object()


@dataclass
class Scored:
    """What a task's scoring returns: values only. The framework turns it into the ``Sample`` (doc
    id and hash, the prompt and responses as the samples file shows them, the target) through
    ``make_sample``; a task sets ``prompt``, ``responses`` or ``target`` only where its samples
    show something else than its shape's default."""

    metrics: dict
    extracted: Any = None
    extra: dict = field(default_factory=dict)
    target: Any = _UNSET     # the sample's target; default: the task's ``sample_target(doc)``
    prompt: Any = _UNSET     # default: the task's ``sample_prompt(doc, ctx)``
    responses: Any = _UNSET  # default: the task's ``recorded_responses(responses)``


def make_sample(doc: Doc, scored: Scored, prompt: Any, responses: list, target: Any) -> Sample:
    """The one place a ``Sample`` is built: the doc's id and hash, and the scored values; ``prompt``,
    ``responses`` and ``target`` are the defaults a field of ``scored`` left unset takes."""
    return Sample(doc_id=doc.id, doc_hash=doc.hash(),
                  prompt=prompt if scored.prompt is _UNSET else scored.prompt,
                  responses=responses if scored.responses is _UNSET else scored.responses,
                  target=target if scored.target is _UNSET else scored.target,
                  metrics=scored.metrics, extracted=scored.extracted, extra=scored.extra)


@dataclass
class RunContext:
    """What a task needs to know about the run when it builds prompts and requests."""

    seed: int = 1234
    num_fewshot: Optional[int] = None        # None: the task's default
    apply_chat_template: bool = False
    system_prompt: Optional[str] = None
    gen_overrides: dict = field(default_factory=dict)  # e.g. max_tokens, temperature, n
    render_chat: Optional[Callable[[list[dict]], str]] = None
    #: with a chat template: few-shot examples as user/assistant turns (None: yes, as lm-eval does)
    fewshot_as_multiturn: Optional[bool] = None
    #: agent tasks: the parser of tool calls in the model's text (``--tool-parser``; None: the backend's default)
    tool_parser: Optional[str] = None
    #: the model's tokenizer (text -> token ids, no special tokens), for tasks that size their prompts
    #: in tokens (RULER); None when the backend has none (a server in text mode, a dry run)
    tokenize: Optional[Callable[[str], list]] = None
    #: the model's context length in tokens (the backend's ``max_length``), for tasks that size or refuse
    #: prompts by it (AA-LCR); None when the backend cannot tell or there is none (a dry run)
    max_length: Optional[int] = None
    #: answers of the run's judge model (``--judge``) to the tasks' ``judge_requests``, by request key;
    #: empty without a judge
    judgments: dict = field(default_factory=dict)
    #: a second judge's answers to the same requests (``--second-judge``): judged metrics record how often
    #: the two judges agree; the first judge's verdicts give the figures
    second_judgments: dict = field(default_factory=dict)
