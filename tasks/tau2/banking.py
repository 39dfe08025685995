"""τ²-bench's banking_knowledge domain (97 tasks): the agent's policy is a knowledge base of ~700
documents that it searches with tools; the customer may have tools of their own (the task's
``user_tools``: apply for a card, submit a referral, call a tool the agent gave them, ...).

* Data: inspect-evals' copy of τ²-bench at fcc9ed68 (``domains/banking_knowledge``: db.json,
  documents.json.gz, tasks.json, prompts/); the tools are evalkit's own port of that commit's (same result
  texts and database hashes), run in the sandbox on the trial's own database (``runtime_banking*.py``,
  the discoverable tools' descriptions in ``banking_discoverable.json``); schemas in ``banking_tools.json``.
* Retrieval (``--task-args retrieval=...``): τ²-bench's default, ``alltools``, needs a dense embedding
  model behind an API and a shell sandbox, so evalkit's default is ``bm25_grep`` (the BM25
  ``KB_search`` tool and ``grep``, prompt ``classic_rag_bm25.md``); also ``bm25``, ``grep_only``
  (inspect-evals' default), ``full_kb`` (every document in the prompt), ``no_knowledge`` and
  ``golden_retrieval`` (the task's required documents in the prompt), each with τ²-bench's prompt.
* The customer: τ²-bench's user simulator with the task's user tools (``get_user_tools(include=
  task.user_tools)``, guidelines with tools), or none and the plain guidelines when the task lists none.
* Scoring: the reward basis is DB (88 tasks: the final database equals the gold actions', the
  customer's included, replayed on a fresh one) or ACTION (9: each gold action matched by a call).
  The breakdown: ``db_match``, ``action``, ``fail_premature``, ``fail_db``, ``fail_action`` and the
  customer's own tool calls.
"""
from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache
from pathlib import Path

from evalkit.scoring.metric import Metric
from evalkit.taskapi.agent import Episode, UserSim, canonical_json
from evalkit.taskapi.agent_task import TOOL_USE_METRICS, tool_use_figures
from evalkit.taskapi.data import DataError, DataSource
from evalkit.taskapi.items import Doc, Scored
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import register_task

from . import task as base
from .env import domain_env

DOMAIN = "banking_knowledge"
DEFAULT_RETRIEVAL = "bm25_grep"
#: τ²-bench's retrieval variants that need no embedding model or shell: (prompt template, KB tools)
RETRIEVAL = {"bm25_grep": ("classic_rag_bm25.md", ("KB_search", "grep")),
             "bm25": ("classic_rag_bm25_no_grep.md", ("KB_search",)),
             "grep_only": ("grep_only.md", ("grep",)),
             "full_kb": ("full_kb.md", ()),
             "no_knowledge": ("no_knowledge.md", ()),
             "golden_retrieval": ("required_docs.md", ())}
FAILURES = ("fail_premature", "fail_db", "fail_action")
METRICS = (Metric("reward"), Metric("db_match"), Metric("action"),
           *(Metric(f, higher_is_better=False) for f in FAILURES),
           Metric("user_tool_calls", higher_is_better=False), *TOOL_USE_METRICS)


@lru_cache(maxsize=1)
def _schemas() -> dict:
    return json.loads((Path(__file__).parent / "banking_tools.json").read_text(encoding="utf-8"))


def agent_tools(retrieval: str) -> list:
    """The retrieval tools first (τ²-bench's toolkit classes list their mixins' tools first)."""
    names = RETRIEVAL[retrieval][1]
    return [t for t in _schemas()["banking_knowledge_retrieval"] if t["function"]["name"] in names] + \
        _schemas()["banking_knowledge"]


def user_tools(task: dict) -> list:
    """``get_user_tools(include=task.user_tools)``: the listed ones, in the toolkit's order."""
    names = set(task.get("user_tools") or [])
    return [t for t in _schemas()["banking_knowledge_user"] if t["function"]["name"] in names]


