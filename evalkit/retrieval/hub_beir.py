"""A BEIR dataset through ``datasets.load_dataset``, laid out as the hub's ``BeIR/*`` repos are:
``NAME`` with configs ``corpus`` (split ``corpus``: ``_id``, ``title``, ``text``) and ``queries``
(split ``queries``: ``_id``, ``text``), and ``NAME-qrels`` (one split per qrels file:
``query-id``, ``corpus-id``, ``score``).

``--data hub:BeIR/scifact`` reads the hub (options ``qrels_repo=`` for another qrels repo,
``revision=``); ``--data hub:/path/to/scifact`` reads a local folder in the same layout through the
same ``load_dataset`` calls (a README with ``configs:``, or the files ``corpus.jsonl``/``queries.jsonl``
named in it, beside a ``scifact-qrels`` folder of ``test.tsv``-style files). Ids are read as strings
(a qrels id "007" stays "007"). A dataset that cannot be loaded (offline, missing, gated) is a
one-line ``DataError`` naming it and suggesting a local BEIR folder.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from evalkit.taskapi.data import DataError
from evalkit.retrieval.formats import RetrievalData, doc_text

PREFIX = "hub:"


def _load(name: str, config: Optional[str], split: str, revision: Optional[str], reason: Optional[str], **kw):
    import shutil
    import tempfile
    import datasets
    from evalkit.util import hub_access
    tmp = None
    if Path(name).expanduser().is_dir():
        # a local folder is the truth: datasets' cache would serve an older copy (features and all) by name
        tmp = tempfile.mkdtemp(prefix="evalkit-beir-")
        kw.update(cache_dir=tmp, keep_in_memory=True)
    try:
        return datasets.load_dataset(name, config, split=split, revision=revision, **kw)
    except Exception as e:  # offline, missing, gated, malformed: one line that says what to do
        msg = " ".join(str(e).split())[:240]
        what, hint = ("dataset folder", "") if tmp else ("hub dataset", hub_access.hint(reason))
        raise DataError(f"{what} {name}{'/' + config if config else ''} split {split!r} could not be loaded "
                        f"({type(e).__name__}: {msg}).{hint} Use a local BEIR folder instead: "
                        f"--data DIR with corpus.jsonl, queries.jsonl, qrels/<split>.tsv") from None
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _id_text(ds, where: str, kind: str, with_title: bool) -> dict[str, str]:
    cols = set(ds.column_names)
    for key in ("_id", "text"):
        if key not in cols:
            raise DataError(f"{where}: field {key!r} is missing ({kind}; columns: {', '.join(sorted(cols))})")
    out: dict[str, str] = {}
    for i, row in enumerate(ds, 1):
        doc_id = str(row["_id"])
        if doc_id in out:
            raise DataError(f"{where} row {i}: {kind} id {doc_id!r} appears twice")
        out[doc_id] = doc_text(row.get("title") if with_title else None, row["text"])
    if not out:
        raise DataError(f"{where}: empty {kind}")
    return out


def load_hub_beir(name: str, split: str = "test", qrels_repo: Optional[str] = None,
                  revision: Optional[str] = None) -> RetrievalData:
    from evalkit.util import hub_access
    local = Path(name).expanduser()
    # before datasets is imported: huggingface_hub reads HF_HUB_OFFLINE once, at import
    reason = None if local.is_dir() else hub_access.go_offline_if_unreachable()
    import datasets
    if reason:  # already imported by someone else: tell both libraries directly
        import huggingface_hub.constants
        datasets.config.HF_HUB_OFFLINE = huggingface_hub.constants.HF_HUB_OFFLINE = True
    qrels_name = qrels_repo or (str(local.parent / f"{local.name}-qrels") if local.is_dir() else f"{name}-qrels")
    corpus = _id_text(_load(name, "corpus", "corpus", revision, reason), f"{PREFIX}{name}/corpus", "corpus", True)
    queries = _id_text(_load(name, "queries", "queries", revision, reason), f"{PREFIX}{name}/queries", "queries", False)
    features = datasets.Features({"query-id": datasets.Value("string"), "corpus-id": datasets.Value("string"),
                                  "score": datasets.Value("int64")})
    qds = _load(qrels_name, None, split, revision if not qrels_repo else None, reason, features=features)
    where = f"{PREFIX}{qrels_name}[{split}]"
    qrels: dict[str, dict[str, int]] = {}
    for i, row in enumerate(qds, 1):
        q, d, g = row["query-id"], row["corpus-id"], row["score"]
        if q is None or d is None or g is None:
            raise DataError(f"{where} row {i}: a qrels row needs query-id, corpus-id and score")
        if d in qrels.get(q, {}):
            raise DataError(f"{where} row {i}: doc {d!r} is judged twice for query {q!r}")
        qrels.setdefault(q, {})[d] = int(g)
    if not qrels:
        raise DataError(f"{where}: no judgments")
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise DataError(f"{where}: {len(missing)} judged queries have no text in {PREFIX}{name}/queries, e.g. {missing[:3]}")
    issues = {"judged_docs_outside_corpus": sum(1 for q in qrels for d in qrels[q] if d not in corpus),
              "queries_without_judgments": sum(1 for q in queries if q not in qrels)}
    return RetrievalData(corpus, {q: t for q, t in queries.items() if q in qrels}, qrels,
                         f"{PREFIX}{name}[{split}]", issues)
