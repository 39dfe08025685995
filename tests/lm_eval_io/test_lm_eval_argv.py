"""lm-eval command lines: lm-eval's README lines for a local HF model (program name replaced) run
or stop with a message naming the difference; spellings, fractional limits, --write_out (no model
load) and lm-eval's generation keys."""
from __future__ import annotations

import json

import pytest

from evalkit.cli import main
from evalkit.lm_eval_io.argv import translate
from evalkit.lm_eval_io.gen_kwargs import to_evalkit_gen
from evalkit.taskapi.requests import GenParams, GenerateRequest

KNOWN = {"--num-fewshot", "--apply-chat-template", "--include-path", "--tasks", "--limit", "--output",
         "--fewshot-as-multiturn", "--write-out", "--system-prompt", "--gen-kwargs"}


def test_translate_model_flags_and_spellings():
    argv = ["--model", "hf", "--model_args", "pretrained=/m,revision=step100000,dtype=float", "--tasks", "a,b",
            "--device", "cpu", "--batch_size", "8", "--num_fewshot", "5", "--output_path", "out", "--log_samples",
            "--limit=0.1", "--apply_chat_template", "--fewshot_as_multiturn", "--write_out"]
    out = translate(argv, KNOWN)
    assert out[:4] == ["--model", "hf:/m", "--model-args", "revision=step100000,dtype=float32,device=cpu,batch_size=8"]
    assert ["--num-fewshot", "5"] == out[out.index("--num-fewshot"):out.index("--num-fewshot") + 2]
    assert out[out.index("--output") + 1] == "out" and out[out.index("--lm-eval-output") + 1] == "out"
    assert "--log_samples" not in out and ["--limit", "0.1"] == out[out.index("--limit"):out.index("--limit") + 2]
    assert {"--apply-chat-template", "--fewshot-as-multiturn", "--write-out"} <= set(out)
    # evalkit's own spelling passes through; lm-eval's batch flag joins its model args
    assert translate(["--model", "hf:/m", "--model_args", "dtype=float32", "-b", "4"], KNOWN) == \
        ["--model", "hf:/m", "--model-args", "dtype=float32,batch_size=4"]
    assert translate(["--model", "local-completions", "--model_args",
                      "model=m,base_url=http://127.0.0.1:8000/v1/completions,num_concurrent=2"], KNOWN)[:2] == \
        ["--model", "openai:m"]


@pytest.mark.parametrize("argv, words", [
    (["--model", "hf", "--model_args", "pretrained=/m,parallelize=True", "--tasks", "x"], ["parallelize", "vllm"]),
    (["--model", "hf", "--model_args", "pretrained=/m,peft=/a", "--tasks", "x"], ["peft", "--lora"]),
    (["--model", "sglang", "--model_args", "pretrained=/m", "--tasks", "x"], ["sglang", "no evalkit backend"]),
    (["--model", "hf", "--model_args", "dtype=float", "--tasks", "x"], ["pretrained="]),
    (["--model", "hf:/m", "--tasks", "x", "--predict_only"], ["--predict_only", "evalkit score"]),
    (["--model", "hf:/m", "--tasks", "x", "--wandb_args", "project=p"], ["evalkit log"]),
    (["--model", "hf:/m", "--tasks", "x", "--gen_kwargs", "num_beams=4"], ["num_beams", "beam"]),
    (["--model", "hf:/m", "--tasks", "x", "--apply_chat_template", "chatml"], ["named templates"]),
])
def test_differences_stop_with_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(w in err for w in words), err


def test_gen_kwargs_keys():
    gen, notes = to_evalkit_gen("until=Question:,max_gen_toks=32,do_sample=False,temperature=0.8,top_k=0")
    assert gen == {"stop": ["Question:"], "max_tokens": 32, "temperature": 0.0, "top_k": 0}
    assert any("do_sample=false" in n for n in notes)
    gen, _ = to_evalkit_gen({"do_sample": True, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.2})
    assert gen == {"temperature": 1.0, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.2}
    # new knobs change the cache key only when set, and greedy ignores the sampling-only ones
    plain = GenerateRequest("p", params=GenParams())
    assert GenerateRequest("p", params=GenParams(top_k=50)).key() == plain.key()
    assert GenerateRequest("p", params=GenParams(repetition_penalty=1.3)).key() != plain.key()
    assert GenerateRequest("p", params=GenParams(temperature=1.0, top_k=50)).key() != \
        GenerateRequest("p", params=GenParams(temperature=1.0)).key()


