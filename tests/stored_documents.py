"""Writing documents straight through the storage layer, for tests of the indexes below the ingest pipeline."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbagent.knowledge.analysis import analyzed_text
from kbagent.storage import Database
from kbagent.storage.datasets import bump_revision
from kbagent.storage.documents import save_document
from kbagent.storage.paragraphs import replace_paragraphs
from kbagent.storage.vector_store import write_vectors


def write_document(
    db: Database,
    dataset_id: int,
    source: str,
    contents: Sequence[str],
    *,
    document_id: int | None = None,
    vectors: np.ndarray | None = None,
) -> tuple[int, list[int]]:
    """Write (or, given its id, rewrite: new paragraph ids) a document with one paragraph per text, analysed
    for the keyword index, with ``vectors`` when given, and bump the dataset's revision as ingestion does.
    Returns (document id, paragraph ids)."""
    with db.write() as session:
        doc = save_document(
            session,
            dataset_id=dataset_id,
            document_id=document_id,
            name=source,
            source=source,
            content_hash=source,
            size_bytes=1,
            format="txt",
            paragraph_count=len(contents),
            meta={},
        )
        rows = [
            {"position": i, "title_path": [], "content": text, "search_text": analyzed_text(text), "token_count": 1,
             "page": None, "ocr": False, "meta": {}}
            for i, text in enumerate(contents)
        ]  # fmt: skip
        ids = replace_paragraphs(session, dataset_id=dataset_id, document_id=doc, rows=rows)
        if vectors is not None:
            write_vectors(session, dataset_id, ids, vectors)
        bump_revision(session, dataset_id)
        return doc, ids
