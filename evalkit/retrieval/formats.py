"""Reading retrieval files: TREC runs and qrels, BEIR folders (corpus.jsonl, queries.jsonl,
qrels/<split>.tsv) and JSON runs (``{query id: {doc id: score}}``, as BEIR and pytrec_eval keep them).

Malformed input is a ``DataError`` naming the file and line: a qrels line without its four fields,
a grade or score that is not a number, a doc listed twice for one query (trec_eval refuses that
too), an empty corpus. Mismatches between files that a researcher may legitimately have (run queries
the qrels lack, judged docs outside the corpus) are counted and reported, not fatal.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from evalkit.taskapi.data import DataError, decoded_lines, jsonl_records


def _fields(path: Path):
    for lineno, line in enumerate(decoded_lines(path), 1):
        parts = line.split()
        if parts and not line.lstrip().startswith("#"):
            yield lineno, parts


def read_trec_qrels(path) -> dict[str, dict[str, int]]:
    """``query_id iteration doc_id grade`` per line (whitespace separated)."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple, int] = {}
    for lineno, parts in _fields(path):
        where = f"{path}:{lineno}"
        if len(parts) != 4:
            raise DataError(f"{where}: a qrels line has 4 fields (query_id iteration doc_id grade), got "
                            f"{len(parts)}: {' '.join(parts)[:80]!r}")
        qid, _, doc, grade = parts
        try:
            g = int(grade)
        except ValueError:
            try:
                g = int(float(grade)) if float(grade).is_integer() else None
            except ValueError:
                g = None
            if g is None:
                raise DataError(f"{where}: field 'grade' must be an integer, got {grade!r}") from None
        if (qid, doc) in seen:
            raise DataError(f"{where}: doc {doc!r} is judged twice for query {qid!r} (first at line {seen[qid, doc]})")
        seen[qid, doc] = lineno
        qrels.setdefault(qid, {})[doc] = g
    if not qrels:
        raise DataError(f"{path}: no judgments (empty qrels file)")
    return qrels


def _score(value: str, where: str) -> float:
    try:
        s = float(value)
    except ValueError:
        raise DataError(f"{where}: field 'score' must be a number, got {value!r}") from None
    if math.isnan(s):
        raise DataError(f"{where}: field 'score' is NaN")
    return s


def read_trec_run(path) -> dict[str, dict[str, float]]:
    """``query_id Q0 doc_id rank score run_tag`` per line; the rank column is ignored (trec_eval
    ranks by score), a JSON file ``{query: {doc: score}}`` is read as such."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return read_json_run(path)
    run: dict[str, dict[str, float]] = {}
    first: dict[tuple, int] = {}
    for lineno, parts in _fields(path):
        where = f"{path}:{lineno}"
        if len(parts) != 6:
            raise DataError(f"{where}: a TREC run line has 6 fields (query_id Q0 doc_id rank score run_tag), "
                            f"got {len(parts)}: {' '.join(parts)[:80]!r}")
        qid, _, doc, _, score, _ = parts
        if (qid, doc) in first:
            raise DataError(f"{where}: doc {doc!r} appears twice in the ranking of query {qid!r} (first at line "
                            f"{first[qid, doc]}); trec_eval refuses such runs too")
        first[qid, doc] = lineno
        run.setdefault(qid, {})[doc] = _score(score, where)
    if not run:
        raise DataError(f"{path}: no results (empty run file)")
    return run


def read_json_run(path) -> dict[str, dict[str, float]]:
    from evalkit.util.jsonio import read_json
    data = read_json(Path(path))
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise DataError(f"{path}: a JSON run is an object {{query_id: {{doc_id: score}}}}")
    out = {}
    for q, docs in data.items():
        out[str(q)] = {}
        for d, s in docs.items():
            if not isinstance(s, (int, float)) or isinstance(s, bool) or math.isnan(s):
                raise DataError(f"{path}: query {q!r}, doc {d!r}: score must be a number, got {s!r}")
            out[str(q)][str(d)] = float(s)
    if not out:
        raise DataError(f"{path}: no results (empty run)")
    return out


def write_trec_run(path, run: dict[str, dict[str, float]], tag: str = "evalkit") -> Path:
    """A TREC run file, ranks by score (trec tie order)."""
    from evalkit.retrieval.measures import rank
    path = Path(path)
    with open(path, "w", encoding="utf-8") as f:
        for q, docs in run.items():
            for i, d in enumerate(rank(docs), 1):
                f.write(f"{q} Q0 {d} {i} {docs[d]!r} {tag}\n")
    return path


def read_qrels(path) -> dict[str, dict[str, int]]:
    """TREC qrels (4 fields) or BEIR's TSV (``query-id corpus-id score``, header optional)."""
    path = Path(path)
    if path.suffix.lower() == ".tsv":
        return read_beir_qrels(path)
    return read_trec_qrels(path)


