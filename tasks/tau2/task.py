"""τ²-bench (Barres et al. 2025; sierra-research/tau2-bench): a customer-service agent serves a
simulated customer under a domain policy, calling domain tools that read and write a database.

``tau2_airline`` (50 tasks), ``tau2_retail`` (114) and ``tau2_telecom`` (2,285; τ²-bench's default
``base`` split: 114; ``split=full|small|train|test``), played on evalkit's agent loop as τ²-bench's
orchestrator plays them (``tau2/orchestrator/orchestrator.py``, half duplex):

* the agent's system prompt is τ²-bench's ``<instructions>`` and ``<policy>``; it opens with "Hi! How
  can I help you today?"; its tools are the domain's (``tools_schema``), run in evalkit's sandbox on
  the task's own copy of the database;
* the customer is a second model (``--user-model``, default the evaluated model itself) with
  τ²-bench's simulation guidelines and the task's ``<scenario>``; it never sees tool calls, and ends the
  conversation with ``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###``;
* at most 200 messages and 10 failed tool calls (τ²-bench's defaults), else the trial fails;
* telecom is dual control: the customer has a phone (``user_db.toml``) and its tools, offered to the
  user model (τ²-bench's ``simulation_guidelines_tools``); its calls run in the sandbox on the same
  per-trial state as the agent's, after the task's initial state (its ``initialization_actions``).

Scored as τ²-bench's evaluator scores (``tau2/evaluator``): a trial ended any other way than by the
user (max steps, too many errors, an empty message) gets reward 0; otherwise the reward is the
product over the task's reward basis (default DB and COMMUNICATE): the final database equals the one
the task's gold actions give when replayed on a fresh copy, and every piece of information the agent
had to communicate appears in its messages; telecom's basis is ENV_ASSERTION (assertions on the
final state of the line and the phone, e.g. mobile data works) and for some tasks ACTION.
``--task-args trials=K`` (or ``--repeats K``) plays K
trials per task, each with its own seed, and reports pass^k (all k trials of a task pass, τ-bench's
unbiased estimate) for k ≤ K with CIs over tasks; ``reward`` is the mean over trials (pass^1).

The breakdown: ``db_match`` and ``communicate`` (shares of trials), and why trials failed:
``fail_premature`` (the conversation was cut: max steps, too many errors, an empty message),
``fail_db`` (wrong final database: a wrong or missing write), ``fail_communicate`` (information not
given); telecom's: ``fail_premature``, ``fail_env_assertion``, ``fail_action``. What evalkit does
differently: nothing in the scoring.

Natural-language assertions (airline: all 50 tasks, retail: 8), which τ²-bench treats as
experimental and keeps out of the default reward basis, are judged with ``--judge MODEL``
(``nl_assertions.py``: τ²-bench's judge prompt, one judge request per trial): ``nl_assertions`` is the
share of trials whose assertions all hold (over the tasks that have some), each trial keeps the
judge's checks (``extra.nl_assertion_checks``); ``--task-args TASK:nl_in_reward=true`` multiplies it
into the reward, as τ²-bench does when ``NL_ASSERTION`` is in a task's reward basis
(``judge_max_tokens``: the judge's reply length, default 2,048).
"""
from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Optional

from evalkit.scoring.metric import Metric
from evalkit.taskapi import judged as judged_layer, repeats as task_repeats
from evalkit.taskapi.agent import Episode, UserSim, canonical_json
from evalkit.taskapi.agent_task import TOOL_USE_METRICS, AgentTask, tool_use_figures
from evalkit.taskapi.data import DataSource
from evalkit.taskapi.items import Doc, Scored
from evalkit.taskapi.requests import GenParams
from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.task import register_task, run_params

from . import data, evaluate, nl_assertions
from .env import agent_tools, domain_env, user_tools

AGENT_INSTRUCTION = """
You are a customer service agent that helps the user according to the <policy> provided below.
In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time.

Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.
""".strip()

AGENT_SYSTEM = """
<instructions>
{agent_instruction}
</instructions>
<policy>
{domain_policy}
</policy>
""".strip()

USER_SYSTEM = """
{global_user_sim_guidelines_with_persona}

<scenario>
{instructions}
</scenario>
""".strip()

MAX_STEPS, MAX_ERRORS = 200, 10          # τ²-bench's DEFAULT_MAX_STEPS, DEFAULT_MAX_ERRORS
ENDED_BY_CONVERSATION = ("user_stop",)   # τ²-bench scores only USER_STOP / AGENT_STOP trials
FAILURES = ("fail_premature", "fail_db", "fail_communicate")
TELECOM_FAILURES = ("fail_premature", "fail_env_assertion", "fail_action")
TELECOM_METRICS = (Metric("reward"), Metric("env_assertion"), Metric("db_match"),
                   *(Metric(f, higher_is_better=False) for f in TELECOM_FAILURES),
                   Metric("user_tool_calls", higher_is_better=False), *TOOL_USE_METRICS)


