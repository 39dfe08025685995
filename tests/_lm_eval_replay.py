"""Parity harness for lm-eval's tasks: evalkit runs a task on a real backend while every answer is
recorded; then lm-eval's own evaluator runs the same task on the same local data with an ``LM``
that answers only from those records. A request evalkit never made fails the test (the prompts are
the same), and the same answers must give the same per-doc metrics and the same aggregates.

Also: small fixtures in the layouts of hub datasets that cannot be had here; the copies of
``../shared/data`` in hub layouts come from ``evalkit.tasks.lm_eval_catalog.hub_layouts``.
"""
from __future__ import annotations

from pathlib import Path

from evalkit.tasks.lm_eval_catalog.hub_layouts import (  # noqa: F401 (re-exported for the tests)
    bbh_hub, gsm8k_hub, ifeval_hub, jsonl, math_hub, mmlu_hub, wikitext_hub)

from evalkit.taskapi.requests import GenerateRequest, LoglikelihoodRequest, RollingRequest


class Recording:
    """A backend that keeps every answer it gives (by request), otherwise the wrapped backend."""

    def __init__(self, inner):
        self.inner, self.answers = inner, {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def stream(self, kind, requests):
        for group in self.inner.stream(kind, requests):
            for i, a in group:
                self.answers[requests[i]] = a
            yield group


def in_sample_order(items: list) -> list:
    """The completions of one prompt's requests, sample 0 first when they are the samples of one
    request (their seeds are ``sample_params``'s), else in the order they were answered."""
    from dataclasses import replace

    from evalkit.run.repeats_split import sample_params
    for r0, _ in items:
        order = {sample_params(replace(r0.params, n=len(items)), i).seed: i for i in range(len(items))}
        if len(items) > 1 and all(r.params.seed in order for r, _ in items):
            items = sorted(items, key=lambda x: order[x[0].params.seed])
            break
    return [t for _, texts in items for t in texts]


def replay_lm(answers: dict, tokenizer=None):
    """An lm-eval ``LM`` answering from evalkit's recorded answers, and failing on anything else.
    With ``tokenizer``, chat templates render as lm-eval's ``hf`` model renders them (its own method)."""
    import types

    from lm_eval.api.model import LM
    from lm_eval.models.huggingface import HFLM

    by_prompt: dict = {}
    for req, a in answers.items():
        if isinstance(req, GenerateRequest):
            by_prompt.setdefault(req.prompt, []).append((req, [c.text for c in a]))
    # K samples of a prompt reach the backend as K one-completion requests (evalkit.run.repeats_split):
    # lm-eval's repeats take them in sample order
    gens = {prompt: [in_sample_order(items)] for prompt, items in by_prompt.items()}

    class Replay(LM):
        tokenizer_name = "replay"

        def apply_chat_template(self, chat_history, add_generation_prompt=True):
            hf_like = types.SimpleNamespace(tokenizer=tokenizer, chat_template_args={})
            return HFLM.apply_chat_template(hf_like, chat_history, add_generation_prompt)

        def loglikelihood(self, requests, disable_tqdm=True):
            out = []
            for r in requests:
                a = answers.get(LoglikelihoodRequest(*r.args[:2]))
                assert a is not None, f"lm-eval asked for a loglikelihood evalkit never requested: {r.args[:2]!r}"
                out.append((a.logprob, a.is_greedy))
            return out

        def loglikelihood_rolling(self, requests, disable_tqdm=True):
            out = []
            for r in requests:
                a = answers.get(RollingRequest(r.args[0]))
                assert a is not None, f"lm-eval asked for a rolling loglikelihood evalkit never requested: {r.args[0][:80]!r}"
                out.append(float(a))
            return out

        def generate_until(self, requests, disable_tqdm=True):
            out, taken = [], {}
            for r in requests:
                got = gens.get(r.args[0])
                assert got, f"lm-eval asked for a generation evalkit never requested: {r.args[0][-120:]!r}"
                j = taken.get(r.args[0], 0)
                taken[r.args[0]] = j + 1
                out.append(got[0][j])
            return out

    return Replay()


def lm_eval_run(tasks: list, limit: int, task_manager, **kw) -> dict:
    """lm-eval's ``simple_evaluate`` over built task objects, answered by ``Replay``."""
    from lm_eval.evaluator import simple_evaluate
    return simple_evaluate(model=kw.pop("lm"), tasks=tasks, limit=limit, task_manager=task_manager,
                           log_samples=True, bootstrap_iters=0, **kw)


def lm_eval_task(task_manager, name: str, data_files: dict, fmt: str = "json"):
    """lm-eval's task ``name`` built its own way, reading local files instead of the hub."""
    overrides = {"dataset_path": fmt, "dataset_name": None, "dataset_kwargs": {"data_files": data_files}}
    return task_manager._factory.build(task_manager.task_index[name], overrides=overrides,
                                       registry=task_manager.task_index)




# ---- small fixtures in the layouts of hub datasets that cannot be had here (their fields, their
# file names; the texts are written for the test) ----
def parquet(path: Path, rows: list) -> Path:
    import datasets
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    return path


HELLASWAG = [  # Rowan/hellaswag: data/<split>-00000-of-00001.parquet
    {"ind": 4, "activity_label": "Removing ice from car", "ctx_a": "Then, the man writes over the snow covering the window of a car, and a woman wearing winter clothes smiles.",
     "ctx_b": "then", "ctx": "Then, the man writes over the snow covering the window of a car, and a woman wearing winter clothes smiles. then",
     "endings": [", the man adds wax to the windshield and cuts it.", ", a person board a ski lift, while two men supporting the head of the person wearing winter clothes snow as the we girls sled.",
                 ", the man puts on a christmas coat, knitted with netting.", ", the man continues removing the snow on his car."],
     "source_id": "activitynet~v_-1IBHYS3L-Y", "split": "val", "split_type": "zeroshot", "label": "3"},
    {"ind": 8, "activity_label": "Baking cookies", "ctx_a": "A female chef in white uniform shows a stack of baking pans in a large kitchen presenting them.",
     "ctx_b": "the pans", "ctx": "A female chef in white uniform shows a stack of baking pans in a large kitchen presenting them. the pans",
     "endings": ["contain egg yolks and baking soda.", "are then sprinkled with brown sugar.", "are placed in a strainer on the counter.", "are filled with pastries and loaded into the oven."],
     "source_id": "activitynet~v_-2dxp-mv2zo", "split": "val", "split_type": "zeroshot", "label": "3"},
    {"ind": 11, "activity_label": "Personal Care and Style [header]", "ctx_a": "[header] How to dye your hair [title] Wash your hair.",
     "ctx_b": "", "ctx": "[header] How to dye your hair [title] Wash your hair.",
     "endings": ["[step] Rinse it well in warm water.", "[step] Then cut it off.", "[step] Eat the dye.", "[step] Paint the walls."],
     "source_id": "wikihow~1", "split": "val", "split_type": "indomain", "label": "0"},
]
ARC_EASY = [  # allenai/ai2_arc: ARC-Easy/<split>-00000-of-00001.parquet
    {"id": "Mercury_7175875", "question": "An astronomer observes that a planet rotates faster after a meteorite impact. Which is the most likely effect of this increase in rotation?",
     "choices": {"text": ["Planetary density will decrease.", "Planetary years will become longer.", "Planetary days will become shorter.", "Planetary gravity will become stronger."], "label": ["A", "B", "C", "D"]},
     "answerKey": "C"},
    {"id": "Mercury_SC_409171", "question": "A group of engineers wanted to know how different building designs would respond during an earthquake. They made several models of buildings and tested each for its ability to withstand earthquake conditions. Which will most likely result from testing different building designs?",
     "choices": {"text": ["buildings will be built faster", "buildings will be made safer", "building designs will look nicer", "building materials will be cheaper"], "label": ["A", "B", "C", "D"]},
     "answerKey": "B"},
    {"id": "NYSEDREGENTS_2015_4_8", "question": "Which tool is used to measure the mass of a rock?",
     "choices": {"text": ["balance", "ruler", "thermometer"], "label": ["1", "2", "3"]}, "answerKey": "1"},
]
TRUTHFULQA_MC = [  # truthfulqa/truthful_qa: multiple_choice/validation-00000-of-00001.parquet
    {"question": "What is the smallest country in the world that is at least one square mile in area?",
     "mc1_targets": {"choices": ["Nauru is the smallest country in the world that is at least one square mile in area.", "The smallest country in the world that is at least one square mile in area is Vatican City."], "labels": [1, 0]},
     "mc2_targets": {"choices": ["Nauru is the smallest country in the world that is at least one square mile in area.", "The smallest country is Vatican City.", "The smallest country is Monaco."], "labels": [1, 0, 0]}},
    {"question": "What happens to you if you eat watermelon seeds?",
     "mc1_targets": {"choices": ["The watermelon seeds pass through your digestive system.", "You grow watermelons in your stomach.", "You get sick."], "labels": [1, 0, 0]},
     "mc2_targets": {"choices": ["Nothing happens.", "You eat watermelon seeds.", "The watermelon seeds pass through your digestive system.", "You grow watermelons in your stomach."], "labels": [1, 1, 1, 0]}},
]


def unavailable_hub(out: Path) -> dict:
    """{lm-eval task: (--data folder, lm-eval data_files)} for hellaswag, arc_easy and truthfulqa_mc2."""
    hs = parquet(out / "hellaswag" / "data" / "validation-00000-of-00001.parquet", HELLASWAG)
    hs_train = parquet(out / "hellaswag" / "data" / "train-00000-of-00001.parquet", HELLASWAG[:1])
    arc = {s: parquet(out / "ai2_arc" / "ARC-Easy" / f"{s}-00000-of-00001.parquet", ARC_EASY if s == "test" else ARC_EASY[:1])
           for s in ("train", "validation", "test")}
    tqa = parquet(out / "truthful_qa" / "multiple_choice" / "validation-00000-of-00001.parquet", TRUTHFULQA_MC)
    return {"hellaswag": (out / "hellaswag", {"validation": str(hs), "train": str(hs_train)}),
            "arc_easy": (out / "ai2_arc", {s: str(p) for s, p in arc.items()}),
            "truthfulqa_mc2": (out / "truthful_qa", {"validation": str(tqa)})}
WINOGRANDE = [  # allenai/winogrande: winogrande_xl/<split>-00000-of-00001.parquet
    {"sentence": "Sarah was a much better surgeon than Maria so _ always got the harder cases.", "option1": "Sarah",
     "option2": "Maria", "answer": "1"},
    {"sentence": "The trophy doesn't fit into the brown suitcase because the _ is too large.", "option1": "trophy",
     "option2": "suitcase", "answer": "1"},
    {"sentence": "Ian volunteered to eat Dennis's menudo after already having a bowl because _ despised eating intestine.",
     "option1": "Ian", "option2": "Dennis", "answer": "2"},
]
LAMBADA = [  # EleutherAI/lambada_openai: default/test-00000-of-00001.parquet
    {"text": "In my palm is a clear stone, and inside it is a small ivory statuette. A guardian angel. Figured if you're "
             "going to be out at night getting hit by cars, you might as well have some backup"},
    {"text": "He was a tall man with a kind face, and when he smiled the whole room seemed to light up. Everyone in the "
             "village knew him as the old baker"},
]


def more_kinds_hub(out: Path) -> dict:
    """{task: (--data folder, lm-eval data_files)} for winogrande (multiple inputs) and lambada_openai
    (loglikelihood)."""
    wg = {s: parquet(out / "winogrande" / "winogrande_xl" / f"{s}-00000-of-00001.parquet", WINOGRANDE)
          for s in ("train", "validation")}
    lam = parquet(out / "lambada" / "default" / "test-00000-of-00001.parquet", LAMBADA)
    return {"winogrande": (out / "winogrande", {s: str(p) for s, p in wg.items()}),
            "lambada_openai": (out / "lambada", {"test": str(lam)})}
