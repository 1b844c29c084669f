"""Exact top-k and the in-process matrix that follows the stored vectors by dataset revision."""

from __future__ import annotations

import numpy as np
import pytest

from kbagent.knowledge.records import DatasetRef
from kbagent.knowledge.vector_index import VectorIndex, top_k
from kbagent.storage import Database
from kbagent.storage.datasets import bump_revision, insert_dataset
from kbagent.storage.vector_store import write_vectors
from stored_documents import write_document


def ref_of(db: Database, dataset_id: int) -> DatasetRef:
    """The dataset as a search sees it now (as KnowledgeBase.search builds it)."""
    from kbagent.storage.tables import Dataset

    with db.read() as session:
        row = session.get(Dataset, dataset_id)
        assert row is not None
        return DatasetRef(row.id, row.revision, row.embedding_dim, row.embedding_model)


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
    """One single-paragraph document with ``vector``; returns the paragraph id."""
    vectors = np.array([vector], dtype=np.float32)
    return write_document(db, dataset_id, source, [source], vectors=vectors)[1][0]


def test_index_sees_new_vectors_after_a_revision_bump(db: Database) -> None:
    with db.write() as session:
        ds = insert_dataset(session, "v", "", "m", 2)
    index = VectorIndex(db)
    first = _add(db, ds.id, "east", [1.0, 0.0])
    ref = ref_of(db, ds.id)
    assert index.search([ref], np.array([0.0, 1.0], np.float32), 5) == [(first, 0.0)]
    second = _add(db, ds.id, "north", [0.0, 1.0])
    hits = index.search([ref_of(db, ds.id)], np.array([0.0, 1.0], np.float32), 5)
    assert [pid for pid, _ in hits] == [second, first]
    assert hits[0][1] > 0.99


def test_large_dataset_switches_to_ivf_and_still_finds_the_nearest(db: Database) -> None:
    with db.write() as session:
        ds = insert_dataset(session, "big", "", "m", 2)
    points = [[1.0, 0.0], [0.0, 1.0], [0.7071, 0.7071], [-1.0, 0.0], [0.0, -1.0]]
    ids = [_add(db, ds.id, f"p{i}", p) for i, p in enumerate(points)]
    ref = ref_of(db, ds.id)
    exact = VectorIndex(db).search([ref], np.array([0.6, 0.8], np.float32), 2)
    approx_index = VectorIndex(db, exact_max_vectors=3, ivf_probes=100)
    assert approx_index.search([ref], np.array([0.6, 0.8], np.float32), 2) == exact
    assert approx_index._load(ref).ivf is not None
    assert [pid for pid, _ in exact] == [ids[2], ids[1]]


def test_concurrent_first_searches_load_the_matrix_once(db: Database) -> None:
    import threading

    if db.dialect == "postgresql":
        pytest.skip("on PostgreSQL pgvector searches; no matrix is loaded in-process")

    with db.write() as session:
        ds = insert_dataset(session, "c", "", "m", 2)
    pid = _add(db, ds.id, "east", [1.0, 0.0])
    ref = ref_of(db, ds.id)
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


# -- following changes: the matrix is synced by paragraph ids, not reloaded ------------------------------