class Tau2Task(AgentTask):
    domain: ClassVar[str] = ""
    family: ClassVar[Optional[str]] = "tau2"
    version = "1"
    eval_split = "base"   # τ²-bench's default task set: every task of the domain ("test": the held-out split)
    metrics = (Metric("reward"), Metric("db_match"), Metric("communicate"),
               *(Metric(f, higher_is_better=False) for f in FAILURES), *TOOL_USE_METRICS)
    judged = (nl_assertions.NLAssertions(),)  # with --judge (optional: scored without one)
    known_options: ClassVar[tuple] = ("trials", "max_steps", "max_errors", "user_temperature", "max_tokens", "split",
                                      "nl_in_reward", "judge_max_tokens")
    repeat_metric = "reward"
    votes = False

    # ---- data ----
    def _domain(self):
        if "_dom" not in self.__dict__:
            self._dom = data.load_domain(self.domain, self.data_path)
        return self._dom

    def load_docs(self, split, max_docs=None, path=None):
        dom = self._domain()
        ids = dom.split(split)
        docs = [self.record_to_doc(t, i) for i, t in enumerate(dom.tasks) if ids is None or str(t["id"]) in ids]
        return docs[:max_docs] if max_docs is not None else docs

    def eval_docs(self):
        return self.load_docs(str(self.options.get("split", self.eval_split)))

    def record_to_doc(self, record, index):
        return Doc(id=str(record["id"]), query=user_instructions(record), target=record.get("evaluation_criteria"),
                   meta={"task": record})

    # ---- playing ----
    def trials(self, ctx) -> int:
        k = self.options.get("trials", ctx.gen_overrides.get("n", 1))
        k = int(k)
        if k < 1:
            raise ValueError(f"task {self.name}: trials must be >= 1, got {k}")
        return k

    def episode(self, doc: Doc, ctx) -> Episode:
        dom = self._domain()
        task = doc.meta["task"]
        system = AGENT_SYSTEM.format(agent_instruction=AGENT_INSTRUCTION, domain_policy=dom.policy)
        user_params = GenParams(max_tokens=int(self.options.get("max_tokens", 1024)),
                                temperature=float(self.options.get("user_temperature", 0.0)))
        phone = canonical_json(user_tools(self.domain))
        sim = UserSim(USER_SYSTEM.format(global_user_sim_guidelines_with_persona=dom.user_guidelines,
                                         instructions=user_instructions(task)),
                      params=user_params, max_steps=int(self.options.get("max_steps", MAX_STEPS)),
                      max_errors=int(self.options.get("max_errors", MAX_ERRORS)), tools=phone,
                      parser=ctx.tool_parser if phone != "[]" else None)
        return Episode.build([{"role": "system", "content": system}], [], agent_tools(self.domain),
                             env=domain_env(self.domain, dom.db_path, task, dom.user_db_path), parser=ctx.tool_parser,
                             params=GenParams(max_tokens=int(self.options.get("max_tokens", 1024)), temperature=0.0),
                             max_steps=sim.max_steps, user_sim=sim)

    def requests(self, doc, ctx):
        """One episode per trial; each trial's agent and user get their own seed (run seed, task,
        doc, trial), so sampled trials differ and greedy ones are the same request, played once."""
        ep = self.episode(doc, ctx)
        params = replace(run_params(ep.params, ctx, self.name, doc.id), n=1)
        out = []
        for trial in range(self.trials(ctx)):
            seed = derive_seed(ctx.seed, self.name, "trial", doc.id, trial) % (2 ** 31)
            sim = replace(ep.user_sim, params=replace(ep.user_sim.params, seed=seed))
            out.append(replace(ep, params=replace(params, seed=seed), user_sim=sim))
        return out

    # ---- scoring ----
    def judge_requests(self, doc, responses, ctx):
        """With --judge: one request per trial about the task's natural-language assertions."""
        return [a.request() for t in responses for a in judged_layer.asks_of(self, self.judged[0], doc, t)]

    def score_all(self, docs, responses, ctx):
        dom = self._domain()
        judged = evaluate.evaluate_trials(self.domain, dom.db_path, [d.meta["task"] for d in docs], responses,
                                          user_db_path=dom.user_db_path)
        out = []
        for doc, transcripts, verdicts in zip(docs, responses, judged):
            ep = self.requests(doc, ctx)[0]
            tools = ep.tools_at(0)
            per = [self.with_nl_verdict(self.trial_scored(t, v, tools), doc, t, ctx)
                   for t, v in zip(transcripts, verdicts)]
            records = [p.extra.pop("judged") for p in per if "judged" in p.extra]
            s = task_repeats.problem_scored(per, "reward", False) if len(per) > 1 else per[0]
            if records:  # the judge layer's record of the trials' assertions
                s.extra["judged"] = {self.judged[0].name: judged_layer.merge_records(records)}
            s.responses = [t.to_json() for t in transcripts]
            s.prompt = ep.opening()
            out.append(self.as_sample(doc, transcripts, s, ctx))
        return out

    def trial_scored(self, t, verdict: dict, tools) -> Scored:
        premature = t.stop_reason not in ENDED_BY_CONVERSATION
        reward = 0.0 if premature else float(verdict["reward"])
        metrics = {"reward": reward, "db_match": float(bool(verdict.get("db_match"))),
                   "communicate": float(bool(verdict.get("communicate"))),
                   "fail_premature": float(premature),
                   "fail_db": float(not premature and verdict.get("db_match") is False),
                   "fail_communicate": float(not premature and verdict.get("communicate") is False),
                   **tool_use_figures(t, tools)}
        if self.domain in data.DUAL_CONTROL:
            env_ok, act_ok = verdict.get("env_assertion") is not False, verdict.get("action") is not False
            basis = verdict.get("basis") or []
            metrics = {"reward": reward, "env_assertion": float(env_ok), "db_match": metrics["db_match"],
                       "fail_premature": float(premature),
                       "fail_env_assertion": float(not premature and "ENV_ASSERTION" in basis and not env_ok),
                       "fail_action": float(not premature and "ACTION" in basis and not act_ok),
                       "user_tool_calls": len(t.user_calls()), **tool_use_figures(t, tools)}
        extra = {"stop_reason": t.stop_reason, "seconds": round(t.seconds, 3), "reward_basis": verdict.get("basis"),
                 "communicate_details": verdict.get("communicate_details"), "db_hash": verdict.get("db_hash"),
                 "gold_db_hash": verdict.get("gold_db_hash"),
                 "nl_assertions": verdict.get("nl_assertions") or None,
                 **({"env_assertions": verdict.get("env_assertions"), "actions": verdict.get("actions"),
                     "user_db_hash": (t.snapshots[-1] or {}).get("user_db_hash") if t.snapshots else None}
                    if self.domain in data.DUAL_CONTROL else {})}
        return Scored(metrics, extracted=None, extra=extra)

    def with_nl_verdict(self, scored: Scored, doc: Doc, t, ctx) -> Scored:
        """The judge's verdict on the trial's natural-language assertions (the judge layer's
        ``NLAssertions``), when the run has a judge and the task has assertions."""
        metric = self.judged[0]
        if not ctx.judgments or not judged_layer.asks_of(self, metric, doc, t):
            return scored
        values, rec = judged_layer.judge_answer(self, metric, doc, t, ctx.judgments, ctx.second_judgments)
        scored.metrics.update(values)
        scored.extra["judged"] = rec
        scored.extra["nl_assertion_checks"], scored.extra["nl_judge_status"] = rec["checks"], rec["status"]
        if str(self.options.get("nl_in_reward", "false")).lower() in ("1", "true", "yes") and not values[metric.name]:
            scored.metrics["reward"] = 0.0
        return scored

    def run_extra(self, samples):
        dom = self._domain()
        return {"domain": self.domain, "data": str(dom.path), "trials": max(len(s.responses) for s in samples)
                if samples else 0, "user_simulator": "tau2-bench's simulation guidelines (" + (
                    "simulation_guidelines_tools.txt, with the customer's phone tools)"
                    if self.domain in data.DUAL_CONTROL
                    else "simulation_guidelines.txt)")}


