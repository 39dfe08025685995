"""How BFCL prompts a prompt-based model (no native tool calling), reproduced exactly.

BFCL's default prompt format (``ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&
prompt_fmt=plaintext&style=classic``, bfcl_eval/constants/default_prompts.py and
model_handler/utils.py: ``formulate_system_prompt``, ``system_prompt_pre_processing_chat_model``):
one system message holding the instructions and the function docs as indented JSON, put before the
question's messages; a question that brings its own system message gets it appended after a blank
line. The docs the model sees are first given BFCL's language hints
(utils.py ``_func_doc_language_specific_pre_processing``): each description ends with "Note that
the provided function is in Python 3 syntax." (Java 8 SDK / JavaScript), and Java and JavaScript
parameters become strings described as "... type parameter in string representation". The checker
reads the docs as the data file has them.

The model answers ``[func_name1(params_name1=params_value1, ...), func_name2(params)]`` (Java and
JavaScript answers in their own call syntax, decoded as such). The prompt texts below are BFCL's
(Apache-2.0), copied verbatim, including the missing space between persona and task and the double
space where the Python format adds no type note.
"""
from __future__ import annotations

import copy
import json
from typing import Optional

from .data import language_of

PERSONA = "You are an expert in composing functions."
TASK = ("You are given a question and a set of possible functions. Based on the question, you will need to make "
        "one or more function/tool calls to achieve the purpose. If none of the functions can be used, point it out. "
        "If the given question lacks the parameters required by the function, also point it out.")
OUTPUT_FORMAT = "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]"
PARAM_TYPES = ""  # BFCL says nothing about types for the Python format
TOOL_CALL = ("You should only return the function calls in your response.\n\nIf you decide to invoke any of the "
             f"function(s), you MUST put it in the format of {OUTPUT_FORMAT}. {PARAM_TYPES} You SHOULD NOT include "
             "any other text in the response.")
MULTI_TURN = ("At each turn, you should try your best to complete the tasks requested by the user within the current "
              "turn. Continue to output functions to call until you have fulfilled the user's request to the best of "
              "your ability. Once you have no more functions to call, the system will consider the current turn "
              "complete and proceed to the next turn or task.")
AVAILABLE = "Here is a list of functions in json format that you can invoke.\n{functions}\n"

HINTS = {"python": " Note that the provided function is in Python 3 syntax.",
         "java": " Note that the provided function is in Java 8 SDK syntax.",
         "javascript": " Note that the provided function is in JavaScript syntax."}
LANGUAGE_NAMES = {"java": "Java", "javascript": "JavaScript"}


def system_prompt(functions: list) -> str:
    """BFCL's default system prompt over these (already hinted) function docs."""
    tools = AVAILABLE.format(functions=json.dumps(functions, indent=4))
    return f"{PERSONA}{TASK}\n\n{TOOL_CALL}\n\n{MULTI_TURN}\n\n{tools}"


def hinted_functions(functions: list, category: str) -> list:
    """The function docs as BFCL shows them to the model (a copy; the data's docs stay as they are)."""
    out = copy.deepcopy(functions)
    lang = language_of(category)
    for f in out:
        f["description"] = f["description"] + HINTS[lang]
        if lang == "python":
            continue
        name = LANGUAGE_NAMES[lang]
        for p in f["parameters"]["properties"].values():
            if p["type"] == "any":
                p["description"] += f" This parameter can be of any type of {name} object in string representation."
            else:
                p["description"] += f" This is {name} {p['type']} type parameter in string representation."
            if p["type"] in (("ArrayList", "Array") if lang == "java" else ("array",)):
                p["description"] += (f" The list elements are of type {p['items']['type']}; they are not in string "
                                     "representation.")
                del p["items"]
            if lang == "javascript" and p["type"] == "dict" and "properties" in p:
                p["description"] += (" The dictionary entries have the following schema; they are not in string "
                                     f"representation. {json.dumps(p['properties'])}")
                del p["properties"]
            p["type"] = "string"
    return out


def chat_messages(question: list, functions: list, category: str, extra_system: Optional[str] = None,
                  hint: bool = True) -> list[dict]:
    """The messages BFCL sends for a question's first turn (``question``). ``extra_system``
    (evalkit's ``--system-prompt``) is appended to the system message as a question's own system
    message would be; ``hint=False``: the docs already have their language hints."""
    msgs = [{"role": m["role"], "content": m["content"]} for m in question]
    system = system_prompt(hinted_functions(functions, category) if hint else functions)
    if extra_system:
        system = system + "\n\n" + extra_system
    if msgs and msgs[0]["role"] == "system":
        msgs[0]["content"] = system + "\n\n" + msgs[0]["content"]
    else:
        msgs.insert(0, {"role": "system", "content": system})
    return msgs


def plain_text(messages: list[dict]) -> str:
    """The messages as one text prompt, for models run without a chat template: the system
    message, then each turn as ``User: ...`` / ``Assistant: ...``, ending with ``Assistant:``. (BFCL
    itself always renders the model's chat template; use ``--apply-chat-template`` for that.)"""
    parts = []
    for m in messages:
        parts.append(m["content"] if m["role"] == "system" else f"{m['role'].capitalize()}: {m['content']}")
    return "\n\n".join(parts + ["Assistant:"])
