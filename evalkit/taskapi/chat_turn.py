"""``ChatTurnTask``: a generation task whose prompt is sent as one user turn through the model's chat
template by default, as model cards run IFEval and AIME; the option ``chat=false`` sends the bare
text (unless the run applies the template anyway, ``--apply-chat-template``)."""
from __future__ import annotations

from evalkit.taskapi.requests import GenerateRequest
from evalkit.taskapi.task import GenerationTask


def flag(value, default: bool = True) -> bool:
    """A task option read as a boolean (``true``/``false``/``1``/``0``/``yes``/``no``)."""
    if value is None:
        return default
    return value if isinstance(value, bool) else str(value).lower() not in ("0", "false", "no")


class ChatTurnTask(GenerationTask):
    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.chat = flag(options.get("chat"))

    def requests(self, doc, ctx):
        params = self.params(doc, ctx)
        if self.chat or ctx.apply_chat_template:
            msgs = tuple((m["role"], m["content"]) for m in self.messages(doc, ctx))
            return [GenerateRequest(messages=msgs, params=params)]
        return [GenerateRequest(prompt=self.prompt_text(doc, ctx), params=params)]
