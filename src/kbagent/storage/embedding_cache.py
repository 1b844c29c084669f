"""Vectors by (model, text hash): unchanged text is never sent to the embedding model twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from kbagent.storage.database import in_chunks
from kbagent.storage.tables import EmbeddingCache


def cached_vectors(session: Session, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
    """hash -> float32 bytes for the hashes present in the cache."""
    found: dict[str, bytes] = {}
    unique = list(dict.fromkeys(hashes))
    for chunk in in_chunks(unique):
        rows = session.execute(
            select(EmbeddingCache.text_hash, EmbeddingCache.vector).where(
                EmbeddingCache.model == model, EmbeddingCache.text_hash.in_(chunk)
            )
        ).all()
        found.update({h: bytes(v) for h, v in rows})
    return found


def store_vectors(session: Session, model: str, vectors: Mapping[str, bytes]) -> None:
    """Add entries; an entry already present (written by a concurrent ingest) is kept as is."""
    if not vectors:
        return
    rows = [{"model": model, "text_hash": h, "vector": v} for h, v in vectors.items()]
    dialect = session.get_bind().dialect.name
    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        if dialect == "postgresql":
            session.execute(pg_insert(EmbeddingCache).on_conflict_do_nothing(), chunk)
        else:
            session.execute(sqlite_insert(EmbeddingCache).on_conflict_do_nothing(), chunk)
