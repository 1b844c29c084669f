"""An inverted-file (IVF) approximate index for large embedded datasets, in numpy.

Exact search reads the whole matrix for every query (1M x 384 float32 is 1.5 GB of memory traffic); above
``search.exact_max_vectors`` vectors a dataset is instead clustered with spherical k-means into about
sqrt(n)/4 lists, its rows reordered so each list is one contiguous slice, and a query scores only the rows
of the ``search.ivf_probes`` lists whose centroids are nearest to it. Those rows are scored exactly, so the
only approximation is which lists are read: a true neighbour sitting in an unprobed list is missed.

A change to the dataset does not re-cluster: ``IVFIndex.updated`` keeps the centroids, drops the removed
rows and files each new row under its nearest centroid, so every row still sits in its nearest list and the
search stays as exact as above. Only the balance of the lists drifts, which is why the caller re-clusters
once the rows changed since the last full build reach a fraction of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

# Training sample per list, k-means rounds, and rows assigned per matmul block (bounds temporary memory).
_SAMPLE_PER_LIST = 40
_ROUNDS = 8
_BLOCK = 65_536
# Rows per block when rows are gathered by index (a temporary of 16k x 384 float32 = 25 MB).
_COPY_BLOCK = 16_384
# Copy slice by slice while runs of consecutive rows average at least this many rows; below that the
# Python loop would cost more than numpy's gather.
_MIN_RUN = 64


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


def _assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    labels = np.empty(len(vectors), dtype=np.int32)
    for start in range(0, len(vectors), _BLOCK):
        labels[start : start + _BLOCK] = np.argmax(vectors[start : start + _BLOCK] @ centroids.T, axis=1)
    return labels


def _copy_rows(source: np.ndarray, rows: np.ndarray, out: np.ndarray, to: np.ndarray) -> None:
    """out[to[i]] = source[rows[i]] for every i, without a temporary the size of the whole selection."""
    if len(rows) == 0:
        return
    breaks = np.nonzero((np.diff(rows) != 1) | (np.diff(to) != 1))[0] + 1
    if len(breaks) + 1 <= len(rows) // _MIN_RUN:
        # An update keeps almost every row in place: a few hundred contiguous runs, each one memcpy.
        starts = np.concatenate(([0], breaks)).tolist()
        ends = np.concatenate((breaks, [len(rows)])).tolist()
        for a, b in zip(starts, ends, strict=True):
            src, dst = int(rows[a]), int(to[a])
            out[dst : dst + b - a] = source[src : src + b - a]
        return
    for start in range(0, len(rows), _COPY_BLOCK):
        end = start + _COPY_BLOCK
        out[to[start:end]] = source[rows[start:end]]


@dataclass(frozen=True)
class Rows:
    """The rows of a dataset after a change, described without copying them together: the kept rows of the
    previous matrix (``old_vectors[keep]``, in that order) followed by the new rows. The new index is
    written straight from this into one new matrix, so memory holds the previous matrix (which concurrent
    searches may still be reading) and the new one, never a third, merged copy."""

    old_ids: np.ndarray
    old_vectors: np.ndarray
    keep: np.ndarray  # row positions in old_vectors, ascending
    new_ids: np.ndarray
    new_vectors: np.ndarray

    @classmethod
    def of(cls, ids: np.ndarray, vectors: np.ndarray) -> Rows:
        """Every row of one matrix."""
        empty = np.zeros((0, vectors.shape[1]), dtype=np.float32)
        return cls(ids, vectors, np.arange(len(ids)), np.zeros(0, dtype=np.int64), empty)

    def __len__(self) -> int:
        return len(self.keep) + len(self.new_ids)

    @property
    def ids(self) -> np.ndarray:
        return np.concatenate((self.old_ids[self.keep], self.new_ids)).astype(np.int64, copy=False)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The rows at ``positions`` (any order), as a new matrix."""
        kept = len(self.keep)
        out = np.empty((len(positions), self.old_vectors.shape[1]), dtype=np.float32)
        old = positions < kept
        out[old] = self.old_vectors[self.keep[positions[old]]]
        out[~old] = self.new_vectors[positions[~old] - kept]
        return out

    def blocks(self, size: int = _BLOCK) -> Iterator[np.ndarray]:
        """All rows in order, a block at a time (views of the previous matrix where its rows are contiguous)."""
        kept = len(self.keep)
        for start in range(0, kept, size):
            rows = self.keep[start : start + size]
            if rows[-1] - rows[0] == len(rows) - 1:
                yield self.old_vectors[rows[0] : rows[-1] + 1]
            else:
                yield self.old_vectors[rows]
        for start in range(0, len(self.new_ids), size):
            yield self.new_vectors[start : start + size]

    def placed(self, to: np.ndarray) -> np.ndarray:
        """A new contiguous matrix holding row i at position ``to[i]`` (``to`` a permutation of the rows)."""
        kept = len(self.keep)
        out = np.empty((len(self), self.old_vectors.shape[1]), dtype=np.float32)
        _copy_rows(self.old_vectors, self.keep, out, to[:kept])
        _copy_rows(self.new_vectors, np.arange(len(self.new_ids)), out, to[kept:])
        return out


