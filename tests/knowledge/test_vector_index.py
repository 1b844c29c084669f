"""Exact top-k and the in-process matrix cache keyed by dataset revision."""

from __future__ import annotations

import numpy as np

from kbagent.knowledge.records import DatasetRef
from kbagent.knowledge.vector_index import VectorIndex, top_k
from kbagent.storage import Database
from kbagent.storage.datasets import bump_revision, insert_dataset
from kbagent.storage.documents import save_document
from kbagent.storage.paragraphs import replace_paragraphs
from kbagent.storage.vector_store import write_vectors


def test_top_k_matches_a_full_sort() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(500, 16)).astype(np.float32)
    ids = np.arange(1000, 1500, dtype=np.int64)
    query = rng.normal(size=16).astype(np.float32)
    expected = sorted(zip(ids.tolist(), (vectors @ query).tolist(), strict=True), key=lambda x: -x[1])[:10]
    got = top_k(ids, vectors, query, 10)
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert np.allclose([s for _, s in got], [s for _, s in expected])
    assert len(top_k(ids, vectors, query, 900)) == 500
    assert top_k(ids[:0], vectors[:0], query, 5) == []


def test_ties_are_broken_by_id() -> None:
    vectors = np.ones((4, 2), dtype=np.float32)
    assert [i for i, _ in top_k(np.array([9, 3, 7, 1]), vectors, np.ones(2, np.float32), 3)] == [1, 3, 7]


def _add(db: Database, dataset_id: int, source: str, vector: list[float]) -> int:
    with db.write() as session:
        doc = save_document(
            session,
            dataset_id=dataset_id,
            document_id=None,
            name=source,
            source=source,
            content_hash="h",
            size_bytes=1,
            format="txt",
            paragraph_count=1,
            meta={},
        )
        row = {"position": 0, "title_path": [], "content": source, "search_text": source, "token_count": 1,
               "page": None, "ocr": False, "meta": {}}  # fmt: skip
        ids = replace_paragraphs(session, dataset_id=dataset_id, document_id=doc, rows=[row])
        write_vectors(session, dataset_id, ids, np.array([vector], dtype=np.float32))
        bump_revision(session, dataset_id)
    return ids[0]


def test_index_sees_new_vectors_after_a_revision_bump(db: Database) -> None:
    with db.write() as session:
        ds = insert_dataset(session, "v", "", "m", 2)
    index = VectorIndex(db)
    first = _add(db, ds.id, "east", [1.0, 0.0])
    ref = DatasetRef(ds.id, 1, 2)
    assert index.search([ref], np.array([0.0, 1.0], np.float32), 5) == [(first, 0.0)]
    second = _add(db, ds.id, "north", [0.0, 1.0])
    hits = index.search([DatasetRef(ds.id, 2, 2)], np.array([0.0, 1.0], np.float32), 5)
    assert [pid for pid, _ in hits] == [second, first]
    assert hits[0][1] > 0.99


def test_large_dataset_switches_to_ivf_and_still_finds_the_nearest(db: Database) -> None:
    with db.write() as session:
        ds = insert_dataset(session, "big", "", "m", 2)
    points = [[1.0, 0.0], [0.0, 1.0], [0.7071, 0.7071], [-1.0, 0.0], [0.0, -1.0]]
    ids = [_add(db, ds.id, f"p{i}", p) for i, p in enumerate(points)]
    ref = DatasetRef(ds.id, len(points), 2)
    exact = VectorIndex(db).search([ref], np.array([0.6, 0.8], np.float32), 2)
    approx_index = VectorIndex(db, exact_max_vectors=3, ivf_probes=100)
    assert approx_index.search([ref], np.array([0.6, 0.8], np.float32), 2) == exact
    assert approx_index._load(ref).ivf is not None
    assert [pid for pid, _ in exact] == [ids[2], ids[1]]


def test_concurrent_first_searches_load_the_matrix_once(db: Database) -> None:
    import threading

    import pytest

    if db.dialect == "postgresql":
        pytest.skip("on PostgreSQL pgvector searches; no matrix is loaded in-process")

    with db.write() as session:
        ds = insert_dataset(session, "c", "", "m", 2)
    pid = _add(db, ds.id, "east", [1.0, 0.0])
    ref = DatasetRef(ds.id, 1, 2)
    index = VectorIndex(db)
    reads = []
    original = index._read

    def counting_read(r: DatasetRef):  # type: ignore[no-untyped-def]
        reads.append(r)
        return original(r)

    index._read = counting_read  # type: ignore[method-assign]
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(index.search([ref], np.array([1.0, 0.0], np.float32), 1)))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reads) == 1
    assert results == [[(pid, 1.0)]] * 8