def read_beir_qrels(path) -> dict[str, dict[str, int]]:
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in enumerate(decoded_lines(path), 1):
        parts = line.rstrip("\r\n").split("\t")
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        if lineno == 1 and parts[:2] == ["query-id", "corpus-id"]:
            continue
        if len(parts) != 3:
            raise DataError(f"{where}: a BEIR qrels line has 3 tab-separated fields (query-id corpus-id score), "
                            f"got {len(parts)}")
        q, d, g = parts
        try:
            grade = int(g)
        except ValueError:
            raise DataError(f"{where}: field 'score' must be an integer grade, got {g!r}") from None
        if d in qrels.get(q, {}):
            raise DataError(f"{where}: doc {d!r} is judged twice for query {q!r}")
        qrels.setdefault(q, {})[d] = grade
    if not qrels:
        raise DataError(f"{path}: no judgments (empty qrels file)")
    return qrels


def doc_text(title, text) -> str:
    """A document's searchable text, ``title text`` (as BEIR joins them); a null title or text reads as ""."""
    title = "" if title is None else str(title)
    text = "" if text is None else str(text)
    return f"{title} {text}".strip() if title else text


def _read_id_text(path: Path, kind: str, with_title: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for rec in jsonl_records(path, "a JSON object with '_id' and 'text'"):
        obj, where = rec.data, rec.where
        for key in ("_id", "text"):
            if key not in obj:
                raise DataError(f"{where}: field {key!r} is missing ({kind})")
        i = str(obj["_id"])
        if i in out:
            raise DataError(f"{where}: {kind} id {i!r} appears twice")
        out[i] = doc_text(obj.get("title") if with_title else None, obj["text"])
    if not out:
        raise DataError(f"{path}: empty {kind} (no documents)" if kind == "corpus" else f"{path}: no {kind}")
    return out


@dataclass
class RetrievalData:
    """Corpus, queries and judgments of one split, with what did not line up (counted)."""

    corpus: dict
    queries: dict
    qrels: dict
    source: str = ""
    issues: dict = field(default_factory=dict)   # counted problems, reported in the record


def read_beir(folder, split: str = "test") -> RetrievalData:
    """A BEIR folder: corpus.jsonl (``_id``, ``title``, ``text``), queries.jsonl (``_id``, ``text``)
    and qrels/<split>.tsv. Judged queries without a text are an error; judged docs outside the
    corpus are counted (they can never be retrieved) and queries without judgments are dropped."""
    folder = Path(folder)
    paths = {"corpus": folder / "corpus.jsonl", "queries": folder / "queries.jsonl",
             "qrels": folder / "qrels" / f"{split}.tsv"}
    for kind, p in paths.items():
        if not p.is_file():
            raise DataError(f"{folder}: not a BEIR folder, {p.relative_to(folder)} is missing ({kind})")
    corpus = _read_id_text(paths["corpus"], "corpus", True)
    queries = _read_id_text(paths["queries"], "queries", False)
    qrels = read_beir_qrels(paths["qrels"])
    missing_q = [q for q in qrels if q not in queries]
    if missing_q:
        raise DataError(f"{paths['qrels']}: {len(missing_q)} judged queries have no text in "
                        f"{paths['queries']}, e.g. {missing_q[:3]}")
    outside = sum(1 for q in qrels for d in qrels[q] if d not in corpus)
    issues = {"judged_docs_outside_corpus": outside,
              "queries_without_judgments": sum(1 for q in queries if q not in qrels)}
    queries = {q: t for q, t in queries.items() if q in qrels}
    return RetrievalData(corpus, queries, qrels, str(folder), issues)


def check_run_against_qrels(run: dict, qrels: dict) -> dict:
    """Counts of what a run and qrels do not share (recorded, never silently dropped)."""
    return {"run_queries_not_in_qrels": sorted(q for q in run if q not in qrels),
            "qrels_queries_not_in_run": sorted(q for q in qrels if q not in run),
            "retrieved_unjudged": sum(1 for q, docs in run.items() if q in qrels
                                      for d in docs if d not in qrels[q])}


def limit_queries(qrels: dict, limit: Optional[int]) -> dict:
    return qrels if limit is None else dict(list(qrels.items())[:limit])
