"""Reward models: the reward request kind, the transformers reference and vLLM's offline pooling.

The fixture (SmolLM2-135M + yes/no score head, ``tests/_reward_session.py``) has NOISE for scores:
these tests prove the plumbing (engine, cache, resume, CLI) and the numerics (vLLM == transformers
to 1e-4, independent of batch size, padding side and order), not reward-model quality.
"""
from __future__ import annotations

from functools import partial

import json
import math

import pytest

from conftest import evalkit_cli

from evalkit.taskapi.requests import RewardRequest, response_from_json, response_to_json

PAIRS = [("What is 2+3?", "2 + 3 = 5"), ("What is 2+3?", "2 + 3 = 7"),
         ("Name a colour.", "Blue."), ("Write a haiku about rain.", "Soft rain on the roof,\nthe garden drinks slowly,\n"
                                       "grey clouds drift away."),
         ("What is the capital of France?", "The capital of France is Paris, a city on the Seine.")]


def _requests():
    reqs = [RewardRequest.pair(p, r) for p, r in PAIRS]
    reqs.append(RewardRequest(messages=(("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello!"))))
    reqs.append(RewardRequest(text="plain text scored as given"))
    return reqs


@pytest.fixture(scope="session")
def rm_dir():
    pytest.importorskip("transformers")
    from _reward_session import fixture_dir
    return fixture_dir()


@pytest.fixture(scope="session")
def hf_rm(rm_dir):
    from evalkit.backends.reward_hf import HFRewardBackend
    return HFRewardBackend(rm_dir)


@pytest.fixture(scope="session")
def hf_rewards(hf_rm):
    return hf_rm.reward(_requests())


def test_request_key_and_json_round_trip():
    a, b = RewardRequest.pair("q", "r"), RewardRequest.pair("q", "r")
    assert a.key() == b.key() and a.key() != RewardRequest.pair("q", "r", steps=True).key()
    assert a.key() != RewardRequest.pair("q", "r2").key()
    for v in (-1.25, [0.5, -2.0]):
        assert response_from_json("reward", json.loads(json.dumps(response_to_json("reward", v)))) == v
    with pytest.raises(ValueError, match="exactly one"):
        RewardRequest()


def test_hf_matches_transformers_reference(rm_dir, hf_rm, hf_rewards):
    """Differential: our per-position head at the last token == AutoModelForSequenceClassification's
    own pooled logits on the unpadded input."""
    import torch
    from transformers import AutoModelForSequenceClassification
    ref = AutoModelForSequenceClassification.from_pretrained(rm_dir, dtype=torch.float32).eval()
    for req, got in zip(_requests(), hf_rewards):
        ids, _ = hf_rm.request_ids(req)
        with torch.inference_mode():
            want = ref(torch.tensor([ids])).logits[0, 0].item()
        assert abs(got - want) < 1e-4
    assert len(set(round(x, 4) for x in hf_rewards)) == len(hf_rewards)  # distinct inputs, distinct scores


@pytest.mark.parametrize("batch_size,padding_side", [(1, "right"), (3, "left"), (7, "left"), (7, "right")])
def test_hf_unchanged_by_batch_padding_and_order(rm_dir, hf_rewards, batch_size, padding_side):
    from evalkit.backends.reward_hf import HFRewardBackend
    b = HFRewardBackend(rm_dir, batch_size=batch_size, padding_side=padding_side)
    b._model = None
    reqs = _requests()
    got = b.reward(reqs[::-1])[::-1]
    assert max(abs(x - y) for x, y in zip(got, hf_rewards)) < 1e-4


def test_sigmoid_activation_and_identity(rm_dir, hf_rm, hf_rewards):
    from evalkit.backends.reward_hf import HFRewardBackend
    sig = HFRewardBackend(rm_dir, activation="sigmoid")
    sig._model = hf_rm.model
    got = sig.reward(_requests()[:2])
    # the raw rewards of the same batch: fp32 logits of a 2-row batch differ from the 7-row batch's
    # (hf_rewards) by up to ~1e-5 with padding, more than this check's tolerance for the activation
    raw = hf_rm.reward(_requests()[:2])
    assert all(abs(g - 1 / (1 + math.exp(-r))) < 1e-6 for g, r in zip(got, raw))
    assert sig.identity_hash() != hf_rm.identity_hash()  # raw and squashed rewards never share a cache entry
    assert sig.pooling_info()["activation"] == "sigmoid" and hf_rm.pooling_info()["activation"] == "none"
    with pytest.raises(ValueError, match="activation"):
        HFRewardBackend(rm_dir, activation="tanh")