@dataclass(frozen=True)
class IVFIndex:
    """Never changed once built (searches read it without a lock); ``updated`` returns a new index."""

    centroids: np.ndarray  # (lists, dim), unit rows
    offsets: np.ndarray  # (lists + 1,): list j is rows offsets[j]:offsets[j+1]
    ids: np.ndarray  # paragraph ids, reordered by list
    vectors: np.ndarray  # rows reordered by list
    built_rows: int  # rows at the last full clustering
    changed_rows: int = 0  # rows added or removed by ``updated`` since then

    @classmethod
    def build(cls, ids: np.ndarray, vectors: np.ndarray, seed: int = 0) -> IVFIndex:
        """Cluster and reorder. Deterministic for a given input (fixed seed)."""
        return cls.cluster(Rows.of(ids, vectors), seed)

    @classmethod
    def cluster(cls, rows: Rows, seed: int = 0) -> IVFIndex:
        """Cluster ``rows`` from scratch (new centroids) into a new index. Deterministic for a given input."""
        n = len(rows)
        lists = max(1, min(n, int(np.sqrt(n) / 4)))
        rng = np.random.default_rng(seed)
        sample = rows.take(rng.choice(n, size=min(n, lists * _SAMPLE_PER_LIST), replace=False))
        centroids = sample[rng.choice(len(sample), size=lists, replace=False)].copy()
        for _ in range(_ROUNDS):
            labels = _assign(sample, centroids)
            sums = np.zeros_like(centroids)
            np.add.at(sums, labels, sample)
            empty = np.bincount(labels, minlength=lists) == 0
            # An empty list takes a random sample row, so no centroid is wasted.
            sums[empty] = sample[rng.choice(len(sample), size=int(empty.sum()))]
            centroids = _normalise(sums)
        labels = np.concatenate([_assign(block, centroids) for block in rows.blocks()] or [np.zeros(0, np.int32)])
        return cls._arranged(centroids, rows, labels, built_rows=n, changed_rows=0)

    def updated(self, removed_ids: np.ndarray, new_ids: np.ndarray, new_vectors: np.ndarray) -> IVFIndex:
        """A new index without ``removed_ids`` and with each new row in the list of its nearest centroid.
        The centroids are kept; this index is not modified (concurrent searches may be reading it)."""
        keep = np.nonzero(~np.isin(self.ids, removed_ids))[0]
        rows = Rows(self.ids, self.vectors, keep, np.asarray(new_ids, dtype=np.int64), new_vectors)
        lists = np.arange(len(self.centroids), dtype=np.int32)
        old_labels = np.repeat(lists, np.diff(self.offsets))[keep]
        labels = np.concatenate((old_labels, _assign(new_vectors, self.centroids)))
        changed = self.changed_rows + (len(self.ids) - len(keep)) + len(new_ids)
        return self._arranged(self.centroids, rows, labels, built_rows=self.built_rows, changed_rows=changed)

    @classmethod
    def _arranged(
        cls, centroids: np.ndarray, rows: Rows, labels: np.ndarray, *, built_rows: int, changed_rows: int
    ) -> IVFIndex:
        # Stable: within a list, kept rows keep their order and new rows follow, so an update's copy is a
        # few long contiguous runs.
        order = np.argsort(labels, kind="stable")
        to = np.empty(len(order), dtype=np.int64)
        to[order] = np.arange(len(order))
        counts = np.bincount(labels, minlength=len(centroids))
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(centroids, offsets, rows.ids[order], rows.placed(to), built_rows, changed_rows)

    def search(
        self, query: np.ndarray, k: int, probes: int, excluded: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores) of the rows in the ``probes`` nearest lists, unsorted; the caller takes the top k.
        ``excluded``: one flag per row of this index (in its order); flagged rows are left out."""
        probes = max(1, min(probes, len(self.centroids)))
        nearest = np.argpartition(-(self.centroids @ query), probes - 1)[:probes]
        id_parts, score_parts = [], []
        for j in nearest:
            start, end = self.offsets[j], self.offsets[j + 1]
            if end > start:
                # Slices are views: each probed list is scored in place, never copied.
                scores, ids = self.vectors[start:end] @ query, self.ids[start:end]
                if excluded is not None:
                    alive = ~excluded[start:end]
                    scores, ids = scores[alive], ids[alive]
                score_parts.append(scores)
                id_parts.append(ids)
        if not id_parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return np.concatenate(id_parts), np.concatenate(score_parts)
