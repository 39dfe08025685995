"""gpt-oss harmony transcripts: evalkit's text parser against OpenAI's ``openai_harmony`` parser on the
same token sequences (the format spec's examples, openai/harmony docs/format.md), and the split into
trace and answer that scoring sees: only the ``final`` channel is the answer, no final channel is an
unfinished answer."""
from __future__ import annotations

import pytest

from evalkit.scoring import harmony
from evalkit.scoring.thinking import ThinkingConfig, separate

# docs/format.md, "StreamableParser": the token ids of the 2 + 2 example output
SPEC_TOKENS = [200005, 35644, 200008, 1844, 31064, 25, 392, 4827, 382, 220, 17, 659, 220, 17, 16842, 12295, 81645,
               13, 51441, 6052, 13, 200007, 200006, 173781, 200005, 17196, 200008, 17, 659, 220, 17, 314, 220, 19,
               13, 200002]
# docs/format.md: "Receiving tool calls", "Preambles" and a recipient in the role part of the header
SPEC_TEXTS = [
    ('<|channel|>analysis<|message|>Need to use function get_weather.<|end|><|start|>assistant<|channel|>commentary '
    'to=functions.get_weather <|constrain|>json<|message|>{"location":"San Francisco"}<|call|>'),
    ("<|channel|>analysis<|message|>{long chain of thought}<|end|><|start|>assistant<|channel|>commentary<|message|>"
    "**Action plan**:\n1. Generate an HTML file\n2. Generate a JavaScript for the Node.js server\n3. Start the server"
    "\n---\nWill start executing the plan step by step<|end|><|start|>assistant<|channel|>commentary "
    'to=functions.generate_file<|constrain|>json<|message|>{"template": "basic_html", "path": "index.html"}<|call|>'),
    ("<|channel|>analysis<|message|>User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>"),
    "<|start|>assistant to=functions.lookup<|channel|>commentary json<|message|>{\"q\": 1}<|call|>",
]


@pytest.fixture(scope="module")
def encoding():
    oh = pytest.importorskip("openai_harmony")
    try:
        return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    except Exception as e:  # the o200k vocabulary is fetched on first use: offline without a cached copy
        pytest.skip(f"openai_harmony fetches its o200k vocabulary over the network on first use: {e}")


def _package_messages(encoding, ids):
    from openai_harmony import Role
    out = []
    role = None if ids[0] == 200006 else Role.ASSISTANT  # a completion that opens its own <|start|>
    for m in encoding.parse_messages_from_completion_tokens(ids, role):
        d = m.to_dict()
        out.append((d["role"].value if hasattr(d["role"], "value") else d["role"], d.get("channel"),
                    "".join(c["text"] for c in d["content"]), d.get("recipient"), d.get("content_type")))
    return out


def _ours(text):
    return [(m.role, m.channel, m.content, m.recipient, m.content_type) for m in harmony.parse(text)]


def test_parser_matches_openai_harmony_on_the_spec_sequences(encoding):
    text = encoding.decode(SPEC_TOKENS)
    assert text.startswith("<|channel|>analysis<|message|>User asks")
    assert _ours(text) == _package_messages(encoding, SPEC_TOKENS)
    assert [m.channel for m in harmony.parse(text)] == ["analysis", "final"]
    for t in SPEC_TEXTS:
        ids = encoding.encode(t, allowed_special="all")
        ids = ids[:-1] if ids[-1] in (200002, 200012) else ids  # "Do not pass in the stop token"
        assert _ours(t) == _package_messages(encoding, ids), t


def test_cut_transcript_matches_the_streaming_parser(encoding):
    from openai_harmony import Role, StreamableParser
    for cut in (10, 20, 30):  # mid analysis, and inside the final message
        ids = SPEC_TOKENS[:cut]
        stream = StreamableParser(encoding, Role.ASSISTANT)
        for i in ids:
            stream.process(i)
        ours = harmony.parse(encoding.decode(ids))
        assert ours[-1].ended is False
        assert (ours[-1].channel, ours[-1].content) == (stream.current_channel, stream.current_content)
        assert [m.content for m in ours[:-1]] == ["".join(c.text for c in m.content) for m in stream.messages]


def test_only_the_final_channel_is_scored():
    text = SPEC_TEXTS[2].replace("2 + 2 = 4.", "The answer is #### 4").replace("Provide answer.", "maybe #### 5")
    s = separate(text)
    assert (s.status, s.source, s.answer) == ("closed", "harmony", "The answer is #### 4")
    assert "#### 5" in s.trace and "#### 4" not in s.trace
    stripped = separate("analysisUser asks. maybe #### 5assistantfinalThe answer is #### 4")  # special tokens dropped
    assert (stripped.status, stripped.answer) == ("closed", "The answer is #### 4")
    assert stripped.trace == "User asks. maybe #### 5"


def test_missing_final_channel_is_unfinished():
    for text, finish, note in [(SPEC_TEXTS[2][:60], "length", "cut by max_tokens while thinking"),
                               (SPEC_TEXTS[0], "stop", "the model stopped to call a tool"),
                               (SPEC_TEXTS[1], "stop", "the model stopped while thinking")]:
        s = separate(text, finish_reason=finish)
        assert (s.status, s.answer) == ("unclosed", ""), text
        assert note in s.notes and "no final channel" in s.notes
    tools = separate(SPEC_TEXTS[0])
    assert "tool call to functions.get_weather in the commentary channel" in tools.notes
    assert '{"location":"San Francisco"}' in tools.trace  # the commentary (tool call) stays in the trace
    cut_final = separate(SPEC_TEXTS[2][:-len("4.<|return|>")], finish_reason="length")
    assert cut_final.status == "closed" and "final channel cut by max_tokens" in cut_final.notes


def test_plain_text_and_other_markers_untouched():
    assert separate("The answer is analysis of #### 4").status == "none"
    assert separate("<think>x</think>#### 4").source == "markers"
    cfg = ThinkingConfig.from_options({"think_start": "<|channel|>analysis<|message|>", "think_end": "<|end|>"})
    assert separate(SPEC_TEXTS[2], cfg).source == "markers"  # explicit markers win over the harmony reading
