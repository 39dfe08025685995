"""τ²-bench's banking_knowledge environment (``tau2/domains/banking_knowledge/environment.py``,
``retrieval_mixins.py`` and the ``tau2/knowledge`` retrievers as the reference, MIT) run inside evalkit's
sandbox. This text heads the banking ``ToolEnv`` source (``tasks/tau2/env.py``), followed by evalkit's own
port of the domain's tools: ``runtime_banking_db.py`` (the database, queries, ids), ``runtime_banking_agent.py``
(the agent's tools and the discovery protocol), ``runtime_banking_credit.py``, ``runtime_banking_accounts.py``,
``runtime_banking_debit.py``, ``runtime_banking_service.py`` (the discoverable agent tools) and
``runtime_banking_user.py`` (the customer's); never imported by evalkit.

The state is plain data, carried whole between calls (the database is small): the database, the tools the
agent unlocked and those it gave the customer. ``setup`` is ``get_environment`` and ``Environment.set_state``
(``initialization_data``, then ``initialization_actions``). Calls named ``user:<tool>`` are the customer's.
Results and errors are what ``Environment.get_response`` gives (text as is; "Error: " and the message).
The discoverable tools' descriptions and the ATM deposit images are data (``banking_discoverable.json``,
appended to the source as ``DATA`` by ``env.py``).

The knowledge base tools, by retrieval configuration (τ²-bench's ``RetrievalVariant``s that need no
embedding model or shell): ``KB_search`` (``BM25Okapi`` from rank_bm25 over the lower-cased,
whitespace-split documents, top 10, as ``BM25Indexer``/``BM25Retriever``) and ``grep`` (``GrepRetriever``:
case-insensitive regex, a literal when the pattern does not compile, ranked by match count, top 10).
One deliberate difference: ``KB_search``'s ``[Timing: ...]`` line reads 0ms (upstream prints the
wall-clock milliseconds), so reruns are identical. ``snapshot``: the database hash (``get_hash``).
"""
# one sandbox source: names defined in the other runtime_banking*.py parts (or appended by env.py)
# ruff: noqa: F821

import gzip as _gzip
import json
import math as _math
import re

RETRIEVAL_TOOLS = {"bm25_grep": ("KB_search", "grep"), "bm25": ("KB_search",), "grep_only": ("grep",),
                   "full_kb": (), "no_knowledge": (), "golden_retrieval": ()}
KB_TOP_K, GREP_TOP_K = 10, 10  # PipelineSpec.top_k, GrepSpec.top_k


class ToolError(Exception):
    """A tool raised; the caller reads "Error: <message>"."""

    evalkit_plain = True


# ---- the knowledge base (documents.json.gz: [{id, title, content}], in its order)
def load_documents(key):
    data = FILES[key]  # noqa: F821 (set by the sandbox's tool driver)
    docs = json.loads(_gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return [(d["id"], d["title"], d["content"]) for d in docs]


def _format(docs, results):
    """``GrepMixin.grep``'s and ``_format_kb_search_result``'s listing of (doc id, score)."""
    by_id = {i: (t, c) for i, t, c in docs}
    out = []
    for i, (doc_id, score) in enumerate(results, 1):
        title, content = by_id[doc_id]
        out.append(f"{i}. {title or 'Untitled'}\n   ID: {doc_id}\n   Score: {score:.4f}\n   Content: {content or ''}\n")
    return "\n".join(out)


def grep(docs, pattern, top_k=GREP_TOP_K, case_sensitive=False):
    """``GrepMixin.grep`` on ``GrepRetriever``."""
    results = []
    if pattern.strip():
        flags = 0 if case_sensitive else re.IGNORECASE
        try:
            rx = re.compile(pattern, flags)
        except re.error:
            rx = re.compile(re.escape(pattern), flags)
        for doc_id, _title, content in docs:
            n = len(rx.findall(content))
            if n:
                results.append((doc_id, float(n)))
        results.sort(key=lambda x: x[1], reverse=True)
        results = results[:top_k]
    if not results:
        return f"No matches found for pattern: {pattern}"
    return _format(docs, results)


class BM25Okapi:
    """rank_bm25's ``BM25Okapi`` (k1 1.5, b 0.75, epsilon 0.25), the same float operations in the
    same order as its numpy arrays make them."""

    def __init__(self, corpus, k1=1.5, b=0.75, epsilon=0.25):
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.doc_len, self.doc_freqs, self.idf = [], [], {}
        nd, num_doc = {}, 0
        for document in corpus:
            self.doc_len.append(len(document))
            num_doc += len(document)
            freqs = {}
            for word in document:
                freqs[word] = freqs.get(word, 0) + 1
            self.doc_freqs.append(freqs)
            for word in freqs:
                nd[word] = nd.get(word, 0) + 1
        self.corpus_size = len(corpus)
        self.avgdl = num_doc / self.corpus_size
        idf_sum, negative = 0, []
        for word, freq in nd.items():
            idf = _math.log(self.corpus_size - freq + 0.5) - _math.log(freq + 0.5)
            self.idf[word] = idf
            idf_sum += idf
            if idf < 0:
                negative.append(word)
        self.average_idf = idf_sum / len(self.idf)
        for word in negative:
            self.idf[word] = self.epsilon * self.average_idf

    def get_scores(self, query):
        score = [0.0] * self.corpus_size
        k1, b, avgdl = self.k1, self.b, self.avgdl
        for q in query:
            idf = self.idf.get(q) or 0
            for i, (doc, dl) in enumerate(zip(self.doc_freqs, self.doc_len)):
                f = float(doc.get(q) or 0)
                score[i] += idf * (f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl)))
        return score


