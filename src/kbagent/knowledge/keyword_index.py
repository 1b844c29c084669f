"""Keyword (BM25) search over one or more datasets.

Embedded default (SQLite): each dataset has a tantivy index held in memory, built from the paragraphs'
analysed text (``search_text``: jieba words and stems joined by spaces, so tantivy's whitespace tokenizer
takes the terms exactly as ``knowledge/analysis.py`` made them). tantivy skips documents that cannot reach
the top k (block-max WAND), which is what keeps common words cheap at a million paragraphs.
The index follows the database, which stays the only source of truth: when a dataset's ``revision`` moves,
the next search compares the index's paragraph ids with the table's and applies the difference (paragraphs
are never edited in place: a changed document gets new paragraph ids), so re-ingesting one file costs that
file, not the dataset. Another process writing the same database is seen the same way.
PostgreSQL: the stored tsvector column and its GIN index, each term weighted by its inverse document frequency
(``storage/text_search.py``).

Embedded scores are BM25 (k1 1.2, b 0.75) within each dataset; PostgreSQL's are idf-weighted ``ts_rank``. On
both, higher is better; the scales differ, which fusion's per-list normalisation absorbs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tantivy

from kbagent.knowledge.records import DatasetRef
from kbagent.storage import Database
from kbagent.storage import datasets as dataset_rows
from kbagent.storage import paragraphs as paragraph_rows
from kbagent.storage.text_search import text_search

_PID = "pid"
_TEXT = "text"
# tantivy's writer wants at least 15 MB of indexing memory per thread; one thread is plenty for the usual
# sync (one document's paragraphs), two halve the first build of a large dataset.
_SMALL_SYNC = (1, 32_000_000)
_LARGE_SYNC = (2, 256_000_000)
_LARGE = 50_000


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field(_PID, stored=False, indexed=True, fast=True)
    builder.add_text_field(_TEXT, stored=False, tokenizer_name="whitespace", index_option="freq")
    return builder.build()


@dataclass
class _Loaded:
    revision: int
    ids: np.ndarray  # paragraph ids in the index, ascending
    index: tantivy.Index
    searcher: tantivy.Searcher


def distinct_terms(terms: Sequence[str]) -> list[str]:
    """Terms in first-seen order without repeats, blanks and punctuation-only entries (they match nothing)."""
    seen: dict[str, None] = {}
    for term in terms:
        term = term.strip()
        if term and any(ch.isalnum() for ch in term):
            seen.setdefault(term, None)
    return list(seen)


class KeywordIndex:
    """Thread-safe; one instance per process (the KnowledgeBase owns it)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._schema = _schema()
        self._cache: dict[int, _Loaded] = {}
        self._syncing: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()

    def search(self, datasets: Sequence[DatasetRef], terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """(paragraph id, score) best first over all ``datasets``, matching any of ``terms`` (analysed
        terms, see ``knowledge.analysis.analyze``). Ties are broken by id."""
        usable = distinct_terms(terms)
        if not usable or not datasets or k <= 0:
            return []
        if self.db.dialect == "postgresql":
            with self.db.read() as session:
                return text_search(session, [ref.id for ref in datasets], usable, k)
        hits: list[tuple[int, float]] = []
        for ref in datasets:
            loaded = self._current(ref)
            hits.extend(self._search_one(loaded, usable, k))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:k]

    def forget(self, dataset_id: int) -> None:
        """Drop a dataset's index (the dataset was deleted)."""
        with self._lock:
            self._cache.pop(dataset_id, None)
            self._syncing.pop(dataset_id, None)

    def _search_one(self, loaded: _Loaded, terms: list[str], k: int) -> list[tuple[int, float]]:
        if len(loaded.ids) == 0:
            return []
        should = [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, _TEXT, t)) for t in terms]
        query = tantivy.Query.boolean_query(should)
        searcher = loaded.searcher
        result = searcher.search(query, limit=k, count=False)
        # The paragraph id comes from the fast-field column (no stored document is read). Every document
        # carries one; ``None`` would only mean a segment without the column, which this schema never makes.
        pids = searcher.fast_field_values(_PID, [address for _, address in result.hits])
        hits = [(int(pid), float(score)) for (score, _), pid in zip(result.hits, pids, strict=True) if pid is not None]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits

    def _current(self, ref: DatasetRef) -> _Loaded:
        with self._lock:
            loaded = self._cache.get(ref.id)
            if loaded is not None and loaded.revision >= ref.revision:
                return loaded
            syncing = self._syncing.setdefault(ref.id, threading.Lock())
        # One sync per dataset at a time: concurrent searches wait for it rather than each reading the
        # changed paragraphs again. Searches of other datasets are not held up.
        with syncing:
            with self._lock:
                loaded = self._cache.get(ref.id)
            if loaded is not None and loaded.revision >= ref.revision:
                return loaded
            synced = self._sync(ref, loaded)
            with self._lock:
                self._cache[ref.id] = synced
            return synced

    def _sync(self, ref: DatasetRef, loaded: _Loaded | None) -> _Loaded:
        if loaded is None:
            return self._build(ref)
        # The revision was read before the ids, so the ids are at least as new as it: a change landing in
        # between is applied now and its own revision bump finds an empty difference later.
        with self.db.read() as session:
            current = np.asarray(paragraph_rows.paragraph_ids(session, ref.id), dtype=np.int64)
            removed = np.setdiff1d(loaded.ids, current, assume_unique=True)
            added = np.setdiff1d(current, loaded.ids, assume_unique=True)
            rows = paragraph_rows.search_texts(session, added.tolist()) if len(added) else []
        if len(removed) or rows:
            writer = self._writer(loaded.index, len(rows))
            for pid in removed.tolist():
                writer.delete_documents_by_term(_PID, pid)
            self._add(writer, rows)
            writer.commit()
            writer.wait_merging_threads()
            loaded.index.reload()
        # A paragraph deleted between the two reads above is in ``current`` but not in the index; the next
        # sync sees it gone and its deletion is a no-op.
        return _Loaded(ref.revision, current, loaded.index, loaded.index.searcher())

    def _build(self, ref: DatasetRef) -> _Loaded:
        index = tantivy.Index(self._schema)
        with self.db.read() as session:
            count = dataset_rows.dataset_counts(session, [ref.id])[ref.id][1]
            writer = self._writer(index, count)
            ids: list[int] = []
            for batch in paragraph_rows.iter_search_texts(session, ref.id):
                self._add(writer, batch)
                ids.extend(pid for pid, _ in batch)
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return _Loaded(ref.revision, np.asarray(ids, dtype=np.int64), index, index.searcher())

    @staticmethod
    def _writer(index: tantivy.Index, documents: int) -> tantivy.IndexWriter:
        threads, heap = _LARGE_SYNC if documents >= _LARGE else _SMALL_SYNC
        return index.writer(heap_size=heap, num_threads=threads)

    @staticmethod
    def _add(writer: tantivy.IndexWriter, rows: Sequence[tuple[int, str]]) -> None:
        for pid, text in rows:
            writer.add_document(tantivy.Document(**{_PID: pid, _TEXT: text}))