def test_write_out_prints_prompts_and_never_loads_the_model(shared_data, capsys):
    # the model path does not exist: loading it would fail, so success shows nothing was loaded
    argv = ["--model", "hf", "--model_args", "pretrained=/nonexistent/model", "--tasks", "mmlu_abstract_algebra,gsm8k",
            "--data", f"mmlu_abstract_algebra={shared_data / 'mmlu'}", "--data", f"gsm8k={shared_data / 'gsm8k'}",
            "--num_fewshot", "1", "--limit", "0.02", "--write_out", "--device", "cpu", "--batch_size", "8"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("===== mmlu_abstract_algebra doc") == 2  # ceil(100 * 0.02) docs, at most 3 shown
    assert out.count("===== gsm8k doc") == 3 and "Question:" in out and "stopped before loading the model" in out
    assert "docs planned" in out and "29 docs planned" in out  # 2 + ceil(1319 * 0.02) = 2 + 27


def test_fewshot_as_multiturn_messages(shared_data):
    from evalkit.taskapi import registry
    from evalkit.taskapi.items import RunContext
    t = registry.get_task_class("gsm8k")(data_path=str(shared_data / "gsm8k"))
    doc = t.eval_docs()[0]
    multi = t.messages(doc, RunContext(num_fewshot=2, apply_chat_template=True))
    assert [m["role"] for m in multi] == ["user", "assistant", "user", "assistant", "user"]
    assert multi[-1]["content"] == t.doc_to_text(doc)
    single = t.messages(doc, RunContext(num_fewshot=2, apply_chat_template=True, fewshot_as_multiturn=False))
    assert [m["role"] for m in single] == ["user"]
    assert main(["--model", "hf:/m", "--tasks", "gsm8k", "--fewshot_as_multiturn"]) == 2  # needs a chat template


def test_fewshot_flag_reaches_the_record():
    from evalkit.run.config import RunConfig
    cfg = RunConfig(tasks=["gsm8k"], apply_chat_template=True, fewshot_as_multiturn=False)
    assert RunConfig.from_record(json.loads(json.dumps(cfg.to_record()))).fewshot_as_multiturn is False
    assert "fewshot_as_multiturn" not in RunConfig(tasks=["gsm8k"]).to_record()


def test_import_metrics_only_and_bad_files(tmp_path, capsys):
    res = {"results": {"arc_easy": {"alias": "arc_easy", "acc,none": 0.5, "acc_stderr,none": 0.1,
                                    "acc_norm,none": 0.25, "acc_norm_stderr,none": "N/A"}},
           "versions": {"arc_easy": 1.0}, "n-shot": {"arc_easy": 0}, "higher_is_better": {"arc_easy": {"acc": True}},
           "config": {"model": "hf", "model_args": "pretrained=/m,dtype=float32", "limit": None}}
    (tmp_path / "lm").mkdir()
    (tmp_path / "lm" / "results_2024-01-01T00-00-00.json").write_text(json.dumps(res))
    assert main(["import", "lm-eval", str(tmp_path / "lm"), "--output", str(tmp_path / "r")]) == 0
    assert "--log_samples" in capsys.readouterr().err  # no samples: said, metrics kept
    from evalkit.records import load_run
    rec = load_run(next((tmp_path / "r").iterdir()))
    assert rec.metrics("arc_easy")["acc"]["value"] == 0.5 and rec.metrics("arc_easy")["acc"]["stderr"] == 0.1
    assert rec.metrics("arc_easy")["acc_norm"]["stderr"] is None and rec.model["args"]["pretrained"] == "/m"
    (tmp_path / "bad.json").write_text('{"x": 1}')
    for path, words in ((tmp_path / "bad.json", "not an lm-eval results file"),
                        (tmp_path / "missing", "no such file"), (tmp_path / "r", "no lm-eval results_")):
        assert main(["import", "lm-eval", str(path), "--output", str(tmp_path / "r2")]) == 2
        assert words in capsys.readouterr().err
    assert main(["import", "lm-eval", str(tmp_path / "lm"), "--task-map", "hellaswag=gsm8k"]) == 2
    assert "--task-map names lm-eval task(s) not in" in capsys.readouterr().err


# ---- ten command lines from lm-eval's README and docs (model -> the bundled smollm2-135m, tasks ->
# evalkit's on local data): each parses into the evalkit run it means (checked without loading a model:
# the translated flags, the run config, and the backend's own argument list) or refuses with one line.
U = "http://127.0.0.1:8000/v1"
DOCS_LINES = [
    # README "Hugging Face transformers"
    ("--model hf --model_args pretrained=smollm2-135m --tasks gsm8k --device cuda:0 --batch_size 8",
     "hf:smollm2-135m", {"batch_size": 8}, {}),
    ("--model hf --model_args pretrained=smollm2-135m,revision=step100000,dtype=float --tasks gsm8k "
     "--device cuda:0 --batch_size 8", "hf:smollm2-135m",
     {"revision": "step100000", "dtype": "float32", "batch_size": 8}, {}),
    ("--model hf --model_args pretrained=smollm2-135m --tasks gsm8k --device cuda:0 --batch_size auto:4",
     "hf:smollm2-135m", {"batch_size": "auto"}, {}),
    # README "vLLM" (batch_size auto is vLLM's own scheduling: dropped, never a model arg vLLM rejects)
    ("--model vllm --model_args pretrained=smollm2-135m,tensor_parallel_size=1,dtype=auto,"
     "gpu_memory_utilization=0.8,data_parallel_size=1 --tasks gsm8k --batch_size auto", "vllm:smollm2-135m",
     {"tensor_parallel_size": 1, "dtype": "auto", "gpu_memory_utilization": 0.8, "data_parallel_size": 1}, {}),
    # README "Model APIs and inference servers": lm-eval's base_url is the endpoint; evalkit's the API root
    (f"--model local-completions --tasks gsm8k --model_args model=smollm2-135m,base_url={U}/completions,"
     "num_concurrent=1,max_retries=3,tokenized_requests=False,batch_size=16", "openai:smollm2-135m",
     {"base_url": U, "concurrency": 1, "max_retries": 3, "batch_size": 16}, {}),
    (f"--model local-chat-completions --tasks gsm8k --model_args model=smollm2-135m,base_url={U}/chat/completions "
     "--apply_chat_template", "openai:smollm2-135m", {"base_url": U}, {"apply_chat_template": True}),
    # docs/interface.md: --num_fewshot, --gen_kwargs, --limit, --log_samples, --output_path
    ("--model hf --model_args pretrained=smollm2-135m --tasks gsm8k --num_fewshot 5 --limit 10 --gen_kwargs "
     "do_sample=True,temperature=0.7,top_p=0.9,max_gen_toks=64 --log_samples --output_path OUT",
     "hf:smollm2-135m", {}, {"num_fewshot": 5, "limit": 10,
                             "gen_overrides": {"temperature": 0.7, "top_p": 0.9, "max_tokens": 64}}),
    # refusals: README multi-GPU, "Visualizing Results" (W&B), "Saving & Caching" (Hub)
    ("--model hf --model_args pretrained=smollm2-135m,parallelize=True --tasks gsm8k --batch_size 16",
     None, ["parallelize", "--model vllm"], None),
    ("--model hf --model_args pretrained=smollm2-135m,trust_remote_code=True --tasks gsm8k --device cuda:0 "
     "--batch_size 8 --output_path OUT --limit 10 --wandb_args project=lm-eval-harness-integration --log_samples",
     None, ["--wandb_args", "--log-to wandb", "`evalkit log RUN_DIR --to wandb`"], None),
    ("--model hf --model_args pretrained=smollm2-135m --tasks gsm8k --log_samples --output_path OUT "
     "--hf_hub_log_args hub_results_org=EleutherAI,hub_repo_name=lm-eval-results,push_results_to_hub=True,"
     "public_repo=False", None, ["--hf_hub_log_args", "`evalkit log RUN_DIR --to hub --repo OWNER/NAME`"], None),
]


@pytest.mark.parametrize("line, model, margs, config", DOCS_LINES, ids=[f"line{i}" for i in range(1, 11)])
def test_lm_eval_docs_command_lines(line, model, margs, config, shared_data, tmp_path, capsys):
    from evalkit.backends import DATA_PARALLEL_ARGS, _check_args, backend_class, parse_model_args, split_spec
    from evalkit.cli import build_parser, lm_eval_argv
    from evalkit.cli.run import build_config
    from evalkit.run import validation
    argv = line.replace("OUT", str(tmp_path / "out")).split() + ["--data", f"gsm8k={shared_data / 'gsm8k'}"]
    if model is None:                                       # a refusal: exactly one line, exit 2
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("evalkit run: error: "), err
        assert all(w in err for w in margs), err
        if "evalkit log" in err:                            # the command it names exists in that form
            log_usage = build_parser()._subparsers._group_actions[0].choices["log"].format_usage()
            assert "--to {mlflow,wandb,hub}" in log_usage and "RUN_DIR" in log_usage
        return
    args = build_parser().parse_args(lm_eval_argv(build_parser(), argv))
    assert args.model == model
    got = parse_model_args(args.model_args or "")
    got.pop("device", None)                                 # cuda:0, or cpu on a machine without CUDA
    assert got == margs
    prefix = split_spec(args.model)[0]
    validation.check_model_args(prefix, got)                # what the backend itself accepts, unloaded
    _check_args(backend_class(prefix), prefix, {k: v for k, v in got.items() if k not in DATA_PARALLEL_ARGS})
    cfg = build_config(args)
    assert cfg.tasks == ["gsm8k"] and cfg.data_paths == {"gsm8k": str(shared_data / "gsm8k")}
    for key, want in config.items():
        assert getattr(cfg, key) == want, key
    if "--output_path" in line:
        assert args.output == args.lm_eval_output == str(tmp_path / "out")
    assert "Traceback" not in capsys.readouterr().err


def test_vllm_engine_start_failure_is_one_line(monkeypatch, capsys):
    """An engine that cannot start (any exception vLLM raises) is one line and exit 2, not a traceback."""
    import types
    import evalkit.backends.vllm as vb
    fake = types.ModuleType("vllm")

    class LLM:
        def __init__(self, **kwargs):
            raise AssertionError("Engine core initialization failed. See root cause above.")
    fake.LLM = LLM
    monkeypatch.setitem(__import__("sys").modules, "vllm", fake)
    backend = vb.VLLMBackend.__new__(vb.VLLMBackend)
    backend._engine_owner, backend._llm, backend._on_cpu = None, None, True
    backend.engine_args = {"model": "/m"}
    with pytest.raises(ValueError) as e:
        backend.llm
    assert "the vLLM engine for /m could not start (AssertionError: Engine core initialization failed" in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("model_type, endpoint, chat", [("local-completions", "/completions", []),
                                                        ("local-chat-completions", "/chat/completions",
                                                         ["--apply_chat_template"])])
def test_lm_eval_base_url_endpoint_reaches_the_server_once(model_type, endpoint, chat, shared_data, capsys):
    """lm-eval's base_url names the endpoint; evalkit asks /v1/models and the endpoint, never twice
    appended (/v1/completions/models was a 404). A fake server: no model is loaded."""
    from tests._fault_server import MODEL, FaultServer
    with FaultServer() as srv:
        argv = ["--model", model_type, "--model_args", f"model={MODEL},base_url={srv.base_url}{endpoint},"
                f"num_concurrent=1,tokenized_requests=False", "--tasks", "gsm8k",
                "--data", f"gsm8k={shared_data / 'gsm8k'}", "--limit", "2", "--no-output", "--no-cache", *chat]
        assert main(argv) == 0, capsys.readouterr().err
        assert set(srv.paths) == {"/v1/models", f"/v1{endpoint}"}
