"""The TRL, verl and OpenRLHF adapters and the reward server agree with the verifier core on the same
1,000 completions, each called with its framework's own convention; threads and asyncio too."""
from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import re
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import shared
from evalkit.rl import shared_verifier, trl_reward
from evalkit.rl.export import iter_items, rows

REPO = Path(__file__).resolve().parents[2]


def _bump(text):
    m = list(re.finditer(r"-?\d+", text))[-1]
    return text[:m.start()] + str(int(m.group()) + 1) + text[m.end():]


@pytest.fixture(scope="module")
def cases():
    """1,000 (task, gold record JSON, prompt, completion): right, wrong and answer-less ones."""
    out = []
    for _, doc, rec in iter_items("gsm8k", str(shared("gsm8k")), limit=200):
        g, p = json.dumps(rec), doc.query
        ans = rec["answer"].split("####")[-1].strip()
        out += [("gsm8k", g, p, rec["answer"]), ("gsm8k", g, p, _bump(rec["answer"])),
                ("gsm8k", g, p, f"So the total is {ans}.00 dollars.")]
    for _, doc, rec in iter_items("math500", str(shared("math", "MATH-500", "test.jsonl")), limit=100):
        g, p = json.dumps(rec), doc.query
        out += [("math500", g, p, rec["solution"]), ("math500", g, p, "I think it is \\boxed{x+12345}."),
                ("math500", g, p, "no idea")]
    for task, doc, rec in iter_items("mbpp", str(shared("mbpp")), limit=50):
        g, p = json.dumps(rec), doc.query
        out += [("mbpp", g, p, rec["code"] + "\n[DONE]"), ("mbpp", g, p, "def nothing():\n    return 0\n")]
    assert len(out) == 1000
    return out


@pytest.fixture(scope="module")
def reference(cases):
    """The verifier core's rewards, per task in one batch."""
    out = [None] * len(cases)
    for task in ("gsm8k", "math500", "mbpp"):
        idx = [i for i, c in enumerate(cases) if c[0] == task]
        for i, r in zip(idx, shared_verifier(task).rewards([cases[i][1] for i in idx], [cases[i][3] for i in idx])):
            out[i] = r
    assert 0 < sum(out) < 1000 and None not in out
    return out


def test_trl_convention(cases, reference):
    """GRPOTrainer._calculate_rewards: prompts=, completions=, completion_ids=, every dataset column as a
    list, trainer_state, log_extra, log_metric; conversational completions are message lists."""
    logged, metrics = {}, {}
    for task in ("gsm8k", "math500", "mbpp"):
        idx = [i for i, c in enumerate(cases) if c[0] == task]
        fn = trl_reward(task)
        assert fn.__name__ == f"evalkit_{task}"
        kwargs = dict(prompts=[cases[i][2] for i in idx], completion_ids=[[1, 2]] * len(idx),
                      gold=[cases[i][1] for i in idx], doc_id=[str(i) for i in idx], task=[task] * len(idx),
                      trainer_state=None, log_extra=lambda k, v: logged.__setitem__(k, v),
                      log_metric=lambda k, v: metrics.__setitem__(k, v))
        got = fn(completions=[cases[i][3] for i in idx], **kwargs)
        assert got == [reference[i] for i in idx]
        conv = fn(completions=[[{"role": "assistant", "content": cases[i][3]}] for i in idx], **kwargs)
        assert conv == got
        afn = trl_reward(task, asynchronous=True)
        # TRL's own test of whether a reward function is async
        is_async_callable = pytest.importorskip("trl.trainer.utils").is_async_callable
        assert is_async_callable(afn) and not is_async_callable(fn)
        assert asyncio.run(afn(completions=[cases[i][3] for i in idx], **kwargs)) == got
        assert logged[f"evalkit_{task}_verifier"][0] == fn.verifier.version_hash
    assert metrics["evalkit_mbpp/unusable_gold"] == 0.0