DIM = 8


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    vectors = rng.normal(size=(n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def put_document(
    db: Database, dataset_id: int, source: str, vectors: np.ndarray, document_id: int | None = None
) -> tuple[int, list[int]]:
    """Write (or rewrite: new paragraph ids) a document with one paragraph per vector; bumps the revision."""
    contents = [f"{source} {i}" for i in range(len(vectors))]
    return write_document(db, dataset_id, source, contents, document_id=document_id, vectors=vectors)


def drop_document(db: Database, dataset_id: int, document_id: int) -> None:
    from kbagent.storage.documents import delete_document

    with db.write() as session:
        delete_document(session, document_id)
        bump_revision(session, dataset_id)


def count_full_reads(index: VectorIndex) -> list[DatasetRef]:
    """Records every whole-dataset load of ``index`` (as opposed to a sync of the difference)."""
    reads: list[DatasetRef] = []
    original = index._read

    def counting_read(r: DatasetRef):  # type: ignore[no-untyped-def]
        reads.append(r)
        return original(r)

    index._read = counting_read  # type: ignore[method-assign]
    return reads


def same_results(index: VectorIndex, db: Database, dataset_id: int, queries: np.ndarray, k: int) -> None:
    """``index`` answers every query as a freshly built index over the same database does."""
    ref = ref_of(db, dataset_id)
    fresh = VectorIndex(db)
    for query in queries:
        got, expected = index.search([ref], query, k), fresh.search([ref], query, k)
        assert [pid for pid, _ in got] == [pid for pid, _ in expected]
        assert np.allclose([s for _, s in got], [s for _, s in expected], atol=1e-5)


def test_adding_replacing_and_deleting_documents_gives_a_fresh_index_results(db: Database) -> None:
    rng = np.random.default_rng(11)
    with db.write() as session:
        ds = insert_dataset(session, "sync", "", "m", DIM)
    docs = {f"d{i}": put_document(db, ds.id, f"d{i}", unit(rng, 6)) for i in range(10)}
    index = VectorIndex(db)
    reads = count_full_reads(index)
    queries = unit(rng, 12)
    index.search([ref_of(db, ds.id)], queries[0], 5)
    before = index._load(ref_of(db, ds.id)) if db.dialect == "sqlite" else None
    snapshot = (before.ids.copy(), before.vectors.copy()) if before is not None else None

    added_vectors = unit(rng, 4)
    _, added = put_document(db, ds.id, "new", added_vectors)
    replaced_doc, replaced_old = docs["d3"]
    _, replaced_new = put_document(db, ds.id, "d3", unit(rng, 5), document_id=replaced_doc)
    deleted_doc, deleted = docs["d7"]
    drop_document(db, ds.id, deleted_doc)

    ref = ref_of(db, ds.id)
    all_hits = {pid for q in queries for pid, _ in index.search([ref], q, 100)}
    assert set(added) <= all_hits and set(replaced_new) <= all_hits
    assert not all_hits & (set(replaced_old) | set(deleted))
    # A document's own vector finds it first.
    assert index.search([ref], added_vectors[2], 1)[0][0] == added[2]
    same_results(index, db, ds.id, queries, 10)
    same_results(index, db, ds.id, queries, 100)
    if db.dialect == "sqlite":
        assert len(reads) == 1  # only the first search read the whole dataset
        assert before is not None and snapshot is not None
        # The matrix a search may still be reading was never written to.
        assert np.array_equal(before.ids, snapshot[0]) and np.array_equal(before.vectors, snapshot[1])


def test_another_process_writing_the_database_is_seen(db: Database) -> None:
    from kbagent.storage import open_database

    rng = np.random.default_rng(12)
    with db.write() as session:
        ds = insert_dataset(session, "shared", "", "m", DIM)
    doc, first = put_document(db, ds.id, "a", unit(rng, 3))
    index = VectorIndex(db)
    reads = count_full_reads(index)
    index.search([ref_of(db, ds.id)], unit(rng, 1)[0], 3)
    other = open_database(db.url.render_as_string(hide_password=False))  # another process's handle
    try:
        vectors = unit(rng, 2)
        _, second = put_document(other, ds.id, "b", vectors)
        drop_document(other, ds.id, doc)
    finally:
        other.close()
    ref = ref_of(db, ds.id)
    assert {pid for pid, _ in index.search([ref], vectors[0], 10)} == set(second)
    assert index.search([ref], vectors[1], 1)[0][0] == second[1]
    if db.dialect == "sqlite":
        assert len(reads) == 1


def test_a_changed_embedding_model_reloads_every_vector(db: Database) -> None:
    from kbagent.storage.datasets import set_embedding_model
    from kbagent.storage.vector_store import delete_vectors

    rng = np.random.default_rng(13)
    with db.write() as session:
        ds = insert_dataset(session, "model", "", "m1", DIM)
    ids = [pid for i in range(4) for pid in put_document(db, ds.id, f"d{i}", unit(rng, 5))[1]]
    index = VectorIndex(db)
    reads = count_full_reads(index)
    queries = unit(rng, 6)
    index.search([ref_of(db, ds.id)], queries[0], 5)

    def reembed(model: str, dimension: int) -> np.ndarray:
        # What `kbagent reembed` stores: new vectors under the SAME paragraph ids, in one transaction.
        vectors = unit(rng, len(ids), dimension)
        with db.write() as session:
            delete_vectors(session, ds.id)
            write_vectors(session, ds.id, ids, vectors)
            set_embedding_model(session, ds.id, model, dimension)
        return vectors

    vectors = reembed("m2", DIM)
    # The id difference is empty, so only the model tells the index its vectors are stale.
    assert index.search([ref_of(db, ds.id)], vectors[7], 1)[0][0] == ids[7]
    same_results(index, db, ds.id, queries, 20)
    vectors = reembed("m3", 5)
    narrow = unit(rng, 6, 5)
    assert index.search([ref_of(db, ds.id)], vectors[3], 1)[0][0] == ids[3]
    same_results(index, db, ds.id, narrow, 20)
    if db.dialect == "sqlite":
        assert [r.embedding_model for r in reads] == ["m1", "m2", "m3"]


def clustered(rng: np.random.Generator, n: int, topics: np.ndarray) -> np.ndarray:
    """Unit vectors around a few topics, as real embeddings are (random noise has no neighbours)."""
    vectors = topics[rng.integers(0, len(topics), n)] + 0.3 * rng.normal(size=(n, topics.shape[1]))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_ivf_index_holds_changes_aside_then_files_them_and_reclusters_past_a_fifth(db: Database) -> None:
    if db.dialect == "postgresql":
        pytest.skip("on PostgreSQL pgvector searches; no IVF index is built in-process")
    rng = np.random.default_rng(14)
    topics = rng.normal(size=(6, DIM))
    with db.write() as session:
        ds = insert_dataset(session, "ivf", "", "m", DIM)
    docs = {f"d{i}": put_document(db, ds.id, f"d{i}", clustered(rng, 20, topics)) for i in range(30)}  # 600 rows
    index = VectorIndex(db, exact_max_vectors=100, ivf_probes=1, pending_rows=50)
    reads = count_full_reads(index)
    first = index._load(ref_of(db, ds.id)).ivf
    assert first is not None and first.built_rows == 600
    snapshot = (first.ids.copy(), first.vectors.copy(), first.offsets.copy())
    queries = clustered(rng, 10, topics)

    def check(found: list[int], removed: set[int]) -> None:
        ref = ref_of(db, ds.id)
        index.ivf_probes = 1
        # Even reading a single list, a new row is found by its own vector (pending rows are scored exactly;
        # filed rows sit in their nearest list).
        for pid in found:
            assert index.search([ref], vector_of(db, pid), 1)[0][0] == pid
        # Reading every list, the IVF index answers exactly as a fresh exact index, and never a removed row.
        index.ivf_probes = 100
        same_results(index, db, ds.id, queries, 50)
        assert not {pid for q in queries for pid, _ in index.search([ref], q, 1000)} & removed
        assert sorted(index._load(ref).ids.tolist()) == ref_ids(db, ds.id)

    # 40 changed rows (20 new, 20 removed): held aside, the lists untouched.
    _, new_first = put_document(db, ds.id, "new", clustered(rng, 20, topics))
    drop_document(db, ds.id, docs["d5"][0])
    check(new_first, set(docs["d5"][1]))
    loaded = index._load(ref_of(db, ds.id))
    assert loaded.ivf is first and loaded.pending is not None
    assert len(loaded.pending.ids) == 20 and loaded.pending.dead is not None and loaded.pending.dead.sum() == 20

    # 80 pending rows (> 50): filed into the lists under the same centroids (80 < a fifth of 600).
    _, new_again = put_document(db, ds.id, "new", clustered(rng, 10, topics), document_id=docs_id(db, ds.id, "new"))
    drop_document(db, ds.id, docs["d7"][0])
    _, d3_new = put_document(db, ds.id, "d3", clustered(rng, 10, topics), document_id=docs["d3"][0])
    check(new_again + d3_new, set(docs["d5"][1]) | set(docs["d7"][1]) | set(docs["d3"][1]) | set(new_first))
    loaded = index._load(ref_of(db, ds.id))
    ivf = loaded.ivf
    assert ivf is not None and ivf is not first and ivf.centroids is first.centroids and loaded.pending is None
    assert (ivf.built_rows, ivf.changed_rows) == (600, 80)
    assert len(reads) == 1
    assert np.array_equal(first.ids, snapshot[0]) and np.array_equal(first.vectors, snapshot[1])
    assert np.array_equal(first.offsets, snapshot[2])

    # 80 + 40 changed rows reach a fifth of the 600 clustered: the lists are clustered afresh.
    _, more = put_document(db, ds.id, "more", clustered(rng, 40, topics))
    check(more, set())
    again = index._load(ref_of(db, ds.id)).ivf
    assert again is not None and again.centroids is not first.centroids
    assert (again.built_rows, again.changed_rows) == (560 + 40, 0)
    assert len(reads) == 1


def vector_of(db: Database, pid: int) -> np.ndarray:
    from kbagent.storage.vector_store import vectors_by_ids

    with db.read() as session:
        return vectors_by_ids(session, [pid], DIM)[1][0]


def docs_id(db: Database, dataset_id: int, source: str) -> int:
    from kbagent.storage.documents import document_by_source

    with db.read() as session:
        doc = document_by_source(session, dataset_id, source)
        assert doc is not None
        return doc.id


def ref_ids(db: Database, dataset_id: int) -> list[int]:
    from kbagent.storage.vector_store import embedding_ids

    with db.read() as session:
        return embedding_ids(session, dataset_id).tolist()


def test_crossing_the_exact_threshold_switches_modes_both_ways(db: Database) -> None:
    if db.dialect == "postgresql":
        pytest.skip("on PostgreSQL pgvector searches; the exact/IVF switch is the embedded index's")
    rng = np.random.default_rng(15)
    topics = rng.normal(size=(4, DIM))
    with db.write() as session:
        ds = insert_dataset(session, "cross", "", "m", DIM)
    for i in range(4):
        put_document(db, ds.id, f"d{i}", clustered(rng, 10, topics))
    index = VectorIndex(db, exact_max_vectors=50, ivf_probes=100)
    reads = count_full_reads(index)
    queries = clustered(rng, 8, topics)
    assert index._load(ref_of(db, ds.id)).ivf is None  # 40 rows
    doc, _ = put_document(db, ds.id, "grow", clustered(rng, 20, topics))
    assert index._load(ref_of(db, ds.id)).ivf is not None  # 60 rows
    same_results(index, db, ds.id, queries, 60)
    drop_document(db, ds.id, doc)
    assert index._load(ref_of(db, ds.id)).ivf is None  # 40 rows again
    same_results(index, db, ds.id, queries, 60)
    assert len(reads) == 1


def test_stored_vectors_are_read_by_dataset_ids_and_by_paragraph_ids(db: Database) -> None:
    from kbagent.storage.vector_store import embedding_ids, vectors_by_ids

    rng = np.random.default_rng(16)
    with db.write() as session:
        one = insert_dataset(session, "one", "", "m", DIM)
        two = insert_dataset(session, "two", "", "m", DIM)
    vectors = unit(rng, 1000)
    _, ids = put_document(db, one.id, "big", vectors)  # more ids than one IN (...) chunk
    _, other = put_document(db, two.id, "other", unit(rng, 3))
    with db.read() as session:
        assert embedding_ids(session, one.id).tolist() == sorted(ids)
        assert embedding_ids(session, two.id).tolist() == sorted(other)
        wanted = ids[::-1] + [max(ids + other) + 1000]  # any order; an id without a vector is left out
        found, matrix = vectors_by_ids(session, wanted, DIM)
    assert found.tolist() == sorted(ids)
    order = np.argsort(ids)
    assert np.allclose(matrix, vectors[order])


def test_rescore_gives_exact_scores_for_what_an_ivf_search_skipped(db: Database) -> None:
    if db.dialect == "postgresql":
        pytest.skip("on PostgreSQL pgvector searches; there is no in-process IVF index to complete")
    rng = np.random.default_rng(21)
    topics = rng.normal(size=(6, DIM))
    with db.write() as session:
        ds = insert_dataset(session, "rescore", "", "m", DIM)
    ids = [pid for i in range(12) for pid in put_document(db, ds.id, f"d{i}", clustered(rng, 20, topics))[1]]
    exact = VectorIndex(db, exact_max_vectors=10_000)
    ivf = VectorIndex(db, exact_max_vectors=100, ivf_probes=1, pending_rows=50)
    ref = ref_of(db, ds.id)
    query = unit(rng, 1)[0]
    reached = {pid for pid, _ in ivf.search([ref], query, 240)}
    skipped = [pid for pid in ids if pid not in reached]
    assert skipped  # one list of many is read
    truth = dict(exact.search([ref], query, 240))
    rescored = dict(ivf.rescore([ref], skipped + [10**9], query))
    assert set(rescored) == set(skipped)
    assert all(abs(rescored[pid] - truth[pid]) < 1e-5 for pid in skipped)
    assert exact.rescore([ref], skipped, query) == []  # an exact search skipped nothing

    # Rows held aside after a change are scored too; removed ones are not.
    _, added = put_document(db, ds.id, "late", clustered(rng, 5, topics))
    removed = ids[:20]
    drop_document(db, ds.id, docs_id(db, ds.id, "d0"))
    ref = ref_of(db, ds.id)
    rescored = dict(ivf.rescore([ref], added + removed, query))
    assert set(rescored) == set(added)
