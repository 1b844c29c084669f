"""Vector search over one or more datasets.

Embedded default (SQLite): each dataset's vectors are loaded once into a float32 matrix, kept in-process
and reloaded only when the dataset's ``revision`` changes. Up to ``search.exact_max_vectors`` rows the
matrix is searched exactly (one matrix-vector product and ``argpartition``); above it through an IVF index
(``knowledge/ivf.py``) that scores only the ``search.ivf_probes`` nearest clusters.
PostgreSQL: pgvector's per-dataset HNSW index does the search.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbagent.knowledge.ivf import IVFIndex
from kbagent.knowledge.records import DatasetRef
from kbagent.storage import Database, vector_store


@dataclass
class _Loaded:
    revision: int
    ids: np.ndarray
    vectors: np.ndarray
    ivf: IVFIndex | None


def best(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k highest scores, best first, ties broken by id (deterministic)."""
    if k <= 0 or len(ids) == 0:
        return []
    if k < len(scores):
        part = np.argpartition(-scores, k - 1)[:k]
        # Everything tied with the k-th score joins, so the id tie-break below is deterministic.
        part = np.nonzero(scores >= scores[part].min())[0]
    else:
        part = np.arange(len(scores))
    order = part[np.lexsort((ids[part], -scores[part]))][:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


def top_k(ids: np.ndarray, vectors: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Exact top-k by dot product (cosine for unit vectors), best first, ties broken by id."""
    if len(ids) == 0:
        return []
    return best(ids, vectors @ query.astype(np.float32, copy=False), k)


class VectorIndex:
    """Thread-safe; one instance per process (the KnowledgeBase owns it)."""

    def __init__(self, db: Database, *, exact_max_vectors: int = 200_000, ivf_probes: int = 16) -> None:
        self.db = db
        self.exact_max_vectors = exact_max_vectors
        self.ivf_probes = ivf_probes
        self._cache: dict[int, _Loaded] = {}
        self._loading: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()

    def _load(self, ref: DatasetRef) -> _Loaded:
        with self._lock:
            cached = self._cache.get(ref.id)
            if cached is not None and cached.revision == ref.revision:
                return cached
            loading = self._loading.setdefault(ref.id, threading.Lock())
        # One loader per dataset: concurrent first searches wait for it instead of each reading (and, for
        # large datasets, clustering) the whole matrix again.
        with loading:
            with self._lock:
                cached = self._cache.get(ref.id)
                if cached is not None and cached.revision == ref.revision:
                    return cached
            return self._read(ref)

    def _read(self, ref: DatasetRef) -> _Loaded:
        with self.db.read() as session:
            ids, vectors = vector_store.load_vectors(session, ref.id, ref.dimension)
        if len(ids) > self.exact_max_vectors:
            ivf = IVFIndex.build(ids, vectors)
            # The IVF keeps its own reordered copy; drop the original so memory holds one matrix.
            loaded = _Loaded(ref.revision, ivf.ids, ivf.vectors, ivf)
        else:
            loaded = _Loaded(ref.revision, ids, np.ascontiguousarray(vectors), None)
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
        query = np.asarray(query, dtype=np.float32)
        hits: list[tuple[int, float]] = []
        if self.db.dialect == "postgresql":
            with self.db.read() as session:
                for ref in datasets:
                    hits.extend(vector_store.nearest(session, ref.id, ref.dimension, query, k))
        else:
            for ref in datasets:
                loaded = self._load(ref)
                if loaded.ivf is not None:
                    ids, scores = loaded.ivf.search(query, k, self.ivf_probes)
                    hits.extend(best(ids, scores, k))
                else:
                    hits.extend(top_k(loaded.ids, loaded.vectors, query, k))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:k]
