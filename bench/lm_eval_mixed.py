"""lm-eval's side of ``bench_vllm_engine.py --mixed``: offline task YAMLs for the same items.

One ``lm_eval --model vllm`` run over local copies of exactly the items evalkit reads (its own
loaders, same order), so both harnesses answer the same questions with one engine start each:

- ``gsm8k_local``: lm-eval's gsm8k.yaml (5-shot, "Question: ... Answer:") with sampler first_n,
  evalkit's gsm8k shots (lm-eval's default draws them at random);
- ``minerva_math_local``: lm-eval's minerva_math500.yaml (4-shot minerva prompt), evalkit's math500
  default prompt for base models;
- ``mmlu_local_<subject>``: lm-eval's MMLU default template, 5-shot from the subject's dev split
  (``num_fewshot: 5`` in the YAML, since one ``--num_fewshot`` would apply to every task);
- ``humaneval_local``: lm-eval's humaneval.yaml written out in full (same prompt, greedy). Two
  differences: evalkit's humaneval also stops at a closing code fence ("\n```"), which lm-eval's
  stop list lacks (a completion that closes a fence runs on there: the measured 7/8 identical
  generations); and lm-eval scores it with Hugging Face ``evaluate``'s ``code_eval``,
  which it downloads from the hub and which is not here offline, so ``pass_at_k`` below runs each
  program (``prompt + completion`` + the tests + ``check(entry_point)``) in a Python subprocess
  with code_eval's 3 s timeout, as code_eval does.

The generation budget is the run's (``--gen_kwargs max_gen_toks=N`` on lm-eval's side, the same
N evalkit gets as ``max_tokens``).
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_lm_eval_agreement as agree  # noqa: E402 (yaml templates, jsonl writer)

MMLU_5SHOT = agree.MMLU_YAML + "num_fewshot: 5\n"

HUMANEVAL_YAML = """task: humaneval_local
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    test: {test}
unsafe_code: true
output_type: generate_until
test_split: test
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{test}}}}\\ncheck({{{{entry_point}}}})"
metric_list:
  - metric: !function humaneval_local_utils.pass_at_k
    aggregation: mean
    higher_is_better: true
    k: [1]
generation_kwargs:
  until:
    - "\\nclass"
    - "\\ndef"
    - "\\n#"
    - "\\nif"
    - "\\nprint"
  max_gen_toks: 1024
  do_sample: false
repeats: 1
num_fewshot: 0
filter_list:
  - name: "create_test"
    filter:
      - function: "custom"
        filter_fn: !function humaneval_local_utils.build_predictions
metadata:
  version: 1.0
"""

HUMANEVAL_UTILS = '''"""lm-eval humaneval utils with code_eval's execution done locally (code_eval is a hub download)."""
import subprocess
import sys


def _passes(program: str) -> bool:
    try:
        return subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=3.0).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def pass_at_k(references, predictions, k=None):
    """pass@1 of greedy samples: the share of candidates whose program passes (code_eval's k=1)."""
    ok = [_passes(c + "\\n" + ref) for ref, cands in zip(references, predictions) for c in cands[:1]]
    return sum(ok) / len(ok)


def build_predictions(resps, docs):
    return [[doc["prompt"] + r for r in resp] for resp, doc in zip(resps, docs)]
'''

SUBJECTS = ("astronomy", "marketing", "college_biology")
TASKS = ("gsm8k_local", "minerva_math_local", "humaneval_local", *(f"mmlu_local_{s}" for s in SUBJECTS))


def write_mixed(tmp: Path, data: Path, limit: int) -> str:
    """Write the YAMLs and data files under ``tmp``; returns lm-eval's ``--tasks`` value."""
    import lm_eval
    from evalkit.taskapi import registry

    lm_tasks = Path(lm_eval.__file__).parent / "tasks"
    (tmp / "gsm8k_local.yaml").write_text(agree.GSM8K_YAML.format(
        lm_eval_tasks=lm_tasks, train=data / "gsm8k" / "train.jsonl", test=data / "gsm8k" / "test.jsonl"))
    m = registry.get_task_class("math500")(data_path=str(data / "math" / "MATH-500"))
    test = agree._jsonl(tmp / "math_test.jsonl", [{"problem": d.query, "solution": d.meta["solution"],
                                                   "unique_id": d.id} for d in m.eval_docs()[:limit]])
    (tmp / "minerva_math_local.yaml").write_text(agree.MATH_YAML.format(lm_eval_tasks=lm_tasks, test=test))
    for s in SUBJECTS:
        t = registry.get_task_class(f"mmlu_{s}")(data_path=str(data / "mmlu"))
        test = agree._jsonl(tmp / f"mmlu_{s}_test.jsonl", agree._mmlu_rows(t.eval_docs()[:limit], s))
        dev = agree._jsonl(tmp / f"mmlu_{s}_dev.jsonl", agree._mmlu_rows(t.load_docs("dev"), s))
        (tmp / f"mmlu_local_{s}.yaml").write_text(MMLU_5SHOT.format(
            lm_eval_tasks=lm_tasks, task=f"mmlu_local_{s}", test=test, dev=dev, subject_words=s.replace("_", " ")))
    with gzip.open(data / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    h = registry.get_task_class("humaneval")(data_path=str(data / "humaneval"))
    order = [d.id for d in h.eval_docs()[:limit]]
    by_id = {r["task_id"]: r for r in rows}
    test = agree._jsonl(tmp / "humaneval_test.jsonl", [by_id[i] for i in order])
    (tmp / "humaneval_local.yaml").write_text(HUMANEVAL_YAML.format(test=test))
    (tmp / "humaneval_local_utils.py").write_text(HUMANEVAL_UTILS)
    return ",".join(TASKS)


def lm_eval_scores(out: Path) -> dict:
    """{task: {metric: value}} from lm-eval's results JSON (stderr entries left out)."""
    path = sorted(out.rglob("results_*.json"))[-1]
    res = json.loads(path.read_text())["results"]
    return {task: {k: v for k, v in vals.items() if "stderr" not in k and k != "alias" and isinstance(v, (int, float))}
            for task, vals in res.items()}


def same_items(lm_out: Path, run_dir: Path) -> dict:
    """Per generation task: items, identical prompts, identical generations (lm-eval vs evalkit)."""
    out = {}
    for lm_task, ek_task in (("gsm8k_local", "gsm8k"), ("minerva_math_local", "math500"),
                             ("humaneval_local", "humaneval")):
        ref = {}
        for r in agree.lm_samples(lm_out, lm_task):
            ref[int(r["doc_id"])] = (agree.lm_prompts(r)[0], r["resps"][0][0])
        ours = agree.ek_samples(run_dir, ek_task)
        n = min(len(ref), len(ours))
        prompts = sum(ref[i][0] == o["prompt"] for i, o in enumerate(ours[:n]) if i in ref)
        texts = sum(ref[i][1] == o["responses"][0] for i, o in enumerate(ours[:n]) if i in ref)
        out[ek_task] = {"items": n, "identical_prompts": prompts, "identical_generations": texts}
    return out
