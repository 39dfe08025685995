"""Tool turns (``ToolChatRequest``) on an OpenAI-compatible server: ``messages`` and ``tools`` sent
as they are to ``/chat/completions``; the reply's ``tool_calls`` are the server's parse (e.g. ``vllm
serve --enable-auto-tool-choice --tool-call-parser hermes``). A reply without ``tool_calls`` whose
request names a parser (tools in the prompt, or a server without a tool parser) is parsed here."""
from __future__ import annotations

from evalkit.taskapi import tool_parsers
from evalkit.taskapi.requests import Completion, GenerateRequest, ToolChatRequest
from evalkit.backends.openai_http import MalformedReply


def tool_chat_one(backend, req: ToolChatRequest) -> list[Completion]:
    path, body = backend._gen_body(GenerateRequest(messages=(("user", ""),), params=req.params))
    body["messages"] = req.message_dicts()
    tools = req.tool_dicts()
    if tools:
        body["tools"] = tools
    where = f"POST {backend.base_url}{path}"
    resp = backend.http.call("POST", path, body)
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        raise MalformedReply(f"{where} returned no chat message")
    from evalkit.backends.openai_reasoning import reply_trace, reply_usage
    c = choices[0]
    msg = c["message"]
    content = msg.get("content") or ""
    if not isinstance(content, str):
        raise MalformedReply(f"{where}: the message's content is not text")
    calls, error = [], None
    for tc in msg.get("tool_calls") or []:
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise MalformedReply(f"{where}: a tool call without a function name")
        calls.append(tool_parsers.call_dict(fn["name"], fn.get("arguments") or "{}"))
    if not calls and req.parser:
        got = tool_parsers.parse(req.parser, content, tools)
        calls, content, error = got.calls, got.content, got.error
    backend.stats["tool_turns"] += 1
    backend.stats["tool_calls_parsed"] += len(calls)
    finish = "length" if c.get("finish_reason") == "length" else "stop"
    text = msg.get("content") or ""
    return [Completion(text, finish, reply_trace(c), reply_usage(resp), None, calls, content, error)] * max(1, req.params.n)
