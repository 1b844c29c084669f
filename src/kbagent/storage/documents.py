"""Document rows: one per source file (or bulk-loaded passage) in a dataset."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kbagent.storage.tables import Document


def document_by_source(session: Session, dataset_id: int, source: str) -> Document | None:
    return session.scalars(
        select(Document).where(Document.dataset_id == dataset_id, Document.source == source)
    ).one_or_none()


def document_by_id(session: Session, dataset_id: int, document_id: int) -> Document | None:
    return session.scalars(
        select(Document).where(Document.dataset_id == dataset_id, Document.id == document_id)
    ).one_or_none()


def document_hashes(session: Session, dataset_id: int) -> dict[str, tuple[int, str]]:
    """source -> (document id, content hash) for every document of the dataset (skip-unchanged checks)."""
    rows = session.execute(
        select(Document.source, Document.id, Document.content_hash).where(Document.dataset_id == dataset_id)
    ).all()
    return {source: (doc_id, digest) for source, doc_id, digest in rows}


def list_documents(session: Session, dataset_id: int) -> list[Document]:
    return list(session.scalars(select(Document).where(Document.dataset_id == dataset_id).order_by(Document.id)))


def save_document(
    session: Session,
    *,
    dataset_id: int,
    document_id: int | None,
    name: str,
    source: str,
    content_hash: str,
    size_bytes: int,
    format: str,
    paragraph_count: int,
    meta: dict[str, Any],
) -> int:
    """Insert a document, or update the existing row ``document_id`` in place (its id stays stable)."""
    row = session.get(Document, document_id) if document_id is not None else None
    if row is None:
        row = Document(dataset_id=dataset_id, source=source)
        session.add(row)
    row.name = name
    row.content_hash = content_hash
    row.size_bytes = size_bytes
    row.format = format
    row.paragraph_count = paragraph_count
    row.meta = meta
    session.flush()
    return row.id


def delete_document(session: Session, document_id: int) -> None:
    # Paragraphs and their embeddings follow by ON DELETE CASCADE; the caller bumps the dataset revision
    # so the in-process indexes drop them on the next search.
    session.execute(delete(Document).where(Document.id == document_id))
