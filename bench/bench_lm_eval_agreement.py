"""MMLU, GSM8K and minerva MATH: evalkit's HF backend vs lm-eval's `hf` model, item by item.

Both harnesses run the tiny model (float32) on the same items, offline (lm-eval reads JSONL written
to a temp dir through custom YAML tasks that `include` its own task configs):
  - mmlu: the first N test questions of a few subjects, 5-shot from the subject's dev split, lm-eval's
    default prompt; the predicted letter must agree on >= 99% of items (loglikelihoods are shown too);
  - gsm8k: the first N test items, lm-eval's 5-shot format; strict/flexible scores must be equal;
  - math: the first N MATH-500 items with lm-eval's minerva_math 4-shot prompt; exact_match and
    math_verify must be equal item by item;
  - math_scorers (no model; the tiny model scores ~0 on MATH): lm-eval's minerva process_results and
    evalkit's scorer on reference solutions against their own and against other problems.
It prints the agreement and the wall-time ratio per benchmark and writes bench/out/lm_eval_agreement.json.

    python bench/bench_lm_eval_agreement.py [--mmlu-subjects a,b,c] [--mmlu-limit 15] [--gsm8k-limit 10]
        [--math-limit 10] [--max-gen-toks 256] [--scorer-items 200] [--only mmlu,gsm8k,math,math_scorers]

Defaults finish in about 10 minutes on 2 CPU cores; raise the limits for a stronger check.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

MMLU_YAML = """include: {lm_eval_tasks}/mmlu/default/_default_template_yaml
task: {task}
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    test: {test}
    dev: {dev}
description: "The following are multiple choice questions (with answers) about {subject_words}.\\n\\n"
"""

# lm-eval's gsm8k draws its 5 shots at random (seed 1234) per document; evalkit's gsm8k takes the
# first five train items, so the peer runs with sampler first_n to get the same prompts.
GSM8K_YAML = """include: {lm_eval_tasks}/gsm8k/gsm8k.yaml
task: gsm8k_local
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    train: {train}
    test: {test}
fewshot_config:
  sampler: first_n
