"""The IVF index for large embedded datasets: exact when every list is probed, close when few are."""

from __future__ import annotations

import numpy as np

from kbagent.knowledge.embeddings import normalise
from kbagent.knowledge.ivf import IVFIndex
from kbagent.knowledge.vector_index import best, top_k


def clustered(n: int, dim: int = 32, clusters: int = 50, seed: int = 1) -> np.ndarray:
    """Unit vectors around a few topics, as real paragraph embeddings are (random noise has no neighbours)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    return normalise(centres[rng.integers(0, clusters, n)] + 0.35 * rng.normal(size=(n, dim)))


def test_probing_every_list_is_exact() -> None:
    vectors = clustered(4000)
    ids = np.arange(10, 4010, dtype=np.int64)
    index = IVFIndex.build(ids, vectors)
    assert sorted(index.ids.tolist()) == ids.tolist()  # every row lands in exactly one list
    lists = len(index.centroids)
    assert lists == int(np.sqrt(4000) / 4)
    for query in clustered(20, seed=2):
        found = best(*index.search(query, 10, probes=lists), 10)
        expected = top_k(ids, vectors, query, 10)
        assert [i for i, _ in found] == [i for i, _ in expected]
        assert np.allclose([s for _, s in found], [s for _, s in expected], atol=1e-5)


def test_few_probes_keep_most_true_neighbours() -> None:
    vectors = clustered(20_000)
    ids = np.arange(20_000, dtype=np.int64)
    index = IVFIndex.build(ids, vectors)
    recalls = []
    for query in clustered(50, seed=3):
        exact = {i for i, _ in top_k(ids, vectors, query, 10)}
        approx = {i for i, _ in best(*index.search(query, 10, probes=12), 10)}
        recalls.append(len(exact & approx) / 10)
    # 12 of 35 lists read (about a third of the rows), yet nearly all true neighbours are found.
    # (Measured on this data: probes 2/4/8/12 gave recall@10 0.66/0.81/0.89/0.98.)
    assert np.mean(recalls) >= 0.95
