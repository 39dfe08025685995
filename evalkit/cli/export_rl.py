"""``evalkit export-rl``: RL training data (verl parquet / TRL jsonl) with the evaluation's prompts and gold."""
from __future__ import annotations

import sys

from evalkit.backends import parse_model_args


def register(sub):
    p = sub.add_parser("export-rl", help="write a task's prompts (as the eval renders them) + gold for verl / TRL",
                       description="Rows for RL training whose reward is evalkit's verifier: verl parquet "
                                   "(data_source evalkit/<task>) or TRL jsonl (prompt, gold).")
    p.add_argument("--task", required=True, help="gsm8k, gsm8k_cot, math, math500, mmlu, gpqa_diamond, humaneval, mbpp")
    p.add_argument("--format", choices=("verl", "trl"), required=True)
    p.add_argument("--output", required=True, help="output folder")
    p.add_argument("--data", default=None, help="the task's local data file or folder (default: the hub)")
    p.add_argument("--split", default=None, help="dataset split (default: the task's eval split; e.g. train)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--chat", action="store_true", help="the chat-template prompt (messages; "
                   "math: the \\boxed{} prompt)")
    p.add_argument("--num-fewshot", type=int, default=None)
    p.add_argument("--system-prompt", default=None)
    p.add_argument("--seed", type=int, default=1234, help="run seed (few-shot sampling, GPQA choice order)")
    p.add_argument("--task-args", default="", metavar="K=V,...", help="task options, e.g. prompt=chat")
    p.set_defaults(func=run)


def run(args):
    from evalkit.rl.export import export

    info = export(args.task, args.format, args.output, split=args.split, data_path=args.data, limit=args.limit,
                  chat=args.chat, seed=args.seed, num_fewshot=args.num_fewshot, system_prompt=args.system_prompt,
                  **parse_model_args(args.task_args, "--task-args"))
    print(f"wrote {info['rows']} rows to {info['path']} (verifier {info['verifier_hash']})", file=sys.stderr)
    return 0
