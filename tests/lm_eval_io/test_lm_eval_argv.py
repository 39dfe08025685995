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
