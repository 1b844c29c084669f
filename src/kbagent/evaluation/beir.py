"""Loading a BEIR-layout retrieval folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

The layout is the one every folder of the shared evaluation data uses: one JSON object a line for passages
(``_id``, ``title``, ``text``) and queries (``_id``, ``text``, extra fields kept in ``extra``), and a
tab-separated qrels file with a header line (``query-id  corpus-id  score``). Only queries that have at least
one positive judgement in the split are kept, as pytrec_eval/BEIR do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbagent.errors import InvalidInput, NotFound


@dataclass(frozen=True)
class CorpusDoc:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    extra: dict[str, Any] = field(default_factory=dict)


# query id -> corpus id -> graded relevance (> 0 means relevant)
Qrels = dict[str, dict[str, int]]


@dataclass
class BeirDataset:
    root: Path
    split: str
    corpus: list[CorpusDoc]
    queries: list[Query]  # only those judged in the split, in file order
    qrels: Qrels
    prefix: int | None = None  # set by corpus_prefix: only the first ``prefix`` passages are indexed

    @property
    def corpus_path(self) -> Path:
        return self.root / "corpus.jsonl"

    def corpus_prefix(self, count: int) -> BeirDataset:
        """The first ``count`` passages, and only the queries whose every relevant passage is among them.

        For measuring when embedding the whole corpus is too slow: scores on a smaller corpus are not
        comparable with published full-corpus figures (fewer distractors), but every mode and fusion
        setting sees the same prefix, so they compare with each other.
        """
        if count < 1:
            raise InvalidInput("max_passages", f"must be at least 1, got {count}")
        corpus = self.corpus[:count]
        kept = {doc.id for doc in corpus}
        queries = [q for q in self.queries if all(doc in kept for doc, grade in self.qrels[q.id].items() if grade > 0)]
        if not queries:
            raise InvalidInput("max_passages", f"no query has all its relevant passages among the first {count}")
        qrels = {q.id: self.qrels[q.id] for q in queries}
        return BeirDataset(root=self.root, split=self.split, corpus=corpus, queries=queries, qrels=qrels, prefix=count)


def _require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise NotFound(f"{what} not found: {path} (expected the BEIR layout corpus.jsonl, queries.jsonl, qrels/)")
    return path


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path.name} line {number}", f"not valid JSON ({exc.msg})") from exc
            if not isinstance(row, dict) or "_id" not in row:
                raise InvalidInput(f"{path.name} line {number}", "expected a JSON object with an _id field")
            yield number, row


def load_corpus(path: Path) -> list[CorpusDoc]:
    docs: list[CorpusDoc] = []
    seen: set[str] = set()
    for number, row in _jsonl(_require(path, "corpus file")):
        doc_id = str(row["_id"])
        if doc_id in seen:
            raise InvalidInput(f"{path.name} line {number}", f"duplicate _id {doc_id!r}")
        seen.add(doc_id)
        docs.append(CorpusDoc(id=doc_id, title=str(row.get("title") or ""), text=str(row.get("text") or "")))
    if not docs:
        raise InvalidInput(path.name, "the corpus is empty")
    return docs


def load_queries(path: Path) -> list[Query]:
    queries: list[Query] = []
    for _number, row in _jsonl(_require(path, "queries file")):
        extra = {k: v for k, v in row.items() if k not in ("_id", "text")}
        queries.append(Query(id=str(row["_id"]), text=str(row.get("text") or ""), extra=extra))
    return queries


def load_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    with _require(path, "qrels file").open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").split("\t")
            if number == 1 and parts and parts[0] == "query-id":
                continue
            if not line.strip():
                continue
            if len(parts) != 3:
                raise InvalidInput(
                    f"{path.name} line {number}", "expected query-id, corpus-id and score, tab-separated"
                )
            try:
                score = int(float(parts[2]))
            except ValueError as exc:
                raise InvalidInput(f"{path.name} line {number}", f"score {parts[2]!r} is not a number") from exc
            qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


def load_beir(root: Path, split: str = "test") -> BeirDataset:
    """Read a BEIR folder. Raises NotFound naming the missing file, InvalidInput naming the bad line.

    Queries without a positive judgement in ``split`` are dropped; qrels naming a query that is not in
    ``queries.jsonl`` are an error, since the metrics would silently count them as misses otherwise.
    """
    root = Path(root)
    if not root.is_dir():
        raise NotFound(f"evaluation folder not found: {root}")
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        hint = f"; splits present: {', '.join(available)}" if available else ""
        raise NotFound(f"qrels file not found: {qrels_path}{hint}")
    corpus = load_corpus(root / "corpus.jsonl")
    all_queries = load_queries(root / "queries.jsonl")
    qrels = {qid: judged for qid, judged in load_qrels(qrels_path).items() if any(s > 0 for s in judged.values())}
    known = {q.id for q in all_queries}
    unknown = sorted(set(qrels) - known)
    if unknown:
        raise InvalidInput(
            f"qrels/{split}.tsv", f"{len(unknown)} query ids are not in queries.jsonl (first: {unknown[0]!r})"
        )
    queries = [q for q in all_queries if q.id in qrels]
    if not queries:
        raise InvalidInput(f"qrels/{split}.tsv", "no query has a positive judgement")
    return BeirDataset(root=root, split=split, corpus=corpus, queries=queries, qrels=qrels)
