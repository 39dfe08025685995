"""GPQA diamond (Rein et al. 2023): 198 graduate-level four-choice questions.

The four choices are shuffled per question with a permutation drawn from the run seed and the
question's Record ID (never global random state; lm-eval uses ``random.shuffle``), so runs are
reproducible and ``gpqa_diamond`` / ``gpqa_diamond_cot`` show a question with the same order.
``--task-args gpqa_diamond:permutations=K`` scores every question under K permutations and
averages them (position bias averages out); the per-permutation accuracies and their spread are
in the run record.

``gpqa_diamond``: lm-eval's zero-shot prompt, loglikelihood of " (A)" ... " (D)"; acc, acc_norm.
``gpqa_diamond_cot``: zero-shot chain of thought with simple-evals' prompt; the last "Answer: X".

Data: the hub dataset ``Idavidrein/gpqa`` (gated: accept its terms and log in), or the authors'
password-protected zip (``dataset.zip`` or ``gpqa_diamond.zip``) or a plain ``gpqa_diamond.csv``.
The authors ask that the questions never appear in plain text online: nothing here logs them.
"""
from __future__ import annotations

import csv
import io
import os
import statistics
import zipfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from evalkit.scoring.choices import LETTERS, extract_answer_letter, permutation, simple_evals_prompt
from evalkit.taskapi.data import DataError, DataSource, FieldError, Provenance, Record
from evalkit.taskapi.requests import GenParams
from evalkit.scoring.metric import Metric
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.task import Doc, GenerationTask, MultipleChoiceTask, Scored, register_task

# Published by the authors in their README for dataset.zip (not a secret; it deters crawlers).
GPQA_ZIP_PASSWORD = "deserted-untie-orchid"
HUB_PATH = "Idavidrein/gpqa"


def preprocess(text) -> str:
    """lm-eval's clean-up of a GPQA answer option."""
    if text is None:
        return " "
    text = str(text).strip().replace(" [title]", ". ")
    return text.replace("  ", " ")


def _zip_member(z: zipfile.ZipFile, config: str) -> zipfile.ZipInfo:
    want = f"{config}.csv"
    hits = [i for i in z.infolist() if Path(i.filename).name == want and not i.filename.startswith("__MACOSX")]
    if not hits:
        raise DataError(f"{z.filename}: no {want} inside (members: {len(z.infolist())})")
    return hits[0]


def _read_zip(path: Path, config: str) -> bytes:
    password = os.environ.get("EVALKIT_GPQA_PASSWORD", GPQA_ZIP_PASSWORD).encode()
    with zipfile.ZipFile(path) as z:
        info = _zip_member(z, config)
        try:
            return z.read(info, pwd=password)
        except NotImplementedError:  # AES encryption: zipfile only does ZipCrypto
            pass
        except RuntimeError as e:
            raise DataError(f"{path}: cannot decrypt {info.filename} ({e}); set EVALKIT_GPQA_PASSWORD") from None
    try:
        import pyzipper
    except ImportError:
        raise DataError(f"{path}: {config}.csv is AES-encrypted; `pip install pyzipper` to read it") from None
    with pyzipper.AESZipFile(path) as z:
        z.setpassword(password)
        return z.read(_zip_member(z, config).filename)


def gpqa_reader(config: str):
    """Reader for a zip (encrypted or not), a folder holding one, or a plain CSV."""
    def read(path: Path, split: str) -> Iterable[Record]:
        if path.is_dir():
            cands = [path / n for n in (f"{config}.zip", "dataset.zip", f"{config}.csv",
                                        f"dataset/{config}.csv")]
            found = next((c for c in cands if c.is_file()), None)
            if found is None:
                raise DataError(f"{path}: no GPQA data (looked for {', '.join(c.name for c in cands)})")
            path = found
        if path.suffix == ".zip":
            blob, source = _read_zip(path, config), f"{path}!{config}.csv"
        else:
            blob, source = path.read_bytes(), str(path)
        text = blob.decode("utf-8-sig")
        reader = csv.DictReader(io.StringIO(text, newline=""))
        for row in reader:
            yield Record(dict(row), Provenance(source, reader.line_num))
    return read


class GatedHubSource(DataSource):
    """Says what to do when the gated hub dataset is not accessible."""

    def _load_hub(self, split):
        try:
            yield from super()._load_hub(split)
        except DataError as e:
            msg = str(e)
            if any(w in msg.lower() for w in ("gated", "401", "403", "unauthorized", "authenticated", "access")):
                raise DataError(
                    f"{HUB_PATH} is a gated dataset and this machine has no access to it: accept its terms at "
                    f"https://huggingface.co/datasets/{HUB_PATH} and log in (`huggingface-cli login` or HF_TOKEN), "
                    f"or pass --data TASK=PATH with the authors' dataset.zip / gpqa_diamond.zip.") from None
            raise


def gpqa_source(config: str) -> DataSource:
    return GatedHubSource(hub_path=HUB_PATH, hub_name=config, hub_splits={"test": "train"},
                          local_reader=gpqa_reader(config), data_dir="gpqa")


