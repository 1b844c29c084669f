"""Vector search over one or more datasets.

Embedded default (SQLite): each dataset's vectors are loaded once into a float32 matrix kept in-process.
Up to ``search.exact_max_vectors`` rows the matrix is searched exactly (one matrix-vector product and
``argpartition``); above it through an IVF index (``knowledge/ivf.py``) that scores only the
``search.ivf_probes`` nearest clusters.
The matrix follows the database, which stays the only source of truth: when a dataset's ``revision`` moves,
the next search compares the matrix's paragraph ids with the stored vectors' ids and applies the difference
(paragraph ids are never reused and a changed document gets new ones), so re-ingesting one file reads that
file's vectors, not the dataset's. Exact mode copies the kept rows and appends the new ones; an IVF index
keeps up to ``pending_rows`` changed rows aside (new rows scored exactly, removed rows skipped) and only
then files them into its lists. Another process writing the same database is seen the same way. Only a
different embedding model or dimension (``reembed``: new vectors under the same ids) reloads everything.
PostgreSQL: pgvector's per-dataset HNSW index does the search.

Memory: a change builds the new matrix beside the current one (searches running meanwhile keep reading the
current one) and then swaps it in, so the peak is two copies of the dataset's matrix (2 x 1.5 GB at 1M x 384)
plus per-block temporaries of at most about 170 MB while rows are assigned to lists. A full reload (first
search, or another model) first drops the cached matrix, so it peaks at the loaded matrix plus its IVF
reordering: again two copies.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from kbagent.knowledge.ivf import IVFIndex, Rows
from kbagent.knowledge.records import DatasetRef
from kbagent.storage import Database, vector_store

# Re-cluster the IVF index from scratch once the rows added or removed since its last full build reach this
# fraction of that build. Updates file new rows under the old centroids, which keeps every row in its
# nearest list (results stay as good) but lets lists grow unbalanced when new text is about new topics, and
# the ideal list count (sqrt(n)/4) moves by about 10% at a 20% size change. A full clustering costs about
# 2 s per million rows here (2.1 s measured at 1M x 384), so re-clustering every 20% of churn adds at most
# ~5 row-assignments per changed row, while a typical re-ingest (a document of a large dataset) never gets
# near it.
_RECLUSTER_FRACTION = 0.2
# An IVF index takes changes in without rearranging its lists: new rows wait in a small side matrix that
# every query scores exactly, removed rows are flagged and skipped. Rearranging copies the whole matrix
# (1M x 384 is 1.5 GB: measured 0.2 s to 3.5 s on this machine, mostly the first touch of fresh memory), so
# it is done once this many rows are pending, not on every re-ingest. Scoring 8192 pending rows adds about
# 0.1 ms to a query (the product measured 0.07 ms), which already scores 16 lists of ~4000 rows.
_PENDING_ROWS = 8192


@dataclass(frozen=True)
class _Pending:
    """Changes an IVF index has not been rearranged for yet."""

    ids: np.ndarray  # rows added since the lists were arranged
    vectors: np.ndarray
    dead: np.ndarray | None  # one flag per IVF row: removed since


@dataclass(frozen=True)
class _Loaded:
    revision: int
    model: str
    dimension: int
    ids: np.ndarray  # every paragraph id held (exact mode: in the order of the rows of ``vectors``)
    vectors: np.ndarray
    ivf: IVFIndex | None
    pending: _Pending | None = None


def _current(loaded: _Loaded | None, ref: DatasetRef) -> bool:
    if loaded is None:
        return False
    # A newer cache than the caller's ref (another search synced meanwhile) serves it as well.
    return loaded.revision > ref.revision or (loaded.revision == ref.revision and _same_embedding(loaded, ref))


def _same_embedding(loaded: _Loaded, ref: DatasetRef) -> bool:
    return loaded.model == ref.embedding_model and loaded.dimension == ref.dimension


def _changed_rows(cached: _Loaded, removed: np.ndarray, new_ids: np.ndarray, new_vectors: np.ndarray) -> Rows:
    """The rows held after a change, as the kept rows of the cached matrix plus the new ones (an IVF
    index's pending rows that stay count as new)."""
    if cached.ivf is None:
        keep = np.nonzero(~np.isin(cached.ids, removed))[0]
        return Rows(cached.ids, cached.vectors, keep, new_ids, new_vectors)
    ivf, pending = cached.ivf, cached.pending
    gone = np.isin(ivf.ids, removed)
    if pending is not None:
        if pending.dead is not None:
            gone |= pending.dead
        stay = ~np.isin(pending.ids, removed)
        new_ids = np.concatenate((pending.ids[stay], new_ids))
        new_vectors = np.concatenate((pending.vectors[stay], new_vectors))
    return Rows(ivf.ids, ivf.vectors, np.nonzero(~gone)[0], new_ids, new_vectors)


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

    def __init__(
        self,
        db: Database,
        *,
        exact_max_vectors: int = 200_000,
        ivf_probes: int = 64,
        pending_rows: int = _PENDING_ROWS,
    ) -> None:
        """``pending_rows``: changed rows an IVF index holds aside before rearranging its lists (tests lower it)."""
        self.db = db
        self.exact_max_vectors = exact_max_vectors
        self.ivf_probes = ivf_probes
        self.pending_rows = pending_rows
        self._cache: dict[int, _Loaded] = {}
        self._loading: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()
        # Per dataset: an IVF index, the order that sorts its ids and the sorted ids, for ``rescore``'s lookups.
        self._sorted: dict[int, tuple[IVFIndex, np.ndarray, np.ndarray]] = {}

    def _load(self, ref: DatasetRef) -> _Loaded:
        with self._lock:
            cached = self._cache.get(ref.id)
            if cached is not None and _current(cached, ref):
                return cached
            loading = self._loading.setdefault(ref.id, threading.Lock())
        # One loader per dataset: concurrent first searches wait for it instead of each reading (and, for
        # large datasets, clustering) the matrix again. Searches of other datasets are not held up.
        with loading:
            with self._lock:
                cached = self._cache.get(ref.id)
                if cached is not None and _current(cached, ref):
                    return cached
                if cached is not None and not _same_embedding(cached, ref):
                    # Another model's vectors are of no use: drop them before loading the new ones, so
                    # memory never holds both models' matrices plus the IVF reordering.
                    del self._cache[ref.id]
                    cached = None
            loaded = self._read(ref) if cached is None else self._sync(ref, cached)
            del cached  # the new matrix is built; let the old one go as soon as no search holds it
            with self._lock:
                current = self._cache.get(ref.id)
                # Another thread may have loaded a newer revision meanwhile; keep the newest.
                if current is None or current.revision <= loaded.revision:
                    self._cache[ref.id] = loaded
            return loaded

    def _read(self, ref: DatasetRef) -> _Loaded:
        with self.db.read() as session:
            ids, vectors = vector_store.load_vectors(session, ref.id, ref.dimension)
        if len(ids) > self.exact_max_vectors:
            return self._arranged(ref, Rows.of(ids, vectors))
        return _Loaded(ref.revision, ref.embedding_model, ref.dimension, ids, vectors, None)

    def _sync(self, ref: DatasetRef, cached: _Loaded) -> _Loaded:
        """The cached matrix brought up to the stored vectors by their difference in paragraph ids."""
        # The revision in ``ref`` was read before the ids, so the ids are at least as new as it: a change
        # landing in between is applied now, and its own revision bump later finds an empty difference.
        with self.db.read() as session:
            current = vector_store.embedding_ids(session, ref.id)
            removed = np.setdiff1d(cached.ids, current, assume_unique=True)
            added = np.setdiff1d(current, cached.ids, assume_unique=True)
            # Vectors deleted after the ids were read are absent here; the ids held are those returned.
            new_ids, new_vectors = vector_store.vectors_by_ids(session, added.tolist(), ref.dimension)
        if len(removed) == 0 and len(new_ids) == 0:
            return replace(cached, revision=ref.revision)
        rows = _changed_rows(cached, removed, new_ids, new_vectors)
        ivf = cached.ivf
        if ivf is None or len(rows) <= self.exact_max_vectors:
            return self._arranged(ref, rows)
        dead = np.ones(len(ivf.ids), dtype=bool)
        dead[rows.keep] = False
        pending = int(dead.sum()) + len(rows.new_ids)
        if ivf.changed_rows + pending >= _RECLUSTER_FRACTION * ivf.built_rows:
            return self._arranged(ref, rows)
        if pending > self.pending_rows:
            updated = ivf.updated(ivf.ids[dead], rows.new_ids, rows.new_vectors)
            return _Loaded(ref.revision, ref.embedding_model, ref.dimension, updated.ids, updated.vectors, updated)
        waiting = _Pending(rows.new_ids, rows.new_vectors, dead if dead.any() else None)
        return _Loaded(ref.revision, ref.embedding_model, ref.dimension, rows.ids, ivf.vectors, ivf, waiting)

    def _arranged(self, ref: DatasetRef, rows: Rows) -> _Loaded:
        """``rows`` as one new matrix: exact up to ``exact_max_vectors`` rows, else clustered afresh."""
        if len(rows) > self.exact_max_vectors:
            ivf = IVFIndex.cluster(rows)
            return _Loaded(ref.revision, ref.embedding_model, ref.dimension, ivf.ids, ivf.vectors, ivf)
        # Kept rows first in their order, new rows after them: the copy is a few contiguous runs.
        vectors = rows.placed(np.arange(len(rows)))
        return _Loaded(ref.revision, ref.embedding_model, ref.dimension, rows.ids, vectors, None)

    def forget(self, dataset_id: int) -> None:
        with self._lock:
            self._cache.pop(dataset_id, None)
            self._sorted.pop(dataset_id, None)

    def rescore(self, datasets: Sequence[DatasetRef], ids: Sequence[int], query: np.ndarray) -> list[tuple[int, float]]:
        """Exact cosine similarity to ``query`` of those of ``ids`` in IVF-indexed datasets (embedded, above
        ``exact_max_vectors``), which an IVF search may have missed. An exact search already ranked every
        paragraph, so its datasets give nothing here; neither does PostgreSQL, whose HNSW search is asked for
        as many candidates as it returns (``hnsw.ef_search`` raised to the limit)."""
        wanted = np.unique(np.asarray(list(ids), dtype=np.int64))
        if len(wanted) == 0 or not datasets or self.db.dialect == "postgresql":
            return []
        query = np.asarray(query, dtype=np.float32)
        scored: list[tuple[int, float]] = []
        for ref in datasets:
            loaded = self._load(ref)
            if loaded.ivf is None:
                continue
            rows = self._rows_of(ref.id, loaded.ivf, wanted)
            if loaded.pending is not None and loaded.pending.dead is not None:
                rows = rows[~loaded.pending.dead[rows]]
            scored.extend(zip(loaded.ivf.ids[rows].tolist(), (loaded.ivf.vectors[rows] @ query).tolist(), strict=True))
            if loaded.pending is not None and len(loaded.pending.ids):
                waiting = np.nonzero(np.isin(loaded.pending.ids, wanted))[0]
                pending_scores = loaded.pending.vectors[waiting] @ query
                scored.extend(zip(loaded.pending.ids[waiting].tolist(), pending_scores.tolist(), strict=True))
        return scored

    def _rows_of(self, dataset_id: int, ivf: IVFIndex, wanted: np.ndarray) -> np.ndarray:
        """Rows of ``ivf`` holding the ``wanted`` ids (absent ones skipped). The sorting order is computed once
        per IVF index (an argsort of its ids; 16 MB at 1M rows) and kept beside it."""
        with self._lock:
            cached = self._sorted.get(dataset_id)
        if cached is None or cached[0] is not ivf:
            order = np.argsort(ivf.ids, kind="stable")
            cached = (ivf, order, ivf.ids[order])
            with self._lock:
                self._sorted[dataset_id] = cached
        _, order, ordered = cached
        at = np.searchsorted(ordered, wanted)
        at = at[at < len(ordered)]
        hit = at[np.isin(ordered[at], wanted)]
        return order[hit]

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
                    pending = loaded.pending
                    dead = None if pending is None else pending.dead
                    ids, scores = loaded.ivf.search(query, k, self.ivf_probes, dead)
                    if pending is not None and len(pending.ids):
                        ids = np.concatenate((ids, pending.ids))
                        scores = np.concatenate((scores, pending.vectors @ query))
                    hits.extend(best(ids, scores, k))
                else:
                    hits.extend(top_k(loaded.ids, loaded.vectors, query, k))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:k]