def test_per_step_rewards_and_step_tag_in_prompt_refused(rm_dir):
    from evalkit.backends.reward_base import RewardInputError
    from evalkit.backends.reward_hf import HFRewardBackend
    b = HFRewardBackend(rm_dir, step_tag="<file_sep>")
    [steps] = b.reward([RewardRequest.pair("Add 2 and 3.", "2 + 3 = 5.\n\nSo the answer is 5.", steps=True)])
    assert len(steps) == 2 and all(math.isfinite(x) for x in steps)
    with pytest.raises(RewardInputError, match="occurs in the user message"):
        b.reward([RewardRequest.pair("Use <file_sep> here", "a\n\nb", steps=True)])
    with pytest.raises(RewardInputError, match="single-token tag"):
        HFRewardBackend(rm_dir).reward([RewardRequest.pair("q", "a\n\nb", steps=True)])


def test_engine_dedupes_caches_by_identity_and_resumes(tmp_path, rm_dir, hf_rm, hf_rewards):
    from evalkit.backends.reward_hf import HFRewardBackend
    from evalkit.run.cache import ResponseCache
    from evalkit.run.engine import Engine
    cache = ResponseCache(tmp_path / "c.sqlite")
    reqs = _requests()
    first = Engine(hf_rm, cache, progress=False)
    out = first.run(reqs[:3] + reqs[:3])  # duplicates asked once
    assert first.stats["unique"] == 3 and first.stats["computed"] == 3
    again = Engine(hf_rm, cache, progress=False)
    out2 = again.run(reqs)
    assert again.stats["cached"] == 3 and again.stats["computed"] == len(reqs) - 3
    assert [out2[r.key()] for r in reqs[:3]] == [out[r.key()] for r in reqs[:3]]
    assert max(abs(out2[r.key()] - h) for r, h in zip(reqs, hf_rewards)) < 1e-4
    sig = HFRewardBackend(rm_dir, activation="sigmoid")
    sig._model = hf_rm.model
    other = Engine(sig, cache, progress=False)
    other.run(reqs[:2])
    assert other.stats["cached"] == 0  # another identity, another cache entry


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_offline_agrees_with_transformers(hf_rewards, vllm_reward):
    v = vllm_reward
    reqs = _requests()
    got = v.reward(reqs)
    assert max(abs(a - b) for a, b in zip(got, hf_rewards)) < 1e-4
    shuffled = [3, 0, 6, 2, 5, 1, 4]
    got2 = v.reward([reqs[i] for i in shuffled])
    assert max(abs(got2[j] - hf_rewards[i]) for j, i in enumerate(shuffled)) < 1e-4
    singles = [v.reward([r])[0] for r in reqs[:3]]  # batch of one
    assert max(abs(a - b) for a, b in zip(singles, hf_rewards)) < 1e-4
    assert v.pooling_info()["activation"] == "none" and v.pooling_info()["vllm_pooling_task"] == "classify"
    from evalkit.backends.reward_vllm import VLLMRewardBackend
    sig = VLLMRewardBackend(v.path, dtype="float32", activation="sigmoid")
    sig._llm = v.llm  # the same engine; activation is a per-request PoolingParams
    try:
        s = sig.reward(reqs[:2])
    finally:
        sig._llm = None
    assert all(abs(a - 1 / (1 + math.exp(-b))) < 1e-4 for a, b in zip(s, hf_rewards[:2]))
    with pytest.raises(ValueError, match="pooling=step"):
        v.reward([RewardRequest.pair("q", "a", steps=True)])


# ---- evalkit reward -----------------------------------------------------------------------------
_cli = partial(evalkit_cli, timeout=None)


