"""Tool-calling turns (``ToolChatRequest``) on backends that render prompts themselves (transformers,
vLLM offline, in-memory models): the messages and tool schemas go through the model's chat template
(``tools=``, as ``LLM.chat(..., tools=...)`` and transformers do), the prompt is generated like any
other, and the reply's calls are read with the request's named parser.

A chat template that ignores ``tools`` (SmolLM2's, many base models') would hide the tools from the
model. For ChatML templates (``<|im_start|>``) evalkit then renders with its own ChatML template in
the Hermes/Qwen 2.5 tool format (``HERMES_CHATML``; parse with ``hermes``), says so once, and the
run's backend stats record it; for other templates it stops with what to do.
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Sequence

from evalkit.taskapi.requests import Completion, GenerateRequest, ToolChatRequest
from evalkit.taskapi import tool_parsers

log = logging.getLogger(__name__)

#: ChatML with tools in the system prompt, calls as <tool_call>{json}</tool_call>, results as
#: <tool_response> in a user turn: the format of Qwen 2.5's template (vLLM's ``hermes`` parser)
HERMES_CHATML = """{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}
{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' %}
{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- for call in message.tool_calls or [] %}
{%- if call.function is defined %}{%- set call = call.function %}{%- endif %}
{%- if message.content or not loop.first %}{{- '\\n' }}{%- endif %}
{{- '<tool_call>\\n{\\"name\\": \\"' + call.name + '\\", \\"arguments\\": ' }}{{- call.arguments | tojson }}{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""

HERMES = "hermes"  # the parser of HERMES_CHATML's calls
_PROBE_TOOL = {"type": "function", "function": {"name": "evalkit_probe_tool_7f3a", "description": "probe",
                                                 "parameters": {"type": "object", "properties": {}}}}


def with_tools_fallback(own_template: str) -> str:
    """One template for a server (``vllm serve --chat-template``): the model's own without tools,
    ``HERMES_CHATML`` with them (what evalkit renders offline for a ChatML model that ignores tools)."""
    return "{%- if tools %}" + HERMES_CHATML + "{%- else %}" + own_template + "{%- endif %}"


def _stats(backend) -> Counter:
    if getattr(backend, "stats", None) is None:
        backend.stats = Counter()
    return backend.stats


def for_template(messages: list[dict]) -> list[dict]:
    """OpenAI messages as chat templates read them: a call's ``arguments`` as a dict, not a JSON string."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function", c))
                if isinstance(fn.get("arguments"), str):
                    try:
                        fn["arguments"] = json.loads(fn["arguments"])
                    except json.JSONDecodeError:
                        pass
                calls.append({**c, "function": fn} if "function" in c else fn)
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


def tool_template(backend, tokenizer) -> tuple:
    """(template to render tools with or None for the model's own, whether it is evalkit's fallback)."""
    cached = backend.__dict__.get("_tool_template")
    if cached is not None:
        return cached
    own = getattr(backend, "chat_template", None)
    msgs = [{"role": "user", "content": "hi"}]
    rendered = tokenizer.apply_chat_template(msgs, tools=[_PROBE_TOOL], tokenize=False, add_generation_prompt=True,
                                             chat_template=own)
    if _PROBE_TOOL["function"]["name"] in rendered:
        choice = (own, False)
    elif "<|im_start|>" in rendered:
        log.warning("%s's chat template ignores tools: rendering tool turns with evalkit's ChatML template in "
                    "the Hermes format (parse with 'hermes'); give chat_template=FILE to use another",
                    backend.display_name)
        choice = (HERMES_CHATML, True)
    else:
        raise ValueError(f"{backend.display_name}'s chat template does not render tools: give a template that does "
                         f"(--model-args chat_template=FILE) or run the task with its tools in the prompt "
                         f"(tool_mode=prompt)")
    backend.__dict__["_tool_template"] = choice
    _stats(backend)["tool_template_fallback"] = int(choice[1])
    return choice


def render(backend, tokenizer, req: ToolChatRequest) -> str:
    tools = req.tool_dicts()
    messages = for_template(req.message_dicts())
    kwargs = dict(getattr(backend, "chat_template_kwargs", {}) or {})
    if not tools:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                             chat_template=getattr(backend, "chat_template", None), **kwargs)
    template, _ = tool_template(backend, tokenizer)
    return tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True,
                                         chat_template=template, **kwargs)


def with_calls(comp: Completion, parse) -> Completion:
    """The completion with the calls ``parse`` (text -> ParsedCalls) reads in its text."""
    got = parse(comp.text)
    comp.tool_calls, comp.content, comp.tool_error = got.calls, got.content, got.error
    return comp


def answer_locally(backend, tokenizer, requests: Sequence[ToolChatRequest]) -> list[list[Completion]]:
    """Render, generate, parse: the tool turns of a backend that holds the tokenizer."""
    prompts = [GenerateRequest(prompt=render(backend, tokenizer, r), params=r.params) for r in requests]
    out = backend.generate(prompts)
    parse = getattr(backend, "parse_tool_calls", None)
    for r, p, comps in zip(requests, prompts, out):
        tools = r.tool_dicts()
        name = r.parser or (HERMES if tools and tool_template(backend, tokenizer)[1] else None)
        if tools and name is None:
            raise ValueError("name the model's tool-call parser (--tool-parser NAME, e.g. hermes or pythonic): "
                             "its chat template renders tools, and how it writes calls depends on the model")
        n_prompt = len(tokenizer.encode(p.prompt, add_special_tokens=False))
        for c in comps:
            c.usage = c.usage or {"prompt_tokens": n_prompt,
                                  "completion_tokens": len(tokenizer.encode(c.text, add_special_tokens=False))}
            if name:
                with_calls(c, (lambda text: parse(name, text, tools)) if parse
                           else (lambda text: tool_parsers.parse(name, text, tools)))
            else:
                c.tool_calls, c.content = [], c.text
        _stats(backend)["tool_turns"] += len(comps)
        _stats(backend)["tool_calls_parsed"] += sum(len(c.tool_calls) for c in comps)
    return out


def vllm_parse(tokenizer, name: str, text: str, tools: list) -> tool_parsers.ParsedCalls:
    """vLLM's own parser ``name`` on a reply (what ``vllm serve --tool-call-parser name`` does); a
    name vLLM does not have (a task's own format) is evalkit's."""
    from vllm.tool_parsers import ToolParserManager
    try:
        cls = ToolParserManager.get_tool_parser(name)
    except KeyError:
        return tool_parsers.parse(name, text, tools)
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    req = ChatCompletionRequest(model="evalkit", messages=[{"role": "user", "content": ""}], tools=tools or None)
    info = cls(tokenizer, req.tools).extract_tool_calls(text, req)
    calls = [tool_parsers.call_dict(tc.function.name, tc.function.arguments) for tc in info.tool_calls]
    if calls:
        return tool_parsers.ParsedCalls(info.content or "", calls)
    ours = tool_parsers.parse(name, text, tools) if name in tool_parsers.names() else None
    return tool_parsers.ParsedCalls(text, [], ours.error if ours else None)