class _GPQABase:
    """Docs keep the choices in canonical order (correct first); prompts show a seeded permutation."""

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.permutations = int(options.get("permutations", 1))
        if self.permutations < 1:
            raise ValueError(f"task {self.name}: permutations must be >= 1")

    def record_to_doc(self, record, index):
        for f in ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"):
            if not isinstance(record.get(f), str):
                raise FieldError(f)
        rid = record.get("Record ID") or f"row-{index}"
        choices = [preprocess(record[f]) for f in ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
                                                   "Incorrect Answer 3")]
        return Doc(id=str(rid), query=record["Question"], choices=choices, gold=0,
                   meta={"domain": record.get("High-level domain") or "unknown",
                         "subdomain": record.get("Subdomain") or "unknown"})

    def permuted(self, doc: Doc, ctx, r: int) -> Doc:
        """The doc as shown under permutation r: choices reordered, gold moved along."""
        perm = permutation(4, ctx.seed, "gpqa-choices", doc.id, r)
        shown = [doc.choices[p] for p in perm]
        return replace(doc, choices=shown, gold=perm.index(doc.gold), meta={**doc.meta, "perm": perm})

    def config_fingerprint(self):
        return {**super().config_fingerprint(), "permutations": self.permutations}

    def run_extra(self, samples) -> dict:
        """Accuracy under each permutation index and its spread (position bias)."""
        if not samples:
            return {}
        k = self.permutations
        per = [statistics.fmean(s.extra["correct_by_perm"][r] for s in samples) for r in range(k)]
        out = {"permutations": k, "acc_by_permutation": per}
        if k > 1:
            out.update(spread=max(per) - min(per), std=statistics.stdev(per))
        letters = defaultdict(int)
        for s in samples:
            for p in s.extra["pred_letters"]:
                letters[p or "none"] += 1
        out["predicted_letter_counts"] = dict(sorted(letters.items()))
        return out

    def breakdowns(self, samples):
        groups = defaultdict(list)
        for s in samples:
            groups[s.extra["domain"]].append(s)
        names = [m for m in (samples[0].metrics if samples else {}) if m in ("acc", "acc_norm")]
        return {f"domain:{d}": {m: mean_metric([s.metrics[m] for s in ss]) for m in names}
                for d, ss in sorted(groups.items())}


@register_task
class GPQADiamond(_GPQABase, MultipleChoiceTask):
    name = "gpqa_diamond"
    description = "GPQA diamond, zero-shot, lm-eval prompt, loglikelihood of (A)-(D); seeded choice permutations"
    version = "1"
    dataset = gpqa_source("gpqa_diamond")
    eval_split = "test"
    num_fewshot = 0
    metrics = (Metric("acc"), Metric("acc_norm"))

    def doc_to_text(self, doc):
        opts = "".join(f"\n({LETTERS[i]}) {c}" for i, c in enumerate(doc.choices))
        return f"What is the correct answer to this question:{doc.query}\nChoices:{opts}\nAnswer:"

    def doc_to_choice_text(self, doc, i):
        return f"{self.target_delimiter}({LETTERS[i]})"

    def requests(self, doc, ctx):
        reqs = []
        for r in range(self.permutations):
            reqs.extend(super().requests(self.permuted(doc, ctx, r), ctx))
        return reqs

    def score(self, doc, responses, ctx):
        correct, preds, prompts, resp = [], [], [], []
        for r in range(self.permutations):
            shown = self.permuted(doc, ctx, r)
            chunk = responses[4 * r: 4 * r + 4]
            lls = [x.logprob for x in chunk]
            pred = max(range(4), key=lambda i: lls[i])
            correct.append(float(pred == shown.gold))
            preds.append(LETTERS[pred])
            prompts.append(self.context(shown, ctx))
            resp.append([[x.logprob, x.is_greedy] for x in chunk])
        acc = sum(correct) / len(correct)
        # the options "(A)".."(D)" have equal length, so acc_norm == acc (kept for lm-eval parity)
        return Scored({"acc": acc, "acc_norm": acc}, extracted=preds,
                      extra={"correct_by_perm": correct, "pred_letters": preds, "domain": doc.meta["domain"]},
                      target=[LETTERS[self.permuted(doc, ctx, r).gold] for r in range(self.permutations)],
                      prompt=prompts if len(prompts) > 1 else prompts[0], responses=resp)


@register_task
class GPQADiamondCoT(_GPQABase, GenerationTask):
    name = "gpqa_diamond_cot"
    vote_kind = "letter"
    description = "GPQA diamond, zero-shot chain of thought (simple-evals prompt); last 'Answer: X' counts"
    version = "1"
    dataset = gpqa_source("gpqa_diamond")
    eval_split = "test"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=2048, temperature=0.0)
    metrics = (Metric("acc"), Metric("first_last_differ", higher_is_better=False),
               Metric("no_answer", higher_is_better=False))

    def build_prompt_text(self, doc, ctx):
        if ctx.num_fewshot:
            raise ValueError(f"task {self.name} is zero-shot (simple-evals' prompt)")
        return simple_evals_prompt(doc.query, doc.choices)

    def requests(self, doc, ctx):
        reqs = []
        for r in range(self.permutations):
            reqs.extend(super().requests(self.permuted(doc, ctx, r), ctx))
        return reqs

    def score(self, doc, responses, ctx):
        correct, preds, flags, texts, golds = [], [], [], [], []
        for r in range(self.permutations):
            shown = self.permuted(doc, ctx, r)
            text = responses[r][0].text
            ans = extract_answer_letter(text, "ABCD")
            correct.append(float(ans.letter == LETTERS[shown.gold]))
            preds.append(ans.letter)
            flags.append(ans)
            texts.append(text)
            golds.append(LETTERS[shown.gold])
        k = self.permutations
        metrics = {"acc": sum(correct) / k,
                   "first_last_differ": sum(a.first_last_differ for a in flags) / k,
                   "no_answer": sum(a.letter is None for a in flags) / k}
        prompts = [self.prompt_of(self.permuted(doc, ctx, r), ctx) for r in range(k)]
        return Scored(metrics, extracted=[a.to_dict() for a in flags],
                      extra={"correct_by_perm": correct, "pred_letters": preds, "domain": doc.meta["domain"]},
                      target=golds, prompt=prompts if k > 1 else prompts[0], responses=texts)
