"""``evalkit reward-server --tasks gsm8k,math``: OpenRLHF's remote reward server over evalkit's verifiers."""
from __future__ import annotations

import sys


def register(sub):
    p = sub.add_parser("reward-server", help="serve evalkit verifiers as an OpenRLHF remote reward (--remote_rm_url)",
                       description="POST /get_reward {query, prompts, labels} -> {rewards, scores, extra_logs}. "
                                   "Labels are the gold (one task) or {\"task\": NAME, \"gold\": ...}.")
    p.add_argument("--tasks", required=True, help="comma-separated: gsm8k, gsm8k_cot, math, math500, mmlu, "
                                                 "gpqa_diamond, humaneval, mbpp, mbpp_sanitized")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1; expose with care)")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--max-concurrency", type=int, default=4, help="batches scored at once (default 4)")
    p.add_argument("--max-queue", type=int, default=256,
                   help="batches waiting for a slot (default 256); beyond it: 503 with Retry-After at once")
    p.add_argument("--strip-think", action="store_true", help="score only what follows the <think>...</think> trace")
    p.add_argument("--no-guards", action="store_true", help="the bare eval metric (no length / answer-spam guards)")
    p.add_argument("--chat", action="store_true", help="completions come from chat prompts (code: fenced blocks)")
    p.set_defaults(func=run)


def run(args):
    from evalkit.rl.server import RewardServer

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    srv = RewardServer(tasks, host=args.host, port=args.port, max_concurrency=args.max_concurrency,
                       max_queue=args.max_queue,
                       strip_think=args.strip_think, use_guards=not args.no_guards, chat=args.chat)
    for t, v in srv.verifiers.items():
        print(f"[{t}] verifier {v.version_hash}", file=sys.stderr)
    print(f"evalkit reward server on {srv.url} (tasks: {', '.join(tasks)})", file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
        for v in srv.verifiers.values():
            v.close()
    return 0
