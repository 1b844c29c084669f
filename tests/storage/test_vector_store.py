"""Vector storage on PostgreSQL: the per-dataset HNSW index is used, and too-wide vectors fall back to a scan."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import text

from kbagent.storage import Database
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
