"""A small stateful tool environment and an agent task over it, for the agent loop's tests."""
from __future__ import annotations

import json

from evalkit.scoring.metric import Metric
from evalkit.taskapi.agent import Episode, ToolEnv, UserSim
from evalkit.taskapi.agent_task import TOOL_USE_METRICS, AgentTask
from evalkit.taskapi.items import Doc, Scored
from evalkit.taskapi.task import register_task
from evalkit.taskapi.requests import GenParams

BANK = '''
import os, socket


def setup(config):
    return {"balance": config["balance"], "log": []}


def call(state, name, args):
    if name == "get_balance":
        return {"balance": state["balance"]}
    if name == "deposit":
        amount = args["amount"]
        if not isinstance(amount, (int, float)) or amount <= 0:
            raise ValueError("amount must be a positive number")
        state["balance"] += amount
        state["log"].append(["deposit", amount])
        return {"balance": state["balance"]}
    if name == "write_note":
        with open(args["path"], "w") as f:
            f.write(args["text"])
        return "saved"
    if name == "read_note":
        with open(args["path"]) as f:
            return f.read()
    if name == "run_python":   # a tool that runs model-written code: only ever inside the sandbox
        exec(args["code"], {})
        return "ran"
    raise KeyError(name)


def snapshot(state):
    return {"balance": state["balance"], "log": state["log"], "files": sorted(os.listdir("."))}
'''


def tool(name, description, **params):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": t} for k, t in params.items()}, "required": list(params)}}}


TOOLS = [tool("get_balance", "The account's balance."),
         tool("deposit", "Deposit an amount; returns the new balance.", amount="number"),
         tool("write_note", "Save a text note in a file.", path="string", text="string"),
         tool("read_note", "Read a note.", path="string"),
         tool("run_python", "Run Python code.", code="string")]
EXAMPLE = [{"role": "user", "content": "Deposit 2."},
           {"role": "assistant", "content": "", "tool_calls": [{"id": "ex_1", "type": "function", "function": {
               "name": "deposit", "arguments": '{"amount": 2}'}}]},
           {"role": "tool", "tool_call_id": "ex_1", "name": "deposit", "content": '{"balance": 3}'},
           {"role": "assistant", "content": "Done."},
           {"role": "user", "content": "What is my balance?"},
           {"role": "assistant", "content": "", "tool_calls": [{"id": "ex_0", "type": "function", "function": {
               "name": "get_balance", "arguments": "{}"}}]},
           {"role": "tool", "tool_call_id": "ex_0", "name": "get_balance", "content": '{"balance": 3}'},
           {"role": "assistant", "content": "Your balance is 3."}]
EXAMPLE_PROMPT = [EXAMPLE[0], {"role": "assistant", "content": "[deposit(amount=2)]"}, EXAMPLE[2], EXAMPLE[3],
                  EXAMPLE[4], {"role": "assistant", "content": "[get_balance()]"},
                  {"role": "tool", "name": "get_balance", "content": '{"balance": 3}'}, EXAMPLE[7]]
DOCS = [{"id": "b1", "balance": 10, "turns": ["What is my balance?", "Deposit 5, then tell me the balance."],
         "want": 15},
        {"id": "b2", "balance": 0, "turns": ["Deposit 7 and save a note 'done' in notes.txt."], "want": 7}]


@register_task
class BankTask(AgentTask):
    """A bank account and a notes folder: the loop's test bed (docs in ``DOCS`` or a JSONL file)."""

    name = "agent_bank_test"
    metrics = (Metric("balance_ok"), *TOOL_USE_METRICS)

    def eval_docs(self):
        records = DOCS if not self.data_path else [json.loads(x) for x in open(self.data_path)]
        return [self.record_to_doc(r, i) for i, r in enumerate(records)]

    def record_to_doc(self, record, index):
        return Doc(id=record["id"], query=record["turns"][0], target=record["want"], meta=record)

    def episode(self, doc, ctx):
        mode = self.options.get("tool_mode", "native")
        opening = [{"role": "system", "content": "You are a bank assistant. Use the tools."}]
        if self.options.get("fewshot"):  # one worked exchange, so even a tiny model calls a tool
            opening += EXAMPLE if mode == "native" else EXAMPLE_PROMPT
        if self.options.get("simulated_user"):  # a second model plays the customer (τ²-bench's way)
            sim = UserSim("You are a bank customer. Ask for: " + " Then: ".join(doc.meta["turns"]),
                          params=GenParams(max_tokens=48), max_steps=int(self.options.get("max_messages", 20)))
            return Episode.build(opening, [], TOOLS, env=ToolEnv("bank", BANK, json.dumps({"balance": doc.meta["balance"]})),
                                 parser=self.options.get("parser", "hermes") or None,
                                 params=GenParams(max_tokens=int(self.options.get("max_tokens", 48))),
                                 max_steps=int(self.options.get("max_steps", 3)), user_sim=sim)
        return Episode.build(opening, doc.meta["turns"], TOOLS,
                             env=ToolEnv("bank", BANK, json.dumps({"balance": doc.meta["balance"]})),
                             tool_mode=mode, parser=self.options.get("parser", "hermes") or None,
                             params=GenParams(max_tokens=int(self.options.get("max_tokens", 48))),
                             max_steps=int(self.options.get("max_steps", 3)))

    def score_transcript(self, doc, t):
        final = t.snapshots[-1] if t.snapshots else None
        return Scored({"balance_ok": float(bool(final) and final["balance"] == doc.target)},
                      extra={"snapshots": t.snapshots})
