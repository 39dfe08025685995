"""The leaderboard's sample view shows an agent's transcript as a conversation: the simulated user,
the agent, its tool calls and their results (AppTest, headless, on a real run record)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import evalkit  # noqa: E402
from dashboards import samples as dsamples, transcripts  # noqa: E402
from evalkit.records import load_run  # noqa: E402
from test_agent_loop import TASK, banker, scripted, scripted_user  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("conv")
    run = evalkit.evaluate(model=scripted(banker), user_model=scripted_user(), tasks=[TASK], output=str(out),
                           cache=False, task_args={TASK: {"simulated_user": "true"}})
    return Path(run.path)


def test_a_transcript_becomes_a_conversation_with_calls_and_results(record):
    frame = dsamples.samples_frame(load_run(record), TASK)
    conv = frame[frame["doc_id"] == "b1"].iloc[0]["conversations"][0]
    assert [m["role"] for m in conv] == ["system", "agent", "user", "agent", "tool", "agent", "user", "agent", "tool",
                                         "tool", "agent", "user"]
    assert conv[3]["calls"] == ["get_balance({})"] and conv[4]["text"] == 'get_balance → {"balance": 10}'
    assert conv[7]["calls"] == ['deposit({"amount": 5})', "get_balance({})"]
    assert frame.iloc[0]["response"].startswith("ended: user_stop · 4 agent turns · 3 tool calls · 3 simulated-user")
    assert transcripts.summary("not a transcript") is None


def test_the_sample_view_draws_the_conversation(monkeypatch, record):
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(record.parent))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.sidebar.radio(key="view").set_value("Task")
    at.run()
    at.selectbox(key="sample_doc").set_value("b1")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = [m.value for m in at.markdown]
    assert "**user**: Deposit 5, then tell me the balance." in said and "**agent**: Hi! How can I help you today?" in said
    assert 'deposit({"amount": 5})' in [c.value for c in at.code]
    assert len(at.get("chat_message")) == 11


def test_the_customers_own_tool_calls_are_shown_as_theirs():
    """τ²-bench telecom: the simulated user's phone calls and their results (``requestor: user``)."""
    t = {"turns": [], "stop_reason": "user_stop", "user_replies": [{"text": "ok"}], "messages": [
        {"role": "assistant", "content": "Please toggle airplane mode."},
        {"role": "user", "content": "", "requestor": "user",
         "tool_calls": [{"id": "u1", "name": "toggle_airplane_mode", "arguments": {}}]},
        {"role": "tool", "name": "toggle_airplane_mode", "content": "Airplane Mode is now OFF.", "requestor": "user"},
        {"role": "user", "content": "Done, it is off."}]}
    conv = transcripts.conversation(t)
    assert [m["role"] for m in conv] == ["agent", "user", "user's tool", "user"]
    assert conv[1]["calls"] == ["toggle_airplane_mode({})"]
    assert conv[2]["text"] == "toggle_airplane_mode → Airplane Mode is now OFF."
    assert transcripts.summary(t).endswith("1 simulated-user messages · 1 user tool calls")
