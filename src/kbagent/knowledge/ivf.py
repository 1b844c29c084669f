"""An inverted-file (IVF) approximate index for large embedded datasets, in numpy.

Exact search reads the whole matrix for every query (1M x 384 float32 is 1.5 GB of memory traffic); above
``search.exact_max_vectors`` vectors a dataset is instead clustered with spherical k-means into about
sqrt(n)/4 lists, its rows reordered so each list is one contiguous slice, and a query scores only the rows
of the ``search.ivf_probes`` lists whose centroids are nearest to it. Those rows are scored exactly, so the
only approximation is which lists are read: a true neighbour sitting in an unprobed list is missed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Training sample per list, k-means rounds, and rows assigned per matmul block (bounds temporary memory).
_SAMPLE_PER_LIST = 40
_ROUNDS = 8
_BLOCK = 65_536


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


def _assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    labels = np.empty(len(vectors), dtype=np.int32)
    for start in range(0, len(vectors), _BLOCK):
        labels[start : start + _BLOCK] = np.argmax(vectors[start : start + _BLOCK] @ centroids.T, axis=1)
    return labels


@dataclass
class IVFIndex:
    centroids: np.ndarray  # (lists, dim), unit rows
    offsets: np.ndarray  # (lists + 1,): list j is rows offsets[j]:offsets[j+1]
    ids: np.ndarray  # paragraph ids, reordered by list
    vectors: np.ndarray  # rows reordered by list

    @classmethod
    def build(cls, ids: np.ndarray, vectors: np.ndarray, seed: int = 0) -> IVFIndex:
        """Cluster and reorder. Deterministic for a given input (fixed seed)."""
        n = len(ids)
        lists = max(1, min(n, int(np.sqrt(n) / 4)))
        rng = np.random.default_rng(seed)
        sample = vectors[rng.choice(n, size=min(n, lists * _SAMPLE_PER_LIST), replace=False)]
        centroids = sample[rng.choice(len(sample), size=lists, replace=False)].copy()
        for _ in range(_ROUNDS):
            labels = _assign(sample, centroids)
            sums = np.zeros_like(centroids)
            np.add.at(sums, labels, sample)
            empty = np.bincount(labels, minlength=lists) == 0
            # An empty list takes a random sample row, so no centroid is wasted.
            sums[empty] = sample[rng.choice(len(sample), size=int(empty.sum()))]
            centroids = _normalise(sums)
        labels = _assign(vectors, centroids)
        order = np.argsort(labels, kind="stable")
        counts = np.bincount(labels, minlength=lists)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(centroids, offsets, ids[order], np.ascontiguousarray(vectors[order]))

    def search(self, query: np.ndarray, k: int, probes: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores) of the rows in the ``probes`` nearest lists, unsorted; the caller takes the top k."""
        probes = max(1, min(probes, len(self.centroids)))
        nearest = np.argpartition(-(self.centroids @ query), probes - 1)[:probes]
        id_parts, score_parts = [], []
        for j in nearest:
            start, end = self.offsets[j], self.offsets[j + 1]
            if end > start:
                # Slices are views: each probed list is scored in place, never copied.
                score_parts.append(self.vectors[start:end] @ query)
                id_parts.append(self.ids[start:end])
        if not id_parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return np.concatenate(id_parts), np.concatenate(score_parts)