@lru_cache(maxsize=2)
def documents(folder: str) -> tuple:
    path = Path(folder) / "documents.json.gz"
    if not path.is_file():
        raise DataError(f"{path}: missing (the knowledge base)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return tuple((d["id"], d["title"], d["content"]) for d in json.load(f))


def policy(folder: Path, retrieval: str, task: dict) -> str:
    """τ²-bench's ``build_policy``: the variant's template with its ``{{component:NAME}}`` includes,
    the whole knowledge base (``full_kb``) or the task's required documents (``golden_retrieval``)."""
    prompts = folder / "prompts"
    template = (prompts / RETRIEVAL[retrieval][0]).read_text(encoding="utf-8")

    def component(m):
        path = prompts / "components" / f"{m.group(1)}.md"
        if not path.is_file():
            raise DataError(f"{path}: missing (a prompt component)")
        return path.read_text(encoding="utf-8")
    text = re.sub(r"\{\{component:(\w+)\}\}", component, template)
    docs = documents(str(folder))
    if retrieval == "full_kb":
        text = text.replace("{{full_knowledge_base}}", "\n\n---\n\n".join(f"## {t}\n\n{c}" for _i, t, c in docs))
    if retrieval == "golden_retrieval":
        by = {**{i: (t, c) for i, t, c in docs}, **{t: (t, c) for _i, t, c in docs}}
        found = [by[r] for r in task.get("required_documents") or [] if r in by]
        text = text.replace("{{required_documents}}", "\n\n---\n\n".join(f"## {t}\n\n{c}" for t, c in found)
                            if found else "(No documents provided)")
    return text


def plain_guidelines(folder: Path) -> str:
    for g in (folder.parent.parent / "user_simulator", folder.parent / "user_simulator", folder):
        if (g / "simulation_guidelines.txt").is_file():
            return (g / "simulation_guidelines.txt").read_text(encoding="utf-8")
    raise DataError(f"{folder}: user_simulator/simulation_guidelines.txt not found")


class Tau2Banking(base.Tau2Task):
    name = "tau2_banking_knowledge"
    domain = DOMAIN
    dataset = DataSource()
    version = "1"
    description = ("tau2-bench banking_knowledge (97 tasks): a bank's customer-service agent searching a knowledge "
                   "base (retrieval=bm25_grep|bm25|grep_only|full_kb|no_knowledge|golden_retrieval), the customer's "
                   "own tools in the sandbox too; DB or ACTION scoring, pass^k over --task-args trials=K")
    metrics = METRICS
    known_options = tuple(o for o in base.Tau2Task.known_options if o not in ("nl_in_reward", "judge_max_tokens")) \
        + ("retrieval",)

    def retrieval(self) -> str:
        r = str(self.options.get("retrieval", DEFAULT_RETRIEVAL))
        if r not in RETRIEVAL:
            raise ValueError(f"task {self.name}: retrieval must be one of {', '.join(RETRIEVAL)}, got {r!r}")
        return r

    def episode(self, doc: Doc, ctx) -> Episode:
        dom = self._domain()
        task = doc.meta["task"]
        r = self.retrieval()
        system = base.AGENT_SYSTEM.format(agent_instruction=base.AGENT_INSTRUCTION,
                                          domain_policy=policy(dom.path, r, task))
        mine = user_tools(task)
        guidelines = dom.user_guidelines if mine else plain_guidelines(dom.path)
        max_tokens = int(self.options.get("max_tokens", 1024))
        sim = UserSim(base.USER_SYSTEM.format(global_user_sim_guidelines_with_persona=guidelines,
                                              instructions=base.user_instructions(task)),
                      params=GenParams(max_tokens=max_tokens,
                                       temperature=float(self.options.get("user_temperature", 0.0))),
                      max_steps=int(self.options.get("max_steps", base.MAX_STEPS)),
                      max_errors=int(self.options.get("max_errors", base.MAX_ERRORS)), tools=canonical_json(mine),
                      parser=ctx.tool_parser if mine else None)
        return Episode.build([{"role": "system", "content": system}], [], agent_tools(r),
                             env=domain_env(DOMAIN, dom.db_path, task, retrieval=r), parser=ctx.tool_parser,
                             params=GenParams(max_tokens=max_tokens, temperature=0.0), max_steps=sim.max_steps,
                             user_sim=sim)

    def judge_requests(self, doc, responses, ctx):
        return []  # no natural-language assertions in this domain

    def with_nl_verdict(self, scored, doc, t, ctx):
        return scored

    def trial_scored(self, t, verdict: dict, tools) -> Scored:
        premature = t.stop_reason not in base.ENDED_BY_CONVERSATION
        basis = verdict.get("basis") or []
        db_ok, act_ok = verdict.get("db_match") is not False, verdict.get("action") is not False
        metrics = {"reward": 0.0 if premature else float(verdict["reward"]), "db_match": float(db_ok),
                   "action": float(act_ok), "fail_premature": float(premature),
                   "fail_db": float(not premature and "DB" in basis and not db_ok),
                   "fail_action": float(not premature and "ACTION" in basis and not act_ok),
                   "user_tool_calls": len(t.user_calls()), **tool_use_figures(t, tools)}
        extra = {"stop_reason": t.stop_reason, "seconds": round(t.seconds, 3), "reward_basis": basis,
                 "db_hash": verdict.get("db_hash"), "gold_db_hash": verdict.get("gold_db_hash"),
                 "actions": verdict.get("actions"), "communicate_details": verdict.get("communicate_details"),
                 "retrieval": self.retrieval()}
        return Scored(metrics, extracted=None, extra=extra)

    def run_extra(self, samples):
        return {**super().run_extra(samples), "retrieval": self.retrieval(),
                "user_simulator": "tau2-bench's simulation guidelines (simulation_guidelines_tools.txt with the "
                                  "task's user_tools, else simulation_guidelines.txt)"}


register_task(Tau2Banking)
