"""Vector storage on PostgreSQL: the per-dataset HNSW index is used, and too-wide vectors fall back to a scan."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import text

from kbagent.storage import Database, vector_store
from kbagent.storage.datasets import insert_dataset
from kbagent.storage.vector_store import create_vector_index, nearest, write_vectors
from stored_documents import write_document


def test_postgres_vector_search_uses_the_dataset_index(db: Database) -> None:
    if db.dialect != "postgresql":
        pytest.skip("the per-dataset HNSW index exists only on PostgreSQL")
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 3).id
        create_vector_index(session, a, 3)
    _, ids = write_document(db, a, "x", ["one", "two"])
    with db.write() as session:
        write_vectors(session, a, ids, np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    with db.read() as session:
        assert [pid for pid, _ in nearest(session, a, 3, np.array([0, 1, 0], np.float32), 5)] == [ids[1], ids[0]]
        session.execute(text("SET LOCAL enable_seqscan = off"))
        plan = "\n".join(
            r[0]
            for r in session.execute(
                text(
                    f"EXPLAIN SELECT paragraph_id FROM embeddings WHERE dataset_id = {a} AND vector_dims(vector) = 3 "
                    "ORDER BY vector::vector(3) <=> CAST('[1,0,0]' AS vector(3)) LIMIT 5"
                )
            )
        )
    assert f"ix_embeddings_hnsw_{a}" in plan


def test_postgres_vectors_too_wide_for_hnsw_are_searched_exactly(db: Database) -> None:
    with db.write() as session:
        a = insert_dataset(session, "wide", "", "m", 3072).id
        create_vector_index(session, a, 3072)
    _, ids = write_document(db, a, "x", ["one", "two"])
    vectors = np.zeros((2, 3072), dtype=np.float32)
    vectors[0, 0] = vectors[1, 1] = 1.0
    with db.write() as session:
        write_vectors(session, a, ids, vectors)
    if db.dialect != "postgresql":
        pytest.skip("pgvector's HNSW limit applies only on PostgreSQL")
    with db.read() as session:
        assert [pid for pid, _ in nearest(session, a, 3072, vectors[1], 5)] == [ids[1], ids[0]]


def test_load_vectors_reads_every_batch_in_id_order(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_store, "_LOAD_BATCH", 3)  # several batches from a handful of rows
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 3).id
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(8, 3)).astype(np.float32)
    _, ids = write_document(db, a, "x", [f"p{i}" for i in range(8)], vectors=vectors)
    with db.read() as session:
        loaded_ids, matrix = vector_store.load_vectors(session, a, 3)
    assert loaded_ids.tolist() == ids
    assert np.allclose(matrix, vectors)


def test_load_vectors_names_a_paragraph_of_the_wrong_dimension(db: Database) -> None:
    if db.dialect == "postgresql":
        pytest.skip("pgvector stores the dimension with the value; a blob of another width is SQLite's case")
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 4).id
    _, ids = write_document(db, a, "x", ["p0", "p1"], vectors=np.ones((2, 3), dtype=np.float32))
    with db.read() as session, pytest.raises(ValueError, match=f"paragraph {ids[0]} has a 3-dimension vector"):
        vector_store.load_vectors(session, a, 4)