def kb_search(docs, query, top_k=KB_TOP_K):
    """``KBSearchMixin.KB_search`` on the BM25 pipeline."""
    results = []
    if query and query.strip():
        bm25 = BM25Okapi([content.lower().split() for _i, _t, content in docs])
        scores = bm25.get_scores(query.lower().split())
        top = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)[:min(top_k, len(docs))]
        results = [(docs[i][0], float(scores[i])) for i in top]
    timing = "\n\n[Timing: retrieval=0ms, total=0ms]"
    if not results:
        return "No relevant documents found." + timing
    return _format(docs, results) + timing


# ---- the environment
def _deep_update(base, update):
    """addict's ``Dict.update`` (``update_pydantic_model_with_dict``): nested dicts merge."""
    out = dict(base)
    for k, v in update.items():
        out[k] = _deep_update(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


#: banking_discoverable.json (the discoverable tools' descriptions, the ATM deposit images): ``env.py``
#: appends its text to the source as ``DATA``
DATA = {}


def setup(config):
    db = new_db(json.loads(FILES["db"]))  # noqa: F821 (set by the sandbox's tool driver)
    init = config.get("initial_state") or {}
    init = (json.loads(init) if isinstance(init, str) else init) or {}
    data = init.get("initialization_data") or {}
    for side in ("agent_data", "user_data"):  # ToolKitBase.update_db; both toolkits keep one database
        if isinstance(data.get(side), dict):
            db = new_db(_deep_update(db, data[side]))
    state = {"db": db, "unlocked": [], "given": {}, "retrieval": config.get("retrieval") or "bm25_grep",
             "documents": "documents"}
    for action in init.get("initialization_actions") or []:  # Environment.run_env_function_call
        _run(state, action.get("env_type") == "user", action["func_name"], action.get("arguments") or {})
    return state


def _run(state, user, tool, arguments):
    """The toolkit's ``use_tool``: its tool, or "Tool '...' not found."; a call the tool's parameters do not
    fit reads as Python words it for upstream's method."""
    tools = USER_TOOLS if user else AGENT_TOOLS
    if tool not in tools:
        raise ValueError(f"Tool '{tool}' not found.")
    fn = tools[tool]
    try:
        return fn(state if tool in SESSION_TOOLS else state["db"], **arguments)
    except TypeError as e:
        raise TypeError(call_error("KnowledgeUserTools" if user else "KnowledgeTools", fn, e)) from None


def call(state, name, arguments):
    user = name.startswith("user:")
    tool = name[5:] if user else name
    if not user and tool in RETRIEVAL_TOOLS.get(state["retrieval"], ()):
        docs = load_documents(state["documents"])
        try:
            return kb_search(docs, **arguments) if tool == "KB_search" else grep(docs, **arguments)
        except Exception as e:  # noqa: BLE001 (get_response: "Error: {e}")
            raise ToolError(str(e)) from None
    try:
        return to_json_str(_run(state, user, tool, arguments))
    except Exception as e:  # noqa: BLE001 (get_response: "Error: {e}"; an unknown tool: "Tool '...' not found.")
        raise ToolError(str(e)) from None


def to_json_str(resp):
    """``Environment.to_json_str`` (every banking tool returns text)."""
    return resp if isinstance(resp, str) else json.dumps(resp, default=str)


def snapshot(state):
    return {"db_hash": db_hash(state["db"])}
