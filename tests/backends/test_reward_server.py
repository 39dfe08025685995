"""Reward models behind a real vLLM pooling server (``vllm serve FIXTURE --runner pooling`` on
loopback, started once for this module): ``/classify``, ``/pooling``, ``/score`` and ``/rerank``
agree with the transformers reference (and the offline vLLM engine) to 1e-4 whatever the batch size
and order, answers are cached by the served model's identity, and the API key never reaches a
record or the cache.

The fixture (SmolLM2-135M with a yes/no head) scores NOISE: this proves plumbing and numerics,
not reward-model quality.
"""
from __future__ import annotations

from functools import partial

import json
import math
from pathlib import Path

import pytest

from conftest import evalkit_cli

pytest.importorskip("vllm")

from evalkit.taskapi.requests import RewardRequest  # noqa: E402
from tests.backends.test_openai_backend import KEY, KEY_ENV, VLLMServer  # noqa: E402
from tests.backends.test_reward_models import PAIRS, _requests  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.server]
REPO = Path(__file__).resolve().parents[2]


class PoolingServer(VLLMServer):
    def command(self) -> list[str]:
        return super().command() + ["--runner", "pooling"]


@pytest.fixture(scope="module")
def rm_dir():
    from _reward_session import fixture_dir
    return fixture_dir()


@pytest.fixture(scope="module")
def server(rm_dir, tmp_path_factory):
    srv = PoolingServer(rm_dir, tmp_path_factory.mktemp("reward_serve") / "server.log")
    srv.start()
    yield srv
    srv.kill()


@pytest.fixture(scope="module")
def url(server) -> str:
    return f"http://127.0.0.1:{server.port}"


@pytest.fixture(scope="module")
def hf(rm_dir):
    from evalkit.backends.reward_hf import HFRewardBackend
    return HFRewardBackend(rm_dir)


@pytest.fixture(scope="module")
def hf_rewards(hf):
    return hf.reward(_requests())


@pytest.fixture(autouse=True)
def key_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def served(url, **kw):
    from evalkit.backends.reward_catalog import make_reward_backend
    return make_reward_backend(f"vllm-server:{url}", {"api_key_env": KEY_ENV, **kw})


def test_classify_and_pooling_agree_with_transformers_and_offline(url, hf_rewards, rm_dir, vllm_reward):
    reqs = _requests()
    b = served(url)
    assert b.pooling_info()["rendering"].startswith("token ids made here")  # the served root is local
    got = b.reward(reqs)
    assert max(abs(a - h) for a, h in zip(got, hf_rewards)) < 1e-4
    order = [4, 6, 1, 0, 5, 3, 2]
    for kw in ({"batch_size": 1}, {"batch_size": 3, "concurrency": 2}, {"tokenizer": "server"},
               {"api": "pooling"}, {"api": "pooling", "tokenizer": "server", "concurrency": 1}):
        other = served(url, **kw)
        shuffled = other.reward([reqs[i] for i in order])
        assert max(abs(shuffled[j] - hf_rewards[i]) for j, i in enumerate(order)) < 1e-4, kw
    calls = b.stats["http_calls"]
    assert calls == 2  # GET /v1/models once, then one POST for all 7 (batch_size 32)
    sig = served(url, activation="sigmoid").reward(reqs[:2])
    assert all(abs(s - 1 / (1 + math.exp(-h))) < 1e-4 for s, h in zip(sig, hf_rewards))
    offline = vllm_reward.reward(reqs)  # the session's offline engine on the same requests
    assert max(abs(a - o) for a, o in zip(got, offline)) < 1e-4


def test_score_and_rerank_join_the_two_texts(url, hf):
    """/score and /rerank on a decoder classifier score text_1 + text_2 as one text (vLLM's "LLM as
    reranker", no chat template): the transformers reference on the joined text."""
    pairs = [RewardRequest.pair(p, r) for p, r in PAIRS] + [RewardRequest.pair(PAIRS[0][0], "It is 5.")]
    want = hf.reward([RewardRequest(text=p + r) for (_, p), (_, r) in (q.messages for q in pairs)])
    for api in ("score", "rerank"):
        for bs in (1, 4):
            b = served(url, api=api, batch_size=bs)
            order = list(range(len(pairs)))[::-1]
            got = b.reward([pairs[i] for i in order])
            assert max(abs(got[j] - want[i]) for j, i in enumerate(order)) < 1e-4, (api, bs)
    from evalkit.backends.reward_base import RewardInputError
    with pytest.raises(RewardInputError, match="use api=classify"):
        served(url, api="score").reward([RewardRequest(text="raw")])
    with pytest.raises(RewardInputError, match="api=pooling with pooling=step"):
        served(url).reward([RewardRequest.pair("q", "a\n\nb", steps=True)])