def _verl_loader():
    """verl's own loader (verl/utils/import_utils.py, load_extern_object) when verl is importable or
    unpacked on sys.path; it imports only the standard library, so we load that file by path (verl's
    package __init__ needs torch, ray and tensordict, which do not install here)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / "utils" / "import_utils.py"
    mod_spec = importlib.util.spec_from_file_location("_verl_import_utils", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod.load_extern_object


def test_verl_convention(cases, reference):
    load = _verl_loader()
    if load is not None:  # reward.custom_reward_function.path=pkg://evalkit.rl.verl, name=compute_score
        compute_score = load(module_path="pkg://evalkit.rl.verl", object_name="compute_score")
        batch = load(module_path="pkg://evalkit.rl.verl", object_name="compute_score_batch")
    else:
        mod = importlib.import_module("evalkit.rl.verl")
        compute_score, batch = mod.compute_score, mod.compute_score_batch
    got = []
    for task, gold, _, text in cases:  # NaiveRewardManager: one call per item, extra_info grown by verl
        extra = {"index": 0, "evalkit": {"chat": False, "seed": 1234}, "num_turns": None, "rollout_reward_scores": {}}
        res = compute_score(data_source=f"evalkit/{task}", solution_str=text, ground_truth=gold, extra_info=extra)
        assert set(res) == {"score", "usable", "reason", "extracted", "verifier_hash"}
        got.append(res["score"])
    assert got == reference
    res = batch(data_sources=[f"evalkit/{c[0]}" for c in cases], solution_strs=[c[3] for c in cases],
                ground_truths=[c[1] for c in cases], extra_infos=[{"rollout_reward_scores": {}} for _ in cases])
    assert [r["score"] for r in res] == reference
    with pytest.raises(ValueError, match="evalkit/<task>"):
        compute_score(data_source="openai/gsm8k", solution_str="#### 1", ground_truth="1")


def _openrlhf_load(path: str):
    """OpenRLHF's loading of --remote_rm_url FILE.py (openrlhf/utils/agent.py, SingleTurnAgentExecutor)."""
    spec = importlib.util.spec_from_file_location("reward_func", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reward_func


def _label(task, gold):
    return json.dumps({"task": task, "gold": json.loads(gold)})


def test_openrlhf_reward_func_file(cases, reference, monkeypatch):
    monkeypatch.setenv("EVALKIT_REWARD_TASKS", "gsm8k,math500,mbpp")
    import evalkit.rl.openrlhf_reward as m
    reward_func = _openrlhf_load(m.__file__)

    async def fetch():  # _fetch_rewards_via_func: batch size 1, asyncio.to_thread, gathered
        return await asyncio.gather(*[asyncio.to_thread(reward_func, [p + t + "<|im_end|>"], [p], [_label(k, g)])
                                      for k, g, p, t in cases])
    infos = asyncio.run(fetch())
    assert [i["rewards"][0] for i in infos] == reference
    assert all(set(i["extra_logs"]) == {"evalkit_usable", "evalkit_verifier_id"} for i in infos)


@pytest.fixture(scope="module")
def server():
    from evalkit.rl.server import serve_in_thread
    srv, _ = serve_in_thread(["gsm8k", "math500", "mbpp"], port=0, max_concurrency=2)
    yield srv
    srv.shutdown()
    srv.server_close()


def test_server_with_openrlhf_client(server, cases, reference):
    aiohttp = pytest.importorskip("aiohttp")
    assert server.server_address[0] == "127.0.0.1"

    async def post_all():  # _fetch_rewards_via_http: aiohttp POST {"query", "prompts", "labels"}
        timeout = aiohttp.ClientTimeout(total=180)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async def one(chunk):
                payload = {"query": [p + t + "<|im_end|>" for _, _, p, t in chunk], "prompts": [c[2] for c in chunk],
                           "labels": [_label(c[0], c[1]) for c in chunk]}
                async with session.post(server.url, json=payload) as response:
                    response.raise_for_status()
                    return await response.json()
            return await asyncio.gather(*[one(cases[i:i + 50]) for i in range(0, len(cases), 50)])
    got = [r for out in asyncio.run(post_all()) for r in out["rewards"]]
    assert got == reference


def _post(url, data: bytes, ctype="application/json"):
    req = urllib.request.Request(url, data=data, headers={"Content-Type": ctype}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_server_rejects_bad_bodies(server):
    url = server.url
    assert _post(url, b"not json")[0] == 400
    code, body = _post(url, json.dumps({"query": ["x"], "prompts": [""]}).encode())
    assert code == 400 and "labels" in body["error"]
    code, body = _post(url, json.dumps({"query": ["a", "b"], "prompts": ["a"], "labels": ["1", "2"]}).encode())
    assert code == 400 and "'prompts' has 1 items" in body["error"]
    code, body = _post(url, json.dumps({"query": [1], "prompts": [""], "labels": ["1"]}).encode())
    assert code == 400
    code, body = _post(url, json.dumps({"query": ["x"], "prompts": [""], "labels": ["72"]}).encode())
    assert code == 400 and "several tasks" in body["error"]
    code, body = _post(url, json.dumps({"query": ["x"], "prompts": [""],
                                        "labels": [json.dumps({"task": "mmlu", "gold": "A"})]}).encode())
    assert code == 400 and "mmlu" in body["error"]
    assert _post(url.replace("/get_reward", "/other"), b"{}")[0] == 404
    with urllib.request.urlopen(url.replace("/get_reward", "/info"), timeout=30) as r:
        info = json.loads(r.read())
    assert info["verifier"]["gsm8k"]["verifier_hash"].startswith("evk-")


def test_server_answers_malformed_requests_and_refuses_bad_settings(server, capsys):
    """#38: a negative Content-Length and JSON nested 200,000 deep got a traceback and no reply;
    --max-concurrency 0 and --port 99999 were accepted or a traceback."""
    import http.client
    host, port = server.server_address[:2]
    for headers, body in (({"Content-Length": "-5"}, b""), ({}, b"[" * 200_000 + b"]" * 200_000)):
        conn = http.client.HTTPConnection(host, port, timeout=30)
        conn.putrequest("POST", "/get_reward")
        for k, v in {"Content-Length": str(len(body)), **headers}.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        r = conn.getresponse()
        assert r.status == 400 and "error" in json.loads(r.read()), headers
        conn.close()
    with urllib.request.urlopen(server.url.replace("/get_reward", "/health"), timeout=30) as r:
        assert r.status == 200  # still serving
    from evalkit.cli import main
    for flag, value in (("--max-concurrency", "0"), ("--port", "99999")):
        assert main(["reward-server", "--tasks", "gsm8k", flag, value]) == 2
        err = capsys.readouterr().err
        assert f"{flag} {value}: must be" in err and "Traceback" not in err


def test_prompt_is_stripped_from_query(server):
    prompt = "Question: 1+1?\nAnswer: #### 2\n\nQuestion: 2+3?\nAnswer:"  # a few-shot answer in the prompt
    label = _label("gsm8k", json.dumps({"question": "2+3?", "answer": "#### 5"}))
    for completion, want in ((" 5 #### 5", 1.0), (" #### 2", 0.0), (" I don't know", 0.0)):
        code, body = _post(server.url, json.dumps({"query": [prompt + completion + "<|im_end|>"],
                                                   "prompts": [prompt], "labels": [label]}).encode())
        assert code == 200 and body["rewards"] == [want], body
    code, body = _post(server.url, json.dumps({"query": ["Question: other\nAnswer: #### 5"], "prompts": [prompt],
                                               "labels": [label]}).encode())
    assert body["rewards"] == [0.0] and body["reasons"] == ["prompt not found in query"]


def test_threads_and_asyncio_agree(cases, reference):
    sub = [(i, c) for i, c in enumerate(cases) if c[0] != "mbpp"]

    def one(item):
        i, (task, gold, _, text) = item
        return shared_verifier(task).verify(gold, text).reward
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, sub)) == [reference[i] for i, _ in sub]

    async def main():
        return await asyncio.gather(*[shared_verifier(c[0]).averify_batch([c[1]], [c[3]]) for _, c in sub])
    assert [v[0].reward for v in asyncio.run(main())] == [reference[i] for i, _ in sub]


