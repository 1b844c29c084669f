"""Vector search over one or more datasets.

Embedded default (SQLite): each dataset's vectors are loaded once into a float32 matrix and searched
exactly with one matrix-vector product and ``argpartition``; the matrix is kept in-process and reloaded
only when the dataset's ``revision`` changes. PostgreSQL: pgvector's HNSW index does the search.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbagent.storage import Database, vector_store


@dataclass(frozen=True)
class DatasetRef:
    id: int
    revision: int
    dimension: int


@dataclass
class _Matrix:
    revision: int
    ids: np.ndarray
    vectors: np.ndarray


def top_k(ids: np.ndarray, vectors: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Exact top-k by dot product (cosine for unit vectors), best first, ties broken by id."""
    if k <= 0 or len(ids) == 0:
        return []
    scores = vectors @ query.astype(np.float32, copy=False)
    if k < len(scores):
        part = np.argpartition(-scores, k - 1)[:k]
        # Everything tied with the k-th score joins, so the id tie-break below is deterministic.
        part = np.nonzero(scores >= scores[part].min())[0]
    else:
        part = np.arange(len(scores))
    order = part[np.lexsort((ids[part], -scores[part]))][:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


class VectorIndex:
    """Thread-safe; one instance per process (the KnowledgeBase owns it)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._cache: dict[int, _Matrix] = {}
        self._lock = threading.Lock()

    def _matrix(self, ref: DatasetRef) -> _Matrix:
        with self._lock:
            cached = self._cache.get(ref.id)
            if cached is not None and cached.revision == ref.revision:
                return cached
        with self.db.read() as session:
            ids, vectors = vector_store.load_vectors(session, ref.id, ref.dimension)
        loaded = _Matrix(ref.revision, ids, np.ascontiguousarray(vectors))
        with self._lock:
            current = self._cache.get(ref.id)
            # Another thread may have loaded a newer revision meanwhile; keep the newest.
            if current is None or current.revision <= ref.revision:
                self._cache[ref.id] = loaded
        return loaded

    def forget(self, dataset_id: int) -> None:
        with self._lock:
            self._cache.pop(dataset_id, None)

    def search(self, datasets: Sequence[DatasetRef], query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(paragraph id, cosine similarity) best first, over all ``datasets``."""
        hits: list[tuple[int, float]] = []
        if self.db.dialect == "postgresql":
            with self.db.read() as session:
                for ref in datasets:
                    hits.extend(vector_store.nearest(session, ref.id, ref.dimension, query, k))
        else:
            for ref in datasets:
                matrix = self._matrix(ref)
                hits.extend(top_k(matrix.ids, matrix.vectors, query, k))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:k]
