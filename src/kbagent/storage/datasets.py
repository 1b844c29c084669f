"""Dataset rows: create, find, list with counts, delete, and the revision that the search indexes' caches watch."""

from __future__ import annotations

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kbagent.errors import Conflict
from kbagent.storage.tables import Dataset, Document, Paragraph


def insert_dataset(session: Session, name: str, description: str, model: str, dimension: int) -> Dataset:
    """Add a dataset; ``Conflict`` when the name is taken."""
    if dataset_by_name(session, name) is not None:
        raise Conflict(f"dataset {name!r} already exists")
    row = Dataset(name=name, description=description, embedding_model=model, embedding_dim=dimension, revision=0)
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:  # another process created it between the check and the insert
        raise Conflict(f"dataset {name!r} already exists") from exc
    return row


def dataset_by_name(session: Session, name: str) -> Dataset | None:
    return session.scalars(select(Dataset).where(Dataset.name == name)).one_or_none()


def datasets_by_names(session: Session, names: list[str]) -> dict[str, Dataset]:
    rows = session.scalars(select(Dataset).where(Dataset.name.in_(names))).all()
    return {row.name: row for row in rows}


def dataset_counts(session: Session, dataset_ids: list[int]) -> dict[int, tuple[int, int]]:
    """(documents, paragraphs) per dataset id."""
    docs = dict(
        session.execute(
            select(Document.dataset_id, func.count())
            .where(Document.dataset_id.in_(dataset_ids))
            .group_by(Document.dataset_id)
        ).all()
    )
    paras = dict(
        session.execute(
            select(Paragraph.dataset_id, func.count())
            .where(Paragraph.dataset_id.in_(dataset_ids))
            .group_by(Paragraph.dataset_id)
        ).all()
    )
    return {i: (int(docs.get(i, 0)), int(paras.get(i, 0))) for i in dataset_ids}


def all_datasets(session: Session) -> list[Dataset]:
    return list(session.scalars(select(Dataset).order_by(Dataset.name)).all())


def delete_dataset(session: Session, dataset_id: int) -> None:
    # Paragraphs, embeddings, documents and jobs go with it through ON DELETE CASCADE.
    session.execute(delete(Dataset).where(Dataset.id == dataset_id))


def bump_revision(session: Session, dataset_id: int) -> None:
    """Mark the dataset changed: the in-process keyword and vector indexes catch up on its next search."""
    session.execute(update(Dataset).where(Dataset.id == dataset_id).values(revision=Dataset.revision + 1))


def set_embedding_model(session: Session, dataset_id: int, model: str, dimension: int) -> None:
    session.execute(
        update(Dataset)
        .where(Dataset.id == dataset_id)
        .values(embedding_model=model, embedding_dim=dimension, revision=Dataset.revision + 1)
    )
