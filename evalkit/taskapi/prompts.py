"""How a task's prompts are built: few-shot examples (the first N, or drawn with a seed derived from
the run seed and the doc id), the prompt text, its chat form and the scoring context. ``Task`` has
these hooks through ``Prompting``; a task overrides ``doc_to_text``/``doc_to_target`` or the one
prompt hook ``build_prompt_text`` (``prompt_text`` caches it; ``messages``, ``context`` and
``prompt_of`` derive from it)."""
from __future__ import annotations

import random
from pathlib import Path

from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.items import Doc, RunContext


class Prompting:
    """The prompt hooks of ``Task`` (it declares ``num_fewshot``, ``instruction``, the splits and
    delimiters these read)."""

    def doc_to_text(self, doc: Doc) -> str:
        return doc.query

    def doc_to_target(self, doc: Doc) -> str:
        if doc.fewshot_target is not None:
            return doc.fewshot_target
        if doc.choices is not None and doc.gold is not None:
            return doc.choices[doc.gold]
        return str(doc.target)

    def fewshot_pool(self) -> list[Doc]:
        if "_fewshot_pool" not in self.__dict__:
            if self.fewshot_reads_eval_file():
                raise self.fewshot_refusal(self.num_fewshot)
            if not self.fewshot_split:
                self._fewshot_pool = []
            elif self.fewshot_data_path:  # --fewshot-data TASK=PATH
                self._fewshot_pool = self.load_docs(self.fewshot_split, path=self.fewshot_data_path)
            else:
                self._fewshot_pool = self.load_docs(self.fewshot_split)
        return self._fewshot_pool

    def fewshot_reads_eval_file(self) -> bool:
        """True when the few-shot split would be read from the one file that also holds the test docs."""
        if not self.fewshot_split or self.fewshot_split == self.eval_split:
            return False
        if type(self).fewshot_pool is not Prompting.fewshot_pool:  # the task brings its own exemplars
            return False
        if self.fewshot_data_path:
            return False
        return bool(self.data_path) and Path(self.data_path).is_file() and self.dataset.local_reader is None

    def fewshot_refusal(self, k) -> Exception:
        from evalkit.taskapi.data import DataError
        files = ", ".join(f for names in self.dataset.local_files.values() for f in names) or "one file per split"
        return DataError(
            f"task {self.name}: --data {self.data_path} is a single file, so its {k} few-shot examples (the "
            f"{self.fewshot_split!r} split) would come from the evaluation file itself and test questions would "
            f"carry their own answers. Pass a folder holding both splits ({files}), or add --fewshot-data "
            f"{self.name}=FILE, or use --num-fewshot 0")

    def fewshot_examples(self, doc: Doc, k: int, ctx: RunContext) -> list[Doc]:
        if k <= 0:
            return []
        pool = self.fewshot_pool()
        same_split = self.fewshot_split == self.eval_split
        if self.fewshot_sampler == "first_n":
            picked = []
            for d in pool:
                if not (same_split and d.id == doc.id):
                    picked.append(d)
                    if len(picked) == k:
                        break
        else:
            rng = random.Random(derive_seed(ctx.seed, self.name, "fewshot", doc.id))
            idx = rng.sample(range(len(pool)), min(len(pool), k + 1))
            picked = [pool[i] for i in idx if not (same_split and pool[i].id == doc.id)][:k]
        if len(picked) < k:
            raise ValueError(f"task {self.name}: {k}-shot asked but the few-shot split has {len(picked)} examples")
        return picked

    def prompt_text(self, doc: Doc, ctx: RunContext) -> str:
        """The prompt text of a doc, built once per doc and setting (override ``build_prompt_text``)."""
        key = (doc.hash(), ctx.seed, ctx.num_fewshot, ctx.apply_chat_template, ctx.system_prompt)
        cache = self.__dict__.setdefault("_prompt_cache", {})
        if key not in cache:
            cache[key] = self.build_prompt_text(doc, ctx)
        return cache[key]

    def build_prompt_text(self, doc: Doc, ctx: RunContext) -> str:
        """The one prompt hook: instruction, few-shot examples and the question."""
        k = self.num_fewshot if ctx.num_fewshot is None else ctx.num_fewshot
        shots = self.fewshot_examples(doc, k, ctx)
        parts = [self.doc_to_text(ex) + self.target_delimiter + self.doc_to_target(ex) for ex in shots]
        body = self.fewshot_delimiter.join(parts + [self.doc_to_text(doc)])
        return self.instruction + body

    def messages(self, doc: Doc, ctx: RunContext) -> list[dict]:
        """The chat form: with few-shot examples and ``ctx.fewshot_as_multiturn`` (None counts as
        yes, as in lm-eval), the instruction is the system turn and each example a user and an
        assistant turn; tasks that build their own prompt text keep it in one user turn."""
        k = self.num_fewshot if ctx.num_fewshot is None else ctx.num_fewshot
        if k and ctx.fewshot_as_multiturn is not False and type(self).build_prompt_text is Prompting.build_prompt_text:
            system = self.fewshot_delimiter.join(x for x in (ctx.system_prompt, self.instruction.strip()) if x)
            msgs = [{"role": "system", "content": system}] if system else []
            for ex in self.fewshot_examples(doc, k, ctx):
                msgs += [{"role": "user", "content": self.doc_to_text(ex)},
                         {"role": "assistant", "content": self.doc_to_target(ex)}]
            return msgs + [{"role": "user", "content": self.doc_to_text(doc)}]
        msgs = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        return msgs + [{"role": "user", "content": self.prompt_text(doc, ctx)}]

    def context(self, doc: Doc, ctx: RunContext) -> str:
        """The scoring context as a plain string (chat template rendered when asked)."""
        if ctx.apply_chat_template:
            if ctx.render_chat is None:
                raise ValueError("--apply-chat-template needs a backend that renders chat templates")
            return ctx.render_chat(self.messages(doc, ctx))
        return self.prompt_text(doc, ctx)

    def prompt_of(self, doc: Doc, ctx: RunContext):
        """The prompt as the samples file shows it: messages with a chat template, else the text."""
        return self.messages(doc, ctx) if ctx.apply_chat_template else self.prompt_text(doc, ctx)