def test_export_prompts_match_the_evaluation(tmp_path):
    from evalkit.taskapi.task import RunContext
    for task_name, data, chat in (("gsm8k", shared("gsm8k"), False), ("math500", shared("math", "MATH-500",
                                                                                          "test.jsonl"), True)):
        got = rows(task_name, "trl", data_path=str(data), limit=3, chat=chat)
        items = list(iter_items(task_name, str(data), limit=3))
        ctx = RunContext(apply_chat_template=chat)
        for row, (task, doc, rec) in zip(got, items):
            req = task.requests(doc, ctx)[0]  # what the runner sends the model
            if chat:
                assert [(m["role"], m["content"]) for m in row["prompt"]] == list(req.messages)
            else:
                assert row["prompt"] == req.prompt and row["prompt"].count("Question:") == 6
            right = rec.get("solution") or rec["answer"]
            assert shared_verifier(task_name, chat=chat).verify(row["gold"], right).reward == 1.0
    pd = pytest.importorskip("pandas")
    from evalkit.cli import main
    assert main(["export-rl", "--task", "gsm8k", "--format", "verl", "--output", str(tmp_path),
                 "--data", str(shared("gsm8k")), "--limit", "4"]) == 0
    df = pd.read_parquet(tmp_path / "test.parquet")
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    from evalkit.rl.verl import compute_score
    for _, r in df.iterrows():
        gold = json.loads(r["reward_model"]["ground_truth"])
        res = compute_score(r["data_source"], gold["answer"], r["reward_model"]["ground_truth"], dict(r["extra_info"]))
        assert res["score"] == 1.0
    assert json.loads((tmp_path / "manifest.json").read_text())["verifier_hash"].startswith("evk-")