def user_instructions(task: dict) -> str:
    """τ²-bench's ``str(UserScenario)``: the persona and the structured instructions."""
    import textwrap
    scenario = task.get("user_scenario") or {}
    ins = scenario.get("instructions")
    if isinstance(ins, dict):
        lines = [f"Domain: {ins.get('domain')}", f"Reason for call:\n{textwrap.indent(ins.get('reason_for_call') or '', chr(9))}"]
        if ins.get("known_info") is not None:
            lines.append(f"Known info:\n{textwrap.indent(ins['known_info'], chr(9))}")
        if ins.get("unknown_info") is not None:
            lines.append(f"Unknown info:\n{textwrap.indent(ins['unknown_info'], chr(9))}")
        lines.append(f"Task instructions:\n{textwrap.indent(ins.get('task_instructions') or '', chr(9))}")
        ins = "\n".join(lines)
    out = []
    if scenario.get("persona") is not None:
        out += ["Persona:", textwrap.indent(scenario["persona"], "\t")]
    out += ["Instructions:", textwrap.indent(str(ins), "\t")]
    return "\n".join(out)


def _domain_task(domain: str, count: int, **extra) -> type:
    cls = type(f"Tau2_{domain}", (Tau2Task,), {
        "name": f"tau2_{domain}", "domain": domain, "dataset": DataSource(licence="MIT"),
        "description": f"tau2-bench {domain} ({count} tasks): a customer-service agent with a simulated user "
                       f"(--user-model), domain tools in the sandbox, pass^k over --task-args trials=K",
        "__module__": __name__, **extra})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


Tau2_airline = _domain_task("airline", 50)
Tau2_retail = _domain_task("retail", 114)
Tau2_telecom = _domain_task("telecom", 2285, metrics=TELECOM_METRICS, version="1",
                            description="tau2-bench telecom (2,285 tasks; default split base: 114; split=full|small|"
                                        "train|test): dual control, the customer's phone tools run in the sandbox too; "
                                        "ENV_ASSERTION scoring, pass^k over --task-args trials=K")