"""

MATH_YAML = """include: {lm_eval_tasks}/minerva_math/minerva_math500.yaml
task: minerva_math_local
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    test: {test}
"""


def _jsonl(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def _mmlu_rows(docs, subject):
    return [{"question": d.query, "subject": subject, "choices": d.choices, "answer": d.gold} for d in docs]


def write_tasks(tmp: Path, subjects: list[str], mmlu_n: int, math_n: int) -> None:
    """lm-eval task YAMLs over JSONL copies of exactly the items evalkit reads (same loader, same order)."""
    import lm_eval
    from evalkit.taskapi import registry
    lm_tasks = Path(lm_eval.__file__).parent / "tasks"
    for s in subjects:
        t = registry.get_task_class(f"mmlu_{s}")(data_path=str(DATA / "mmlu"))
        test = _jsonl(tmp / f"mmlu_{s}_test.jsonl", _mmlu_rows(t.eval_docs()[:mmlu_n], s))
        dev = _jsonl(tmp / f"mmlu_{s}_dev.jsonl", _mmlu_rows(t.load_docs("dev"), s))
        (tmp / f"mmlu_local_{s}.yaml").write_text(MMLU_YAML.format(
            lm_eval_tasks=lm_tasks, task=f"mmlu_local_{s}", test=test, dev=dev, subject_words=s.replace("_", " ")))
    (tmp / "gsm8k_local.yaml").write_text(GSM8K_YAML.format(
        lm_eval_tasks=lm_tasks, train=DATA / "gsm8k" / "train.jsonl", test=DATA / "gsm8k" / "test.jsonl"))
    m = registry.get_task_class("math500")(data_path=str(DATA / "math" / "MATH-500"))
    math_docs = m.eval_docs()[:math_n]
    test = _jsonl(tmp / "math_test.jsonl",
                  [{"problem": d.query, "solution": d.meta["solution"], "unique_id": d.id} for d in math_docs])
    (tmp / "minerva_math_local.yaml").write_text(MATH_YAML.format(lm_eval_tasks=lm_tasks, test=test))


THREADS: dict = {}


def run(cmd: list[str]) -> float:
    t = time.time()
    r = subprocess.run(cmd, env={**os.environ, **OFFLINE, **THREADS}, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-4000:])
        raise SystemExit(f"command failed ({r.returncode}): {' '.join(cmd[:6])} ...")
    return time.time() - t


def lm_eval_cmd(a, tasks, tmp, out, fewshot=None, limit=None, gen=None):
    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
           f"pretrained={a.model_dir},dtype=float32,max_length={a.max_length}", "--tasks", tasks,
           "--include_path", str(tmp), "--batch_size", str(a.lm_eval_batch_size), "--output_path", str(out),
           "--log_samples"]
    if fewshot is not None:
        cmd += ["--num_fewshot", str(fewshot)]
    if limit:
        cmd += ["--limit", str(limit)]
    if gen:
        cmd += ["--gen_kwargs", gen]
    return cmd


def evalkit_cmd(a, tasks, data: dict, out, limit=None, gen=None):
    cmd = [sys.executable, "-m", "evalkit", "run", "--model", f"hf:{a.model_dir}", "--model-args",
           f"dtype=float32,max_length={a.max_length}", "--tasks", tasks, "--output", str(out),
           "--cache-dir", str(out) + "_cache"]
    for t, p in data.items():
        cmd += ["--data", f"{t}={p}"]
    if limit:
        cmd += ["--limit", str(limit)]
    if gen:
        cmd += ["--gen-kwargs", gen]
    return cmd


def lm_samples(out: Path, task: str) -> list[dict]:
    files = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
    return [json.loads(line) for f in files for line in open(f, encoding="utf-8")]


def ek_run(out: Path):
    run_dir = next(p for p in out.iterdir() if (p / "run.json").exists())
    return run_dir, json.load(open(run_dir / "run.json"))


def ek_samples(run_dir: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in open(run_dir / f"samples_{task}.jsonl", encoding="utf-8")]


def lm_prompts(sample: dict) -> list[str]:
    """The contexts lm-eval sent for one doc (one per request)."""
    args = sample.get("arguments", {})
    vals = args.values() if isinstance(args, dict) else args
    return [v["arg_0"] if isinstance(v, dict) else v[0] for v in vals]


def _ll(x) -> float:
    while isinstance(x, (list, tuple)):
        x = x[0]
    return float(x)


def mmlu_token_counts(a, prompts_by_subject: dict) -> tuple[int, int]:
    """(tokens lm-eval's forward passes read, tokens evalkit's read) for these MMLU prompts.

    lm-eval runs each question's context once (its four one-token choices share the pass);
    evalkit runs each subject's shared prefix (header and five shots) once and then only the
    question suffixes, so the ratio of the two is the speed-up the token counts allow."""
    from transformers import AutoTokenizer

    from evalkit.backends.shared_prefix import shared_prefix_groups
    from evalkit.backends.tokenization import encode_pair
    tok = AutoTokenizer.from_pretrained(a.model_dir)
    encode = lambda text: tok.encode(text, add_special_tokens=False)  # noqa: E731
    pid = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    lm_tokens = ek_tokens = 0
    for prompts in prompts_by_subject.values():
        inputs = []
        for p in prompts:
            ctx, cont = encode_pair(encode, pid, p, " A")
            inputs.append((ctx + cont)[-(a.max_length + 1):][:-1])
        lm_tokens += sum(len(x) for x in inputs)
        groups, rest = shared_prefix_groups(inputs, [len(x) - 1 for x in inputs])
        ek_tokens += sum(len(inputs[i]) for i in rest)
        ek_tokens += sum(p + sum(len(inputs[i]) - p for i in members) for p, members in groups)
    return lm_tokens, ek_tokens


def bench_mmlu(a, tmp) -> dict:
    subjects = a.mmlu_subjects
    t_ref = run(lm_eval_cmd(a, ",".join(f"mmlu_local_{s}" for s in subjects), tmp, tmp / "lm_mmlu", fewshot=5))
    t_ours = run(evalkit_cmd(a, ",".join(f"mmlu_{s}" for s in subjects), {f"mmlu_{s}": DATA / "mmlu" for s in subjects},
                             tmp / "ek_mmlu", limit=a.mmlu_limit))
    run_dir, _ = ek_run(tmp / "ek_mmlu")
    n = agree = same_prompt = 0
    max_diff = 0.0
    prompts: dict = {}
    for s in subjects:
        ref = {f"{s}-{r['doc_id']}": r for r in lm_samples(tmp / "lm_mmlu", f"mmlu_local_{s}")}
        for o in ek_samples(run_dir, f"mmlu_{s}"):
            prompts.setdefault(s, []).append(o["prompt"])
            r = ref[o["doc_id"]]
            ref_ll = [_ll(x) for x in r["resps"]]
            ours_ll = [x[0] for x in o["responses"]]
            n += 1
            same_prompt += set(lm_prompts(r)) == {o["prompt"]}
            agree += max(range(4), key=lambda i: ref_ll[i]) == max(range(4), key=lambda i: ours_ll[i])
            max_diff = max(max_diff, *(abs(p - q) for p, q in zip(ref_ll, ours_ll)))
    out = {"subjects": subjects, "items": n, "identical_prompts": same_prompt,
           "agreeing_predictions": agree, "agreement": agree / n,
           "max_abs_loglikelihood_diff": max_diff, "lm_eval_s": t_ref, "evalkit_s": t_ours,
           "speed_ratio": t_ref / t_ours, "pass": agree / n >= 0.99}
    lm_tokens, ek_tokens = mmlu_token_counts(a, prompts)
    out.update(lm_eval_tokens=lm_tokens, evalkit_tokens=ek_tokens, token_ratio=lm_tokens / ek_tokens,
               share_of_token_ratio=(t_ref / t_ours) / (lm_tokens / ek_tokens))
    print(f"mmlu ({n} items, {len(subjects)} subjects, 5-shot): identical prompts {same_prompt}/{n}; "
          f"same predicted letter {agree}/{n} "
          f"({agree / n:.1%}), max |dlogprob| {max_diff:.2e}; time lm-eval {t_ref:.0f}s evalkit {t_ours:.0f}s "
          f"(lm-eval/evalkit x{t_ref / t_ours:.2f})")
    print(f"mmlu tokens through the model: lm-eval {lm_tokens}, evalkit {ek_tokens} (each subject's prefix once): "
          f"theoretical ratio x{lm_tokens / ek_tokens:.2f}; achieved x{t_ref / t_ours:.2f} = "
          f"{out['share_of_token_ratio']:.0%} of it (model load and start-up included on both sides)")
    return out


def bench_gsm8k(a, tmp) -> dict:
    gen = f"max_gen_toks={a.max_gen_toks}"
    t_ref = run(lm_eval_cmd(a, "gsm8k_local", tmp, tmp / "lm_gsm", limit=a.gsm8k_limit, gen=gen))
    t_ours = run(evalkit_cmd(a, "gsm8k", {"gsm8k": DATA / "gsm8k"}, tmp / "ek_gsm", limit=a.gsm8k_limit,
                             gen=f"max_tokens={a.max_gen_toks}"))
    run_dir, _ = ek_run(tmp / "ek_gsm")
    ref = {}
    for r in lm_samples(tmp / "lm_gsm", "gsm8k_local"):
        d = ref.setdefault(str(r["doc_id"]), {"text": r["resps"][0][0], "prompt": lm_prompts(r)[0]})
        d[r["filter"]] = r["exact_match"]
    n = same_text = same_strict = same_flex = same_prompt = 0
    for o in ek_samples(run_dir, "gsm8k"):
        r = ref[o["doc_id"]]
        n += 1
        same_prompt += r["prompt"] == o["prompt"]
        same_text += r["text"] == o["responses"][0]
        same_strict += float(r["strict-match"]) == o["metrics"]["exact_match_strict"]
        same_flex += float(r["flexible-extract"]) == o["metrics"]["exact_match_flexible"]
    out = {"items": n, "identical_prompts": same_prompt, "identical_generations": same_text,
           "same_strict": same_strict, "same_flexible": same_flex,
           "lm_eval_s": t_ref, "evalkit_s": t_ours, "speed_ratio": t_ref / t_ours,
           "pass": same_prompt == n and same_strict == n and same_flex == n}
    print(f"gsm8k ({n} items): identical prompts {same_prompt}/{n}, generations {same_text}/{n}; "
          f"equal strict {same_strict}/{n}, flexible "
          f"{same_flex}/{n}; time lm-eval {t_ref:.0f}s evalkit {t_ours:.0f}s (x{t_ref / t_ours:.2f})")
    return out


def bench_math(a, tmp) -> dict:
    t_ref = run(lm_eval_cmd(a, "minerva_math_local", tmp, tmp / "lm_math", limit=a.math_limit,
                            gen=f"max_gen_toks={a.max_gen_toks}"))
    t_ours = run(evalkit_cmd(a, "math500", {"math500": DATA / "math" / "MATH-500"}, tmp / "ek_math",
                             limit=a.math_limit, gen=f"max_tokens={a.max_gen_toks}"))
    run_dir, run_json = ek_run(tmp / "ek_math")
    ids = [json.loads(line)["unique_id"] for line in open(tmp / "math_test.jsonl", encoding="utf-8")]
    ref = {ids[int(r["doc_id"])]: r for r in lm_samples(tmp / "lm_math", "minerva_math_local")}
    n = same_text = same_em = same_mv = same_prompt = 0
    sums = {"lm_em": 0.0, "lm_mv": 0.0, "ek_em": 0.0, "ek_mv": 0.0}
    for o in ek_samples(run_dir, "math500"):
        r = ref[o["doc_id"]]
        n += 1
        same_prompt += lm_prompts(r)[0] == o["prompt"]
        same_text += r["resps"][0][0] == o["responses"][0]
        same_em += float(r["exact_match"]) == o["metrics"]["exact_match"]
        same_mv += float(r["math_verify"]) == o["metrics"]["math_verify"]
        sums["lm_em"] += float(r["exact_match"])
        sums["lm_mv"] += float(r["math_verify"])
        sums["ek_em"] += o["metrics"]["exact_match"]
        sums["ek_mv"] += o["metrics"]["math_verify"]
    out = {"items": n, "identical_prompts": same_prompt, "identical_generations": same_text,
           "same_exact_match": same_em, "same_math_verify": same_mv,
           **{k: v / n for k, v in sums.items()}, "lm_eval_s": t_ref, "evalkit_s": t_ours,
           "speed_ratio": t_ref / t_ours, "pass": same_prompt == n and same_em == n and same_mv == n}
    print(f"math (minerva 4-shot, {n} MATH-500 items): identical prompts {same_prompt}/{n}, "
          f"generations {same_text}/{n}; equal exact_match "
          f"{same_em}/{n}, math_verify {same_mv}/{n} (lm-eval em {sums['lm_em'] / n:.3f} mv {sums['lm_mv'] / n:.3f}; "
          f"evalkit em {sums['ek_em'] / n:.3f} mv {sums['ek_mv'] / n:.3f}); time lm-eval {t_ref:.0f}s evalkit "
          f"{t_ours:.0f}s (x{t_ref / t_ours:.2f})")
    return out


def bench_math_scorers(a) -> dict:
    """No model: lm-eval's minerva process_results and evalkit's scorer on the same completions --
    each MATH-500 reference solution, written as a minerva answer, against its own problem (mostly
    right) and against the next problem (mostly wrong) -- item by item."""
    import lm_eval.tasks.minerva_math.utils as lm
    from evalkit.taskapi import registry
    from evalkit.taskapi.requests import Completion
    from evalkit.taskapi.task import RunContext
    t = registry.get_task_class("math500")(data_path=str(DATA / "math" / "MATH-500"))
    docs = t.eval_docs()[: a.scorer_items]
    texts = [d.meta["solution"] + f"\nFinal Answer: The final answer is ${d.target}$. I hope it is correct."
             for d in docs]
    pairs = [(d, x) for d, x in zip(docs, texts)] + [(d, x) for d, x in zip(docs, texts[1:] + texts[:1])]
    t0 = time.time()
    ref = []
    for d, x in pairs:
        lm_doc = {"problem": d.query, "solution": d.meta["solution"], "answer": lm.normalize_final_answer(
            lm.remove_boxed(lm.last_boxed_only_string(d.meta["solution"])))}
        ref.append(lm.process_results(lm_doc, [x]))
    t_ref = time.time() - t0
    t0 = time.time()
    ours = t.score_all([d for d, _ in pairs], [[[Completion(x, "stop")]] for _, x in pairs], RunContext())
    t_ours = time.time() - t0
    n = len(pairs)
    same_em = sum(float(r["exact_match"]) == o.metrics["exact_match"] for r, o in zip(ref, ours))
    same_mv = sum(float(r["math_verify"]) == o.metrics["math_verify"] for r, o in zip(ref, ours))
    em = sum(o.metrics["exact_match"] for o in ours) / n
    mv = sum(o.metrics["math_verify"] for o in ours) / n
    out = {"items": n, "same_exact_match": same_em, "same_math_verify": same_mv, "evalkit_exact_match": em,
           "evalkit_math_verify": mv, "lm_eval_s": t_ref, "evalkit_s": t_ours, "speed_ratio": t_ref / t_ours,
           "pass": same_em == n and same_mv == n}
    print(f"math scorers ({n} completions, no model): equal exact_match {same_em}/{n}, math_verify {same_mv}/{n} "
          f"(mean em {em:.3f}, mv {mv:.3f}); time lm-eval {t_ref:.0f}s (one thread) evalkit {t_ours:.0f}s "
          f"(worker pool) (x{t_ref / t_ours:.2f})")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mmlu-subjects", default="abstract_algebra,anatomy,marketing", help="comma list, or 'all'")
    ap.add_argument("--mmlu-limit", type=int, default=15, help="test questions per subject (0: all)")
    ap.add_argument("--gsm8k-limit", type=int, default=10, help="0: all 1,319")
    ap.add_argument("--math-limit", type=int, default=10, help="MATH-500 items (0: all 500)")
    ap.add_argument("--max-gen-toks", type=int, default=256, help="generation budget, the same for both")
    ap.add_argument("--max-length", type=int, default=2048, help="same context window for both harnesses")
    ap.add_argument("--lm-eval-batch-size", default="8")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads for both harnesses (1 is steadiest on a shared machine)")
    ap.add_argument("--scorer-items", type=int, default=200, help="MATH-500 items for the model-free scorer check")
    ap.add_argument("--only", default="mmlu,gsm8k,math,math_scorers")
    ap.add_argument("--model-dir", default=None, help="HF model dir (default: the bundled smollm2-135m)")
    a = ap.parse_args()
    from evalkit.tasks.mmlu import SUBJECTS
    a.mmlu_subjects = sorted(SUBJECTS) if a.mmlu_subjects == "all" else \
        [s.strip() for s in a.mmlu_subjects.split(",") if s.strip()]
    a.mmlu_limit, a.gsm8k_limit, a.math_limit = (x or None for x in (a.mmlu_limit, a.gsm8k_limit, a.math_limit))
    if a.model_dir is None:
        from evalkit.backends import model_dirs as models
        a.model_dir = str(models.prepare("smollm2-135m"))
    THREADS.update(OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads), EVALKIT_TORCH_THREADS=str(a.threads))
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-agree-"))
    write_tasks(tmp, a.mmlu_subjects, a.mmlu_limit, a.math_limit)
    report = {"model": a.model_dir, "max_length": a.max_length, "max_gen_toks": a.max_gen_toks}
    benches = {"mmlu": bench_mmlu, "gsm8k": bench_gsm8k, "math": bench_math}
    for name in [x.strip() for x in a.only.split(",") if x.strip()]:
        report[name] = bench_math_scorers(a) if name == "math_scorers" else benches[name](a, tmp)
    model_runs = [v for k, v in report.items() if isinstance(v, dict) and k in benches]
    if model_runs:
        t_ref = sum(v["lm_eval_s"] for v in model_runs)
        t_ours = sum(v["evalkit_s"] for v in model_runs)
        print(f"total wall time with the model: lm-eval {t_ref:.0f}s, evalkit {t_ours:.0f}s, "
              f"ratio lm-eval/evalkit {t_ref / t_ours:.2f}")
        report["total"] = {"lm_eval_s": t_ref, "evalkit_s": t_ours, "speed_ratio": t_ref / t_ours}
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "lm_eval_agreement.json").write_text(json.dumps(report, indent=2))
    ok = all(v.get("pass", True) for v in report.values() if isinstance(v, dict))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    from results_md import record_run
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--only")
    pre.add_argument("--mmlu-subjects")
    known = pre.parse_known_args()[0]  # each selection keeps its own section of RESULTS.md
    name = "lm_eval_agreement" + (f"-{known.only.replace(',', '-')}" if known.only else "")
    sys.exit(record_run(name + ("-all-subjects" if known.mmlu_subjects == "all" else ""), main))
