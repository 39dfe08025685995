"""Chunking options: exact chunk boundaries on hand-made texts for tokens (the real all-MiniLM-L6-v2
tokenizer's offsets) and structure (paragraphs, markdown, code), overlap, determinism, the chunk
spec reaching the embedding cache only through the chunk text, and the MBPP known-item task."""
import json

import pytest

from conftest import shared, evalkit_cli
from evalkit.records import load_run
from evalkit.retrieval.chunking import ChunkSpec, chunk_corpus, chunk_text, token_spans


def test_token_windows_exact_boundaries_and_overlap(minilm):
    spec = ChunkSpec.parse("tokens:4:1", default_tokenizer="all-minilm-l6-v2")
    text = "Hello, world!  This is a test of tokens."
    # MiniLM's WordPiece: hello , world ! this is a test of token ##s .  (13 tokens, no [CLS]/[SEP])
    assert chunk_text(text, spec) == ["Hello, world!", "!  This is a", "a test of token", "tokens."]  # original spacing kept
    spec2 = ChunkSpec.parse("tokens:5:2:" + str(minilm))  # a named tokenizer folder
    from evalkit.retrieval.chunking import load_tokenizer
    offs = load_tokenizer(str(minilm))(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    spans = token_spans(text, spec2)
    assert spans[0] == (offs[0][0], offs[4][1]) and len(spans) == 4  # windows start at tokens 0, 3, 6, 9
    for i, (a, b) in enumerate(spans):  # each window starts 3 tokens after the previous: 2 tokens overlap
        first = 3 * i
        assert a == offs[first][0] and b == offs[min(first + 5, len(offs)) - 1][1]
    assert chunk_text("short one", spec) == ["short one"] and chunk_text("", spec) == [""]
    assert ChunkSpec.parse("tokens:4", default_tokenizer="all-minilm-l6-v2").overlap == 0
    rec = spec.to_dict()
    assert rec["unit"] == "tokens" and rec["tokenizer"]["name"] == "all-minilm-l6-v2"
    assert len(rec["tokenizer"]["files"]["tokenizer.json"]) == 16


def test_structure_code_markdown_paragraphs_exact():
    code = ("import re\nR = 3\n\n# helper\n@dec\ndef f(x):\n    return x\n\n\nclass A:\n    def g(self):\n"
            "        pass\nprint(f(1))\nx = [\n1,\n]\n")
    assert chunk_text(code, ChunkSpec.parse("structure:6:code")) == [
        "import re\nR = 3", "# helper\n@dec\ndef f(x):", "return x",   # 7 words > 6: split at a line end
        "class A:\n    def g(self):\n        pass", "print(f(1))\nx = [\n1,\n]"]
    assert chunk_text(code, ChunkSpec.parse("structure:100:code")) == [code.strip()]  # all merged
    assert chunk_text(code, ChunkSpec.parse("structure:9")) == [  # auto: code; small pieces merged
        "import re\nR = 3", "# helper\n@dec\ndef f(x):\n    return x", "class A:\n    def g(self):\n        pass",
        "print(f(1))\nx = [\n1,\n]"]
    md = "# T\nintro words here\n\n## A\none two\n\nthree four five\n## B\nsix"
    assert chunk_text(md, ChunkSpec.parse("structure:6")) == ["# T\nintro words here", "## A\none two",
                                                               "three four five", "## B\nsix"]
    assert chunk_text(md, ChunkSpec.parse("structure:3:markdown")) == ["# T", "intro words here", "## A", "one two",
                                                                      "three four five", "## B\nsix"]
    paras = "p one.\r\n\r\np two is here\n  \n\np three"
    assert chunk_text(paras, ChunkSpec.parse("structure:4")) == ["p one.", "p two is here", "p three"]
    assert chunk_text(paras, ChunkSpec.parse("structure:6:paragraphs")) == ["p one.\r\n\r\np two is here", "p three"]
    assert chunk_text("a b c d e f g", ChunkSpec.parse("structure:3")) == ["a b c", "d e f", "g"]  # one long line
    for text in (code, md, paras):  # every chunk is a span of the original text, in order
        pos = 0
        for c in chunk_text(text, ChunkSpec.parse("structure:2")):
            pos = text.index(c, pos) + len(c)
    with pytest.raises(ValueError, match="mode must be one of"):
        ChunkSpec.parse("structure:10:latex")
    with pytest.raises(ValueError, match="do not overlap"):
        ChunkSpec(10, 2, "structure")
    with pytest.raises(ValueError, match="tokens:SIZE"):
        ChunkSpec.parse("sentences:4")
    with pytest.raises(ValueError, match="needs a tokenizer"):
        ChunkSpec.parse("tokens:4")


def test_chunking_is_deterministic_on_real_data(minilm):
    from evalkit.retrieval import chunking
    rows = [json.loads(line) for line in open(shared("xsum/test.jsonl"), encoding="utf-8")][:20]
    corpus = {str(r["id"]): r["document"] for r in rows}
    for spec in ("tokens:64:16", "structure:80", "words:50:10"):
        s = ChunkSpec.parse(spec, default_tokenizer="all-minilm-l6-v2")
        a = chunk_corpus(corpus, s)
        chunking._TOKENIZERS.clear()  # a fresh tokenizer load cuts alike
        assert chunk_corpus(dict(reversed(list(corpus.items()))), s)[0] == {k: a[0][k] for k in a[0]}
        assert len(a[0]) > len(corpus)
        if s.unit != "words":
            assert all(c in corpus[a[1][cid]] for cid, c in a[0].items())


def test_chunk_spec_enters_the_embedding_cache_only_through_the_chunk_text(minilm, tmp_path):
    from evalkit.backends.embedding import EmbeddingBackend
    from evalkit.run.cache import ResponseCache
    from evalkit.retrieval.dense import HFEmbedder
    from evalkit.retrieval.pipeline import embed_texts
    corpus = {"a": "one two three four five six seven eight", "b": "short doc"}
    backend = EmbeddingBackend(HFEmbedder(minilm, threads=1))
    ident = backend.identity()
    first = list(chunk_corpus(corpus, ChunkSpec.parse("words:4:0"))[0].values())
    second = list(chunk_corpus(corpus, ChunkSpec.parse("words:4:2"))[0].values())
    cache, stats = ResponseCache(tmp_path / "c.sqlite"), {}
    embed_texts(backend, cache, first, stats)
    assert stats["computed"] == 3
    stats2 = {}
    embed_texts(backend, cache, second, stats2)  # shared chunk texts are cache hits, new ones computed
    shared_texts = set(first) & set(second)
    assert shared_texts == {"one two three four", "five six seven eight", "short doc"}
    assert stats2["cached"] == 3 and stats2["computed"] == 1  # only "three four five six" is new
    assert backend.identity() == ident and "chunk" not in json.dumps(ident)
    cache.close()


evalkit = evalkit_cli


def test_mbpp_known_item_task_and_chunked_retrieve(minilm, tmp_path):
    from evalkit.tasks.retrieval import read_mbpp_known_item
    data = read_mbpp_known_item(shared("mbpp/mbpp.jsonl"))
    assert len(data.corpus) == 500 and data.qrels["q11"] == {"11": 1} and "\r" not in data.corpus["11"]
    assert data.queries["q11"].startswith("Write a python function to remove first and last occurrence")
    assert len(read_mbpp_known_item(shared("mbpp"), "validation").corpus) == 90
    bad = tmp_path / "mbpp.jsonl"
    bad.write_text(json.dumps({"task_id": 12, "code": "x"}) + "\n")
    r = evalkit("retrieve", "--task", "mbpp_retrieval", "--data", str(bad), cwd=tmp_path)
    assert r.returncode == 2 and "mbpp.jsonl:1" in r.stderr and "'text'" in r.stderr and "Traceback" not in r.stderr
    r = evalkit("retrieve", "--task", "mbpp_retrieval", "--data", str(shared("mbpp/mbpp.jsonl")), "--task-args",
                "limit_corpus=40,k=1+10", "--retriever", "bm25,dense", "--limit", "20", "--chunk", "tokens:48:16",
                "--no-cache", "--threads", "1", "--output", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    paths = [line.split("run record: ")[1] for line in r.stdout.splitlines() if line.startswith("run record: ")]
    for p in paths:
        entry = load_run(tmp_path / p).tasks["mbpp_retrieval"]
        ch = entry["extra"]["retriever"]["chunking"]
        assert ch["unit"] == "tokens" and ch["size"] == 48 and ch["overlap"] == 16 and ch["chunks"] > 40
        assert entry["metrics"]["hit@10"]["n"] == 20
    dense = load_run(tmp_path / paths[1]).tasks["mbpp_retrieval"]["metrics"]
    assert dense["hit@10"]["value"] >= 0.8  # document-level hits through token chunks
    r = evalkit("retrieve", "--task", "mbpp_retrieval", "--data", str(shared("mbpp")), "--task-args", "limit_corpus=60",
                "--retriever", "bm25", "--chunk", "structure:30:code", "--output", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-1000:]
    path = next(line.split("run record: ")[1] for line in r.stdout.splitlines() if line.startswith("run record: "))
    ch = load_run(tmp_path / path).tasks["mbpp_retrieval"]["extra"]["retriever"]["chunking"]
    assert ch["unit"] == "structure" and ch["mode"] == "code" and ch["chunks"] >= 60