def test_identity_names_the_served_model_api_activation(url, rm_dir):
    base = served(url)
    ident = base.identity()
    assert ident["served"]["root"] == rm_dir and ident["served"]["id"] == "tiny" and ident["api"] == "classify"
    assert ident["weights"]  # the local folder's weight hashes
    hashes = {served(url, **kw).identity_hash() for kw in
              ({}, {"activation": "sigmoid"}, {"api": "score"}, {"api": "pooling"}, {"revision": "abc123"},
               {"tokenizer": "server"})}
    assert len(hashes) == 6
    assert served(f"{url}/v1").identity_hash() == base.identity_hash()  # the address is not the model
    info = base.pooling_info()
    assert info["route"] == "/classify" and info["activation"] == "none" and info["served_model"] == "tiny"
    with pytest.raises(ValueError, match="serves \\['tiny'\\], not model_name='other'"):
        served(url, model_name="other").identity()
    with pytest.raises(ValueError, match="never pass a secret"):
        served(url, api_key=KEY)


_cli = partial(evalkit_cli, timeout=300)


def test_reward_cli_through_the_server_cached_and_secret_free(url, tmp_path, hf_rewards):
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps({"id": i, "prompt": p, "response": r}) + "\n" for i, (p, r) in enumerate(PAIRS)))
    out, cache = tmp_path / "scored.jsonl", tmp_path / "cache"
    args = ["reward", "--model", f"vllm-server:{url}", "--model-args", f"api_key_env={KEY_ENV}", "--input", str(src),
            "--output", str(out), "--cache-dir", str(cache), "--json"]
    r = _cli(*args)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert s["engine"]["computed"] == len(PAIRS) and s["pooling"]["api"] == "vllm server POST /classify"
    scored = [json.loads(x) for x in out.read_text().splitlines()]
    assert max(abs(x["reward"] - h) for x, h in zip(scored, hf_rewards)) < 1e-4
    r2 = _cli(*args)
    assert r2.returncode == 0, r2.stderr
    assert json.loads(r2.stdout.strip().splitlines()[-1])["engine"].get("computed", 0) == 0  # all from the cache
    for f in [out, *cache.rglob("*")]:
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f
    assert KEY not in r.stdout + r.stderr + r2.stdout + r2.stderr
    bad = _cli(*args[:4], "api_key_env=EVALKIT_NO_SUCH_KEY", *args[5:-1], "--no-cache")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "401" in bad.stderr, bad.stderr



