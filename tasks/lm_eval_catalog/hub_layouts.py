"""Local copies of benchmarks in their hub datasets' layouts, for ``--data lm-eval:NAME=DIR``.

lm-eval's tasks read hub datasets; offline, ``--data`` points them at files in the hub dataset's own
layout. This writes such copies from the original files (``../shared/data`` here), without changing
a field::

    python -m evalkit.tasks.lm_eval_catalog.hub_layouts mmlu ../shared/data hub/mmlu [--subjects a,b]
    python -m evalkit.tasks.lm_eval_catalog.hub_layouts {gsm8k,wikitext,bbh,math,ifeval} ../shared/data hub/NAME

=========  =====================================  ==============================================
name       hub dataset (config)                   layout written
=========  =====================================  ==============================================
mmlu       cais/mmlu (one per subject)            ``<subject>/{test,dev}.jsonl``
gsm8k      openai/gsm8k (main)                    ``{train,test}.jsonl`` (links to the originals)
wikitext   EleutherAI/wikitext_document_level     ``{test,validation,train}.jsonl``, one ``page`` each
bbh        lukaemon/bbh, SaylorTwift/bbh          ``<subtask>/test.jsonl`` (input, target)
math       EleutherAI/hendrycks_math              ``<subject>/{test,train}.jsonl``
ifeval     google/IFEval                          ``train.jsonl`` (a link to the original)
=========  =====================================  ==============================================
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

def jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def mmlu_hub(shared: Path, out: Path, subjects) -> Path:
    """``cais/mmlu``: one folder per subject config, ``test``/``dev`` splits, fields question,
    subject, choices, answer (0-3)."""
    for subj in subjects:
        for split in ("test", "dev"):
            rows = list(csv.DictReader(open(shared / "mmlu" / split / f"{subj}_{split}.csv", encoding="utf-8")))
            jsonl(out / subj / f"{split}.jsonl", ({"question": r["question"], "subject": subj,
                                                   "choices": [r[f"choice{i}"] for i in range(4)],
                                                   "answer": int(r["answer"])} for r in rows))
    return out


def gsm8k_hub(shared: Path, out: Path) -> Path:
    """``openai/gsm8k`` (config main): ``train``/``test`` with question, answer: the shared files as they are."""
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        (out / f"{split}.jsonl").symlink_to(shared / "gsm8k" / f"{split}.jsonl")
    return out


def wikitext_hub(shared: Path, out: Path) -> Path:
    """``EleutherAI/wikitext_document_level`` (wikitext-2-raw-v1): one ``page`` per document."""
    from evalkit.tasks.wikitext import split_pages
    raw = shared / "wikitext" / "wikitext-2-raw"
    pages = split_pages((raw / "wiki.test.raw").read_text(encoding="utf-8"))
    for split in ("test", "validation", "train"):  # the task names all three; only test is read
        jsonl(out / f"{split}.jsonl", ({"page": p} for p in (pages if split == "test" else pages[:1])))
    return out


def bbh_hub(shared: Path, out: Path, subtasks) -> Path:
    """``lukaemon/bbh`` / ``SaylorTwift/bbh``: one config per subtask, split ``test``, input, target."""
    for t in subtasks:
        ex = json.loads((shared / "bbh" / "bbh" / f"{t}.json").read_text(encoding="utf-8"))["examples"]
        jsonl(out / t / "test.jsonl", ({"input": e["input"], "target": e["target"]} for e in ex))
    return out


def math_hub(shared: Path, out: Path, subjects) -> Path:
    """``EleutherAI/hendrycks_math``: one config per subject, ``test`` split, problem/level/type/solution."""
    for subj in subjects:
        files = sorted((shared / "math" / "MATH" / "test" / subj).glob("*.json"), key=lambda p: int(p.stem))
        jsonl(out / subj / "test.jsonl", (json.loads(f.read_text(encoding="utf-8")) for f in files))
        jsonl(out / subj / "train.jsonl", (json.loads(f.read_text(encoding="utf-8")) for f in files[:4]))
    return out


def ifeval_hub(shared: Path, out: Path) -> Path:
    """``google/IFEval``: split ``train`` with key, prompt, instruction_id_list, kwargs (the shared file)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.jsonl").symlink_to(shared / "ifeval" / "input_data.jsonl")
    return out




def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evalkit.tasks.lm_eval_catalog.hub_layouts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=["mmlu", "gsm8k", "wikitext", "bbh", "math", "ifeval"])
    ap.add_argument("shared", type=Path, help="folder of the original benchmark files (../shared/data)")
    ap.add_argument("out", type=Path, help="folder to write (pass it as --data lm-eval:TASK=OUT)")
    ap.add_argument("--subjects", type=lambda s: s.split(","), default=None,
                    help="mmlu/math subjects, bbh subtasks (default: all)")
    a = ap.parse_args(argv)
    if a.name in ("mmlu", "math", "bbh") and a.subjects is None:
        where = {"mmlu": a.shared / "mmlu" / "test", "math": a.shared / "math" / "MATH" / "test",
                 "bbh": a.shared / "bbh" / "bbh"}[a.name]
        a.subjects = sorted(p.stem.removesuffix("_test") for p in where.iterdir() if p.suffix in (".csv", ".json")
                            or p.is_dir())
    build = {"mmlu": lambda: mmlu_hub(a.shared, a.out, a.subjects), "gsm8k": lambda: gsm8k_hub(a.shared, a.out),
             "wikitext": lambda: wikitext_hub(a.shared, a.out), "bbh": lambda: bbh_hub(a.shared, a.out, a.subjects),
             "math": lambda: math_hub(a.shared, a.out, a.subjects), "ifeval": lambda: ifeval_hub(a.shared, a.out)}
    print(build[a.name]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