@pytest.mark.parametrize("extra, needle", [(["--limit", "0"], "--limit 0: must be a number of rows >= 1"),
                                           (["--limit", "-1"], "--limit -1: must be"),
                                           (["--data", "EMPTY"], "has no rows to export")])
def test_export_never_writes_an_empty_training_file(tmp_path, capsys, extra, needle):
    """#38: --limit 0 / -1 or an empty data file wrote empty training files with exit 0."""
    from evalkit.cli import main
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "test.jsonl").write_text("")
    extra = [str(empty) if x == "EMPTY" else x for x in extra]
    data = [] if "--data" in extra else ["--data", str(shared("gsm8k"))]
    out = tmp_path / "out"
    assert main(["export-rl", "--task", "gsm8k", "--format", "trl", "--output", str(out), *data, *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and not out.exists()


def test_server_under_bounded_load_loses_no_request(server):
    """#38: 32 clients x 50 requests lost 4-7 to connection resets (listen backlog 5). 64 clients x 25
    requests, each a new connection: every one answered, rewards identical to the offline verifier."""
    label = _label("gsm8k", json.dumps({"question": "2+3?", "answer": "#### 5"}))
    bodies = [json.dumps({"query": [f"Answer: #### {k % 7}"], "prompts": [""], "labels": [label]}).encode()
              for k in range(64 * 25)]

    def one(body):
        for _ in range(20):  # a full queue says 503 with Retry-After: the client retries
            code, out = _post(server.url, body)
            if code != 503:
                return code, out["rewards"][0]
        return 503, None

    with ThreadPoolExecutor(64) as pool:
        got = list(pool.map(one, bodies))
    assert [c for c, _ in got if c != 200] == []
    assert [r for _, r in got] == [1.0 if k % 7 == 5 else 0.0 for k in range(len(bodies))]