def test_reward_cli_scores_pairs_and_conversations(tmp_path, rm_dir, hf_rewards):
    src = tmp_path / "pairs.jsonl"
    rows = [{"id": i, "prompt": p, "response": r} for i, (p, r) in enumerate(PAIRS)]
    rows.append({"id": "chat", "messages": [{"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": "Hi"},
                                            {"role": "assistant", "content": "Hello!"}]})
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "scored.jsonl"
    args = ["reward", "--model", f"hf:{rm_dir}", "--input", str(src), "--output", str(out),
            "--cache-dir", str(tmp_path / "cache"), "--json"]
    r = _cli(*args)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert s["engine"]["computed"] == len(rows) and s["pooling"]["activation"] == "none"
    scored = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in scored] == [x["id"] for x in rows]
    assert max(abs(x["reward"] - h) for x, h in zip(scored, hf_rewards)) < 1e-4
    r2 = _cli(*args)  # a rerun is answered from the cache
    assert r2.returncode == 0 and json.loads(r2.stdout.strip().splitlines()[-1])["engine"].get("computed", 0) == 0


@pytest.mark.parametrize("line,needle", [
    ('{"prompt": "q"}', "field 'response': missing"),
    ('{"prompt": "q", "response": 3}', "field 'response': expected text"),
    ('{"messages": [{"role": "user", "content": "hi"}]}', "field 'messages[0]': the last message must be"),
    ('{"messages": [{"role": "bot", "content": "hi"}]}', "field 'messages[0]': expected {role"),
    ('{"prompt": "q", "response": ', "invalid JSON"),
])
def test_reward_cli_bad_rows_name_file_line_field(tmp_path, line, needle):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"prompt": "ok", "response": "fine"}\n\n' + line + "\n")
    r = _cli("reward", "--model", "hf:/nonexistent/rm", "--input", str(src), "--output", str(tmp_path / "o.jsonl"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{src}:3:" in r.stderr and needle in r.stderr, r.stderr


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_step_pooling_agrees_with_transformers_per_step(rm_dir):
    """Process rewards: vLLM's STEP pooler at the step tag == the transformers head at the same positions."""
    pytest.importorskip("vllm")
    import os
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from evalkit.backends.reward_base import RewardInputError
    from evalkit.backends.reward_hf import HFRewardBackend
    from evalkit.backends.reward_vllm import VLLMRewardBackend
    reqs = [RewardRequest.pair("Add 2 and 3.", "2 + 3 = 5.\n\nSo the answer is 5.", steps=True),
            RewardRequest.pair("What is 6 times 7?", "6 * 7 = 42.\n\nCheck: 42 / 7 = 6.\n\nThe answer is 42.", steps=True)]
    want = HFRewardBackend(rm_dir, step_tag="<file_sep>", padding_side="left", batch_size=2).reward(reqs)
    v = VLLMRewardBackend(rm_dir, dtype="float32", pooling="step", step_tag="<file_sep>")
    try:
        got = v.reward(reqs[::-1])[::-1]
        assert [len(x) for x in got] == [2, 3]
        assert max(abs(a - b) for g, w in zip(got, want) for a, b in zip(g, w)) < 1e-4
        assert v.pooling_info()["vllm_pooling_task"] == "token_classify"
        with pytest.raises(RewardInputError, match="occurs in the user message"):
            v.reward([RewardRequest.pair("a <file_sep> in the prompt", "x\n\ny", steps=True)])
        with pytest.raises(RewardInputError, match="pooling=classify"):
            v.reward([RewardRequest.pair("q", "a")])
    finally:
        v.close()


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_loads_a_tiny_random_qwen2_reward_model(tmp_path_factory):
    """Loader coverage for vLLM's Qwen2ForRewardModel (per-token rewards, ``pooling=token``): the last
    token's reward and the step-tag rewards equal transformers' Qwen2Model + the same head. Random
    weights: numerics only."""
    pytest.importorskip("vllm")
    import os
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from evalkit.backends.reward_vllm import VLLMRewardBackend
    from _reward_session import tiny_qwen2_reference, tiny_qwen2_rm
    path = tiny_qwen2_rm(tmp_path_factory.mktemp("qwen2rm") / "tiny-qwen2-rm")
    v = VLLMRewardBackend(path, dtype="float32", pooling="token", step_tag="<file_sep>", max_model_len=1024)
    try:
        seq = [RewardRequest.pair(p, r) for p, r in PAIRS[:3]]
        step = RewardRequest.pair("Add 2 and 3.", "2 + 3 = 5.\n\nThe answer is 5.", steps=True)
        got = v.reward(seq + [step])
        ref = tiny_qwen2_reference(path, [v.request_ids(r)[0] for r in seq + [step]])
        for g, r in zip(got[:3], ref[:3]):
            assert abs(g - r[-1].item()) < 1e-4
        tags = v.request_ids(step)[1]
        assert len(got[3]) == 2 and max(abs(g - ref[3][t].item()) for g, t in zip(got[3], tags)) < 1e-4
        assert v.pooling_info()["vllm_pooling_task"] == "token_classify"
    finally:
        v.close()


def test_backends_do_not_share_cache_entries(rm_dir):
    from evalkit.backends.reward_hf import HFRewardBackend
    from evalkit.backends.reward_vllm import VLLMRewardBackend
    pytest.importorskip("vllm")
    a, b = HFRewardBackend(rm_dir), VLLMRewardBackend(rm_dir, dtype="float32")  # no engine starts here
    assert a.identity_hash() != b.identity_hash() and b.identity()["backend"] == "vllm-reward"


def test_an_input_over_the_context_keeps_its_end_and_is_counted(rm_dir, hf_rm):
    """A long completion (a reasoning trace) never fails the run: the start of the conversation is
    cut, the reward read at the end is that of the kept tokens, and the cut is counted."""
    from evalkit.backends.reward_hf import HFRewardBackend
    req = RewardRequest.pair("Question: " + "tell me more " * 40, "The answer is 42.")
    ids, _ = hf_rm.request_ids(req)
    short = HFRewardBackend(rm_dir, max_length=len(ids) - 30)
    short._model = hf_rm._model if hasattr(hf_rm, "_model") else None
    [cut] = short.reward([req])
    assert short.stats["reward_inputs_cut"] == 1
    [want] = hf_rm._rewards([ids[-(len(ids) - 30):]], [None])
    assert cut == pytest.approx(want, abs=1e-5)
    with pytest.raises(Exception, match="never cut"):
        HFRewardBackend(rm_dir, max_length=8, step_tag="<file_sep>").reward([RewardRequest.pair("q", "a\n\nb", steps=True)])


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_loads_a_tiny_random_qwen2_process_reward_model(tmp_path_factory):
    """Qwen2ForProcessRewardModel (two labels, STEP pooling at the step tag) through the offline
    backend, against an independent reference: transformers' Qwen2Model with the same weights and
    the head as vLLM's qwen2_rm.py defines it, read at the step-tag positions. Raw logits of either
    label, with activation=softmax the probability over the two labels (a step is good, as
    Qwen2.5-Math-PRM is read) and with activation=sigmoid the label's own sigmoid, as on hf (vLLM's
    activation would be softmax here: evalkit reads raw logits). Random weights: numerics only."""
    pytest.importorskip("vllm")
    import os
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import torch
    from evalkit.backends.reward_vllm import VLLMRewardBackend
    from _reward_session import tiny_qwen2_reference, tiny_qwen2_rm
    path = tiny_qwen2_rm(tmp_path_factory.mktemp("qwen2prm") / "tiny-qwen2-prm", "Qwen2ForProcessRewardModel")
    reqs = [RewardRequest.pair("Add 2 and 3.", "2 + 3 = 5.\n\nSo the answer is 5.", steps=True),
            RewardRequest.pair("What is 6 times 7?", "6 * 7 = 42.\n\nCheck: 42 / 7 = 6.\n\nThe answer is 42.",
                               steps=True)]
    v = VLLMRewardBackend(path, dtype="float32", pooling="step", step_tag="<file_sep>", max_model_len=1024, label=1)
    try:
        inputs = [v.request_ids(r) for r in reqs]
        ref = tiny_qwen2_reference(path, [ids for ids, _ in inputs], all_labels=True)
        want = [ref[i][tags] for i, (_, tags) in enumerate(inputs)]  # (steps, 2) logits at the tags
        views = {"raw1": v}
        for name, kw in (("raw0", {"label": 0}), ("prob1", {"label": 1, "activation": "softmax"}),
                         ("sig1", {"label": 1, "activation": "sigmoid"})):
            views[name] = VLLMRewardBackend(path, dtype="float32", pooling="step", step_tag="<file_sep>",
                                            max_model_len=1024, **kw)
            views[name]._llm = v.llm  # one engine: label and activation are read per request
        expect = {"raw1": [w[:, 1] for w in want], "raw0": [w[:, 0] for w in want],
                  "prob1": [torch.softmax(w, -1)[:, 1] for w in want], "sig1": [torch.sigmoid(w[:, 1]) for w in want]}
        for name, b in views.items():
            got = b.reward(reqs[::-1])[::-1]
            assert [len(g) for g in got] == [2, 3], name
            assert max(abs(x - y.item()) for g, e in zip(got, expect[name]) for x, y in zip(g, e)) < 1e-4, name
        assert all(0 < x < 1 for g in views["prob1"].reward(reqs) for x in g)
        assert v.pooling_info()["pooling"].startswith("STEP")
    finally:
        for name in ("raw0", "prob1", "sig1"):
            if name in locals().get("views", {}):
                views[name]._llm = None
        v.close()


def test_server_backend_errors_are_clear_without_a_server(tmp_path):
    """vllm-server: a closed port fails after its retries with a message naming the route and what to
    do (no traceback); bad options and secrets as options are refused before any call."""
    import socket
    from evalkit.backends.reward_catalog import make_reward_backend
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    src = tmp_path / "pairs.jsonl"
    src.write_text('{"prompt": "q", "response": "a"}\n')
    r = _cli("reward", "--model", f"vllm-server:http://127.0.0.1:{port}", "--model-args", "max_retries=1,timeout=2",
             "--input", str(src), "--output", str(tmp_path / "o.jsonl"), "--no-cache")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "/v1/models failed after 2 attempts" in r.stderr and "Is the server running" in r.stderr, r.stderr
    with pytest.raises(ValueError, match="expected the server's URL"):
        make_reward_backend("vllm-server:/some/folder")
    with pytest.raises(ValueError, match="api='embed'"):
        make_reward_backend(f"vllm-server:http://127.0.0.1:{port}", {"api": "embed"})
    with pytest.raises(ValueError, match="takes pooling=classify"):
        make_reward_backend(f"vllm-server:http://127.0.0.1:{port}", {"api": "score", "pooling": "step"})
    with pytest.raises(ValueError, match="never pass a secret"):
        make_reward_backend(f"vllm-server:http://127.0.0.1:{port}", {"api_key": "sk-x"})
    b = make_reward_backend(f"vllm-server:http://user:pw@127.0.0.1:{port}")
    assert "pw" not in b.record_spec and "pw" not in b.shown_url


def test_error_messages_never_show_a_server_password():
    from evalkit.backends.reward_catalog import make_reward_backend, split_reward_spec
    spec = "vllm-server:http://u:SECRETKEY@127.0.0.1:9"
    for call in (lambda: split_reward_spec("vllm-serverx:http://u:SECRETKEY@h"),
                 lambda: make_reward_backend(spec, {"api_key": "x"}),
                 lambda: make_reward_backend(spec, {"nope": "1"}),
                 lambda: make_reward_backend("http://u:SECRETKEY@127.0.0.1:9")):
        with pytest.raises(ValueError) as e:
            call()
        assert "SECRETKEY" not in str(e.value) and "REDACTED" in str(e.value), str(e.value)


def test_impossible_settings_fail_at_construction(rm_dir):
    """step_agg with a backend that only gives sequence rewards fails when the backend is made (before
    any model loads or generation runs), as does a negative label."""
    from evalkit.backends.reward_catalog import make_reward_backend
    with pytest.raises(ValueError, match="per-step rewards need api=pooling"):
        make_reward_backend("vllm-server:http://127.0.0.1:9", {"step_agg": "min"})
    with pytest.raises(ValueError, match="label index >= 0"):
        make_reward_backend(f"hf:{rm_dir}", {"label": "-1"})
    with pytest.raises(ValueError, match="1 label"):
        make_reward_backend(f"hf:{rm_dir}", {"label": "1"})
    assert make_reward_backend(f"hf:{rm_dir}", {"step_agg": "last"}).per_step()


def test_impossible_settings_fail_before_the_run_loads_a_model(tmp_path, rm_dir):
    """The reward settings are checked before the model under test is even looked for (a missing
    model folder would otherwise be the error), in one line."""
    pytest.importorskip("vllm")
    r = _cli("run", "--model", f"hf:{tmp_path / 'no-such-model'}", "--tasks", "gsm8k", "--limit", "1", "--no-output",
             "--reward-model", f"vllm:{rm_dir}", "--reward-args", "step_agg=min", "--cache-dir", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "per-step rewards need a vllm reward engine with pooling=step" in r.stderr, r.stderr
    assert "no-such-model" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_activations_agree_with_vllms_pooler():
    """activate() is vLLM 0.32's PoolerClassify (sigmoid for one label, softmax for more) where the
    names agree; sigmoid of one label on a multi-label head is that label's sigmoid."""
    torch = pytest.importorskip("torch")
    from evalkit.backends.reward_base import RewardInputError, activate
    from evalkit.scoring.step_agg import check_step_agg
    logits = [[0.3], [-2.0, 1.5], [0.1, -0.4, 2.2]]
    try:
        from vllm.model_executor.layers.pooler.activations import PoolerClassify
        vllm_act = PoolerClassify(num_labels=None)
    except ImportError:
        vllm_act = None
    for row in logits:
        t = torch.tensor([row])
        want = torch.sigmoid(t)[0] if len(row) == 1 else torch.softmax(t, -1)[0]
        if vllm_act is not None:
            assert torch.allclose(vllm_act(t)[0], want)
        for label in range(len(row)):
            name = "sigmoid" if len(row) == 1 else "softmax"
            assert activate(row, label, name) == pytest.approx(want[label].item(), abs=1e-6)
            assert activate(row, label, "sigmoid") == pytest.approx(torch.sigmoid(t)[0, label].item(), abs=1e-6)
            assert activate(row, label, "none") == row[label]
    with pytest.raises(RewardInputError, match="two or more labels"):
        activate([0.3], 0, "softmax")
    assert activate([-800.0], 0, "sigmoid") == 0.0 and activate([800.0], 0, "sigmoid") == 1.0
    assert check_step_agg("product", "softmax") == "product"
    with pytest.raises(ValueError, match="activation=softmax"):
        check_step_agg("product", "none")


def test_hf_softmax_over_labels(tmp_path, rm_dir, hf_rewards):
    """activation=softmax on a two-label head is softmax(logits)[label] (vLLM's reading of
    Qwen2.5-Math-PRM), against transformers' own pooled logits; on a one-label head it is refused
    before the model loads. The second label's row is zero, so softmax(label 0) = sigmoid(raw reward)."""
    import os
    import torch
    from evalkit.backends.reward_hf import HFRewardBackend
    with pytest.raises(ValueError, match="two or more labels"):
        HFRewardBackend(rm_dir, activation="softmax")
    two = tmp_path / "two-labels"
    two.mkdir()
    for f in os.listdir(rm_dir):
        if f != "config.json":
            os.symlink(os.path.join(rm_dir, f), two / f)
    cfg = json.loads(open(os.path.join(rm_dir, "config.json")).read())
    (two / "config.json").write_text(json.dumps({**cfg, "id2label": {"0": "good", "1": "bad"},
                                                 "label2id": {"good": 0, "bad": 1}}))
    from transformers import AutoModelForSequenceClassification
    m2 = AutoModelForSequenceClassification.from_pretrained(rm_dir, dtype=torch.float32).eval()
    head = m2.score  # the fixture's body, a two-label head: [the fixture's row, zeros]
    assert head.bias is None
    m2.score = torch.nn.Linear(head.in_features, 2, bias=False)
    with torch.no_grad():
        m2.score.weight.copy_(torch.cat([head.weight, torch.zeros_like(head.weight)]))
    m2.config.num_labels = 2
    reqs = _requests()[:3]
    for label in (0, 1):
        b = HFRewardBackend(str(two), activation="softmax", label=label)
        b._model = m2
        got = b.reward(reqs)
        for req, g, raw in zip(reqs, got, hf_rewards):
            ids, _ = b.request_ids(req)
            with torch.inference_mode():
                want = torch.softmax(m2(torch.tensor([ids])).logits[0], -1)[label].item()
            assert g == pytest.approx(want, abs=1e-5)
            assert g == pytest.approx(1 / (1 + math.exp(-raw)) if label == 0 else 1 / (1 + math.exp(raw)), abs=1e-5)


def test_max_length_is_in_the_identity_only_when_set(rm_dir):
    from evalkit.backends.reward_hf import HFRewardBackend
    full, cut = HFRewardBackend(rm_dir), HFRewardBackend(rm_dir, max_length=64)
    assert "max_length" not in full.identity() and cut.identity()["max_length"] == 64
    assert full.identity_hash() != cut.identity_hash()
    assert full.identity_hash() == HFRewardBackend(rm_dir, max_length=None).identity_hash()


def test_server_replies_missing_fields_are_reply_errors():
    """A /score result without a score, a /rerank result with a null relevance_score or a /classify
    result without probs is a ReplyError naming the route and the field, not a KeyError/TypeError."""
    from evalkit.backends import reward_server_routes as routes
    cases = [("score", {"data": [{"index": 0}]}, "/score.*'score'"),
             ("rerank", {"results": [{"index": 0, "relevance_score": None}]}, "/rerank.*'relevance_score'"),
             ("classify", {"data": [{"index": 0}]}, "/classify: label 0"),
             ("classify", {"data": ["x"]}, "/classify: label 0"),
             ("classify", {"data": [{"index": 0, "probs": [None]}]}, "/classify: label 0")]
    for api, reply, needle in cases:
        with pytest.raises(routes.ReplyError, match=needle):
            routes.read(api, reply, 1, 0)
    with pytest.raises(routes.ReplyError, match="token rows"):
        routes.pooled_reward([[0.1]], "token", 0, [3], 1)
    assert routes.read("score", {"data": [{"index": 0, "score": 0.0}]}, 1, 0, "sigmoid") == [[0.5]]
    assert routes.read("classify", {"data": [{"index": 0, "probs": [0.0, 0.0]}]}, 1, 1, "softmax") == [[0.5]]
    assert routes.body("classify", "m", [[1, 2]])["use_activation"] is False  # raw logits; evalkit activates


def test_server_backend_reuses_one_pool_and_its_connections(monkeypatch):
    """reward() calls share one thread pool whose threads keep their keep-alive connections; close()
    shuts the pool and closes them (a later call opens new ones). A loopback HTTP server counts the
    TCP connections it accepts. max_length, when set, is part of the identity."""
    import http.server
    import threading
    from evalkit.backends.reward_catalog import make_reward_backend
    accepted = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            accepted.append(self.client_address)

        def log_message(self, *a):
            pass

        def _reply(self, obj):
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._reply({"data": [{"id": "m", "root": "/nonexistent", "max_model_len": 512}]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._reply({"data": [{"index": i, "probs": [float(len(t))]} for i, t in enumerate(body["input"])]})

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv("VLLM_API_KEY", raising=False)
        b = make_reward_backend(f"vllm-server:http://127.0.0.1:{srv.server_address[1]}",
                                {"tokenizer": "server", "batch_size": "1", "concurrency": "2"})
        reqs = [RewardRequest(text="x" * k) for k in range(1, 7)]
        for _ in range(3):
            assert b.reward(reqs) == [float(k) for k in range(1, 7)]
        pool, before = b._pool, len(accepted)
        assert pool is not None and before <= 3  # /v1/models + one per pool thread, over 18 calls
        b.close()
        assert b._pool is None and pool._shutdown and not b.http._conns
        assert b.reward(reqs[:2]) == [1.0, 2.0] and len(accepted) > before
        b.close()
        cut = make_reward_backend(f"vllm-server:http://127.0.0.1:{srv.server_address[1]}",
                                  {"tokenizer": "server", "max_length": "100"})
        assert "max_length" not in b.identity() and cut.identity()["max_length"] == 100
        assert cut.identity_hash() != b.identity_hash()
    finally:
        srv.shutdown()
        srv.server_close()
