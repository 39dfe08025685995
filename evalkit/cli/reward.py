"""``evalkit reward``: score a JSONL of (prompt, response) pairs or conversations with a reward model."""
from __future__ import annotations

import json


def register(sub):
    p = sub.add_parser("reward", help="score (prompt, response) pairs or conversations with a reward model",
                       description="Adds a raw reward (or per-step rewards) to every row of a JSONL file. Rows: "
                                   "{prompt, response} or {messages: [{role, content}, ...]} whose last message "
                                   "is the assistant's response; other fields are kept. Answers are cached by the "
                                   "reward model's identity, so a rerun after a kill computes only what is missing.")
    p.add_argument("--model", required=True, metavar="hf:PATH|vllm:PATH|vllm-server:URL",
                   help="reward model: hf: (transformers AutoModelForSequenceClassification, the reference) or "
                        "vllm: (vLLM offline LLM(runner='pooling')) and a local model folder, or vllm-server: and "
                        "the URL of a running `vllm serve RM --runner pooling` (e.g. http://127.0.0.1:8000)")
    p.add_argument("--model-args", default="", metavar="K=V,...",
                   help="reward backend options: activation=none|sigmoid|softmax (default none: raw rewards), label=0, "
                        "dtype=float32, batch_size=8 (hf), padding_side=right|left (hf), pooling=classify|step|token "
                        "(vllm, vllm-server with api=pooling), step_tag=<extra_0>, step_separator='\\n\\n', "
                        "max_model_len (vllm); vllm-server: api=classify|pooling|score|rerank, model_name=, "
                        "api_key_env=VLLM_API_KEY (the variable holding the key; never the key itself), "
                        "revision= (pins the served weights in the cache key), tokenizer=PATH|server, "
                        "batch_size=32, concurrency=4, timeout=300, max_retries=3")
    p.add_argument("--input", required=True, metavar="PAIRS.jsonl", help="rows to score")
    p.add_argument("--output", required=True, metavar="SCORED.jsonl", help="where the scored rows go")
    p.add_argument("--steps", action="store_true",
                   help="per-step rewards (process reward model): the response is cut at step_separator and each "
                        "step is followed by step_tag; needs pooling=step or pooling=token on vllm: (and api=pooling on "
                        "vllm-server:)")
    p.add_argument("--cache-dir", default=None, help="response cache folder (default ~/.cache/evalkit)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args):
    from evalkit.cli.run import open_cache
    from evalkit.run import validation
    from evalkit.run.workflows.reward_pairs import read_rows, request_of, score_file, summary_line
    from evalkit.run.roles import RewardRole

    # the options every command checks the same way, before any model loads
    reward = RewardRole.of("reward", args.model, args.model_args, "--model", "--model-args")
    validation.check_output_file(args.output)
    for n, row in read_rows(args.input):  # bad rows are named before any model loads
        request_of(row, args.input, n, args.steps)
    backend = reward.make()
    cache = open_cache(args)
    try:
        s = score_file(backend, cache, args.input, args.output, steps=args.steps)
    finally:
        backend.close()
        cache.close()
    print(json.dumps(s) if args.json else summary_line(s))
    return 0