def test_mt_bench_judge_through_the_server(url, hf, shared_data, tmp_path, capsys):
    """``--judge reward:vllm-server:URL``: the turn-1 rating is the reward the reference gives."""
    from evalkit.cli import main
    mt = shared_data / "mt_bench"
    args = ["mt-bench", "--answers", str(mt / "model_answer" / "vicuna-13b-v1.3.jsonl"), "--mode", "single",
            "--judge", f"reward:vllm-server:{url}", "--judge-args", f"api_key_env={KEY_ENV}", "--data", str(mt),
            "--questions", "81", "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0, capsys.readouterr().err
    run_dir = next((tmp_path / "out").iterdir())
    judge = json.loads((run_dir / "run.json").read_text())["tasks"]["mt_bench"]["extra"]["judge"]
    assert judge["kind"] == "reward_model" and judge["pooling"]["route"] == "/classify"
    q = next(json.loads(x) for x in (mt / "question.jsonl").read_text().splitlines() if json.loads(x)["question_id"] == 81)
    a = next(json.loads(x) for x in (mt / "model_answer" / "vicuna-13b-v1.3.jsonl").read_text().splitlines()
             if json.loads(x)["question_id"] == 81)["choices"][0]["turns"][0]
    [want] = hf.reward([RewardRequest(messages=(("user", q["turns"][0]), ("assistant", a)))])
    rows = [json.loads(x) for x in (run_dir / "samples_mt_bench.jsonl").read_text().splitlines()]
    turn1 = next(j for j in rows[0]["extra"]["judgments"] if j["turn"] == 1)
    assert abs(turn1["value"] - want) < 1e-4

# ---- per-step rewards: a second server with vLLM's STEP pooler ------------------------------------
STEP_TAG = "<file_sep>"  # a single token of SmolLM2's tokenizer that ordinary text never contains


class StepServer(PoolingServer):
    step_tag_id = None

    def command(self) -> list[str]:
        cfg = {"task": "token_classify", "tok_pooling_type": "STEP", "step_tag_id": self.step_tag_id}
        return super().command() + ["--pooler-config", json.dumps(cfg)]


@pytest.fixture(scope="module")
def step_url(rm_dir, hf, tmp_path_factory):
    srv = StepServer(rm_dir, tmp_path_factory.mktemp("step_serve") / "server.log")
    srv.step_tag_id = hf.tokenizer.convert_tokens_to_ids(STEP_TAG)
    srv.start()
    yield f"http://127.0.0.1:{srv.port}"
    srv.kill()


STEP_REQS = [RewardRequest.pair("Add 2 and 3.", "2 + 3 = 5.\n\nSo the answer is 5.", steps=True),
             RewardRequest.pair("What is 6 times 7?", "6 * 7 = 42.\n\nCheck: 42 / 7 = 6.\n\nThe answer is 42.", steps=True),
             RewardRequest.pair("Say hi.", "Hi!", steps=True)]


def test_step_rewards_through_pooling_agree_with_transformers(step_url, rm_dir):
    from evalkit.backends.reward_base import RewardInputError
    from evalkit.backends.reward_hf import HFRewardBackend
    want = HFRewardBackend(rm_dir, step_tag=STEP_TAG).reward(STEP_REQS)
    assert [len(w) for w in want] == [2, 3, 1]
    for kw in ({}, {"tokenizer": "server"}, {"batch_size": 1}):
        b = served(step_url, api="pooling", pooling="step", step_tag=STEP_TAG, **kw)
        got = b.reward(STEP_REQS[::-1])[::-1]
        assert [len(g) for g in got] == [2, 3, 1], kw
        assert max(abs(x - y) for g, w in zip(got, want) for x, y in zip(g, w)) < 1e-4, kw
    assert b.pooling_info()["pooling"].startswith("STEP") and b.pooling_info()["route"] == "/pooling"
    with pytest.raises(RewardInputError, match="occurs in the user message"):
        b.reward([RewardRequest.pair(f"a {STEP_TAG} in the prompt", "x\n\ny", steps=True)])
    with pytest.raises(RewardInputError, match="pooling=classify"):
        b.reward([RewardRequest.pair("q", "a")])


def test_best_of_n_with_step_rewards_end_to_end(step_url, tiny_model_dir, shared_data, tmp_path, rm_dir):
    """GSM8K, 2 questions x 3 samples from the bundled model, per-step rewards from the STEP server:
    step_agg=min (the default), then step_agg=last answered from the cache (the cache holds the
    step rewards, not their aggregate)."""
    from evalkit.backends.reward_hf import HFRewardBackend
    from evalkit.tasks.gsm8k import GSM8K
    common = ["run", "--model", f"hf:{tiny_model_dir}", "--tasks", "gsm8k", "--limit", "2", "--num-fewshot", "1",
              "--data", f"gsm8k={shared_data / 'gsm8k'}", "--gen-kwargs", "n=3,temperature=0.8,max_tokens=24",
              "--reward-model", f"vllm-server:{step_url}", "--cache-dir", str(tmp_path / "cache")]
    # GSM8K solutions are one step per line: step_separator=\n (the default is a blank line)
    rargs = f"api=pooling,pooling=step,step_tag={STEP_TAG},step_separator=\\n,api_key_env={KEY_ENV}"
    runs = {}
    for agg in ("min", "last"):
        r = _cli(*common, "--reward-args", rargs + ("" if agg == "min" else f",step_agg={agg}"),
                 "--output", str(tmp_path / agg))
        assert r.returncode == 0, r.stderr
        path = next((tmp_path / agg).glob("*/run.json"))
        rows = [json.loads(x) for x in (path.parent / "samples_gsm8k.jsonl").read_text().splitlines()]
        runs[agg] = (json.loads(path.read_text()), rows)
    rec, rows = runs["min"]
    rm = rec["reward_model"]
    assert rm["step_agg"] == "min" and rm["per_step"] and rm["pooling"]["pooling"].startswith("STEP")
    assert rm["pooling"]["route"] == "/pooling" and rm["pooling"]["step_tag"] == STEP_TAG and KEY not in json.dumps(rec)
    assert rm["engine"]["computed"] == rm["engine"]["unique"] > 0 and rec["tasks"]["gsm8k"]["best_of_n"]["step_agg"] == "min"
    for row in rows:
        bon = row["best_of_n"]
        assert len(bon["step_rewards"]) == 3 and bon["rewards"] == [min(s) for s in bon["step_rewards"]]
        assert [len(s) for s in bon["step_rewards"]] == [len([x for x in t.split("\n") if x.strip()]) or 1
                                                         for t in row["responses"]]
    doc = GSM8K(data_path=str(shared_data / "gsm8k")).eval_docs()[0]
    want = HFRewardBackend(rm_dir, step_tag=STEP_TAG, step_separator="\n").reward(
        [RewardRequest.pair(doc.query, t, steps=True) for t in rows[0]["responses"]])
    assert max(abs(x - y) for w, g in zip(want, rows[0]["best_of_n"]["step_rewards"]) for x, y in zip(w, g)) < 1e-4
    rec2, rows2 = runs["last"]
    assert rec2["reward_model"]["step_agg"] == "last" and rec2["reward_model"]["engine"].get("computed", 0) == 0
    assert rec2["reward_model"]["identity_hash"] == rm["identity_hash"]
    for row in rows2:
        bon = row["best_of_n"]
        assert bon["rewards"] == [s[-1] for s in bon["step_rewards"]]
    assert "rm_best_of@3" in rec2["tasks"]["gsm8k"]["metrics"] and "rm_auroc" in rec2["tasks"]["gsm8k"]["metrics"]
