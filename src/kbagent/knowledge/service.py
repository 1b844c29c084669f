"""The knowledge base's public face: datasets, ingestion, documents, re-embedding and search.

Everything above ``knowledge`` (CLI, API, agent, evaluation, benchmarks) goes through ``KnowledgeBase``.
It is built once per process from the database handle, the settings and an embedding provider, and is
safe to share between threads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

import numpy as np
from sqlalchemy.orm import Session

from kbagent.errors import EmbeddingMismatch, InvalidInput, NotFound
from kbagent.knowledge.analysis import analyze
from kbagent.knowledge.embeddings import EmbeddingProvider, cached_passage_vectors
from kbagent.knowledge.ingest import Ingestion, embedding_text
from kbagent.knowledge.keyword_index import KeywordIndex
from kbagent.knowledge.records import (
    DatasetInfo,
    DatasetRef,
    DocumentInfo,
    IngestReport,
    ParagraphRecord,
    Progress,
    SearchHit,
    SourceDocument,
)
from kbagent.knowledge.search import check_request, search_paragraphs
from kbagent.knowledge.vector_index import VectorIndex
from kbagent.settings import Settings
from kbagent.storage import Database, vector_store
from kbagent.storage import datasets as dataset_rows
from kbagent.storage import documents as document_rows
from kbagent.storage.paragraphs import iter_paragraph_texts, paragraph_rows
from kbagent.storage.tables import Dataset, Document

_NAME = re.compile(r"^[\w.\-]{1,128}$")

# What a dataset built without an embedding model records: it serves keyword search only.
KEYWORD_ONLY_MODEL = ""


def _document_info(dataset: str, row: Document) -> DocumentInfo:
    return DocumentInfo(
        id=row.id,
        dataset=dataset,
        name=row.name,
        source=row.source,
        format=row.format,
        size_bytes=row.size_bytes,
        paragraph_count=row.paragraph_count,
        content_hash=row.content_hash,
        updated_at=row.updated_at,
    )


class KnowledgeBase:
    """``embedder`` None builds a keyword-only knowledge base: its datasets store no vectors and serve only
    keyword search (the evaluation uses it to measure BM25 without running the model)."""

    def __init__(self, db: Database, settings: Settings, embedder: EmbeddingProvider | None) -> None:
        self.db = db
        self.settings = settings
        self.embedder = embedder
        self.keywords = KeywordIndex(db)
        self.vectors = VectorIndex(
            db, exact_max_vectors=settings.search.exact_max_vectors, ivf_probes=settings.search.ivf_probes
        )

    # -- datasets -----------------------------------------------------------------------------------

    def create_dataset(self, name: str, description: str = "") -> DatasetInfo:
        """A new, empty dataset recording the current embedding model and dimension.
        ``InvalidInput`` for a bad name, ``Conflict`` when it exists."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidInput(
                "dataset", f"name {name!r} must be 1 to 128 letters, digits, '_', '-' or '.' (no spaces)"
            )
        model, dimension = self._model()
        with self.db.write() as session:
            row = dataset_rows.insert_dataset(session, name, description, model, dimension)
            if dimension:
                vector_store.create_vector_index(session, row.id, dimension)
        return self.get_dataset(name)

    def get_dataset(self, name: str) -> DatasetInfo:
        with self.db.read() as session:
            row = self._dataset(session, name)
            counts = dataset_rows.dataset_counts(session, [row.id])
        return self._info(row, counts[row.id])

    def list_datasets(self) -> list[DatasetInfo]:
        with self.db.read() as session:
            rows = dataset_rows.all_datasets(session)
            counts = dataset_rows.dataset_counts(session, [r.id for r in rows])
        return [self._info(r, counts[r.id]) for r in rows]

    def delete_dataset(self, name: str) -> None:
        """Remove the dataset with all its documents, paragraphs, vectors and ingest jobs."""
        with self.db.write() as session:
            row = self._dataset(session, name)
            vector_store.drop_vector_index(session, row.id)
            dataset_rows.delete_dataset(session, row.id)
        self.keywords.forget(row.id)
        self.vectors.forget(row.id)

    # -- ingestion ----------------------------------------------------------------------------------

    def ingest_paths(
        self,
        dataset: str,
        paths: Iterable[str | os.PathLike[str]],
        progress: Progress | None = None,
        password: str | None = None,
    ) -> IngestReport:
        """Ingest files and folders (walked recursively). Unchanged files are skipped by content hash; a
        changed file replaces its paragraphs; a file that fails is listed in ``report.failures`` with its
        reason and the others carry on. ``progress(done_files, total_files, what)`` is also called inside
        slow files (PDF pages, OCR) without advancing the file count. ``password`` opens encrypted PDFs."""
        if isinstance(paths, str | os.PathLike):  # one path, not an iterable of its characters
            paths = [paths]
        row = self._checked_dataset(dataset)
        ingestion = Ingestion(self.db, self.settings, self.embedder, row.id, row.name, progress, password)
        return ingestion.run_paths(paths)

    def ingest_documents(
        self,
        dataset: str,
        docs: Iterable[SourceDocument],
        progress: Progress | None = None,
        total: int | None = None,
    ) -> IngestReport:
        """Bulk path for already-parsed documents (e.g. a BEIR corpus): same skipping, replacing and
        batching as files. Pass ``total`` to stream ``docs`` without materialising them."""
        row = self._checked_dataset(dataset)
        return Ingestion(self.db, self.settings, self.embedder, row.id, row.name, progress).run_documents(docs, total)

    # -- documents ----------------------------------------------------------------------------------

    def list_documents(self, dataset: str) -> list[DocumentInfo]:
        with self.db.read() as session:
            row = self._dataset(session, dataset)
            return [_document_info(row.name, d) for d in document_rows.list_documents(session, row.id)]

    def delete_document(self, dataset: str, document: int | str) -> DocumentInfo:
        """Remove one document (by source, or by id) from the dataset and from every index."""
        with self.db.write() as session:
            row = self._dataset(session, dataset)
            found = None
            if isinstance(document, str):
                found = document_rows.document_by_source(session, row.id, document)
                if found is None:
                    found = document_rows.document_by_source(session, row.id, os.path.abspath(document))
            if found is None and (isinstance(document, int) or str(document).isdigit()):
                found = document_rows.document_by_id(session, row.id, int(document))
            if found is None:
                raise NotFound(
                    f"document {document!r} is not in dataset {dataset!r}; "
                    f"`kbagent document list --dataset {dataset}` shows ids and sources"
                )
            info = _document_info(row.name, found)
            document_rows.delete_document(session, found.id)
            dataset_rows.bump_revision(session, row.id)
        return info

    def reembed(self, dataset: str, progress: Progress | None = None) -> DatasetInfo:
        """Rebuild every vector of the dataset with the current embedder and record its model and
        dimension. The old vectors stay searchable until the new ones replace them in one transaction.
        ``progress(done_paragraphs, total_paragraphs, "embedding")``."""
        if self.embedder is None:
            raise InvalidInput("embedding", "no embedding model is configured; reembed needs one")
        embedder = self.embedder
        with self.db.read() as session:
            row = self._dataset(session, dataset)
            items = [item for batch in iter_paragraph_texts(session, row.id) for item in batch]
        total = len(items)
        model, dimension = embedder.model, embedder.dimension
        step = max(1, self.settings.embedding.batch_size * 8)
        parts = []
        if progress is not None:
            progress(0, total, "embedding")
        for start in range(0, total, step):
            batch = items[start : start + step]
            parts.append(cached_passage_vectors(self.db, embedder, [embedding_text(t, c) for _, t, c in batch]))
            if progress is not None:
                progress(min(start + step, total), total, "embedding")
        vectors = np.vstack(parts) if parts else np.zeros((0, dimension), dtype=np.float32)
        with self.db.write() as session:
            vector_store.drop_vector_index(session, row.id)
            vector_store.delete_vectors(session, row.id)
            vector_store.write_vectors(session, row.id, [pid for pid, _, _ in items], vectors)
            dataset_rows.set_embedding_model(session, row.id, model, dimension)
            vector_store.create_vector_index(session, row.id, dimension)
        self.keywords.forget(row.id)
        self.vectors.forget(row.id)
        return self.get_dataset(dataset)

    # -- search -------------------------------------------------------------------------------------

    def search(
        self,
        datasets: Sequence[str],
        query: str,
        top_k: int | None = None,
        mode: str | None = None,
        *,
        query_vector: np.ndarray | None = None,
    ) -> list[SearchHit]:
        """The best ``top_k`` paragraphs (default ``search.top_k``) for ``query`` across ``datasets``.
        ``mode``: hybrid (default ``search.mode``), keyword or vector. Raises ``InvalidInput`` for an empty
        or too long query or top_k outside 1..search.max_top_k, ``NotFound`` for an unknown dataset and
        ``EmbeddingMismatch`` when a dataset's vectors come from another model (vector and hybrid modes).
        ``query_vector``: a query embedded beforehand (benchmarks time the model separately)."""
        names = [datasets] if isinstance(datasets, str) else list(dict.fromkeys(datasets))
        if not names:
            raise InvalidInput("datasets", "name at least one dataset to search")
        query, k, chosen = check_request(self.settings.search, query, top_k, mode)
        with self.db.read() as session:
            found = dataset_rows.datasets_by_names(session, names)
        missing = [n for n in names if n not in found]
        if missing:
            raise NotFound(f"dataset {missing[0]!r} does not exist; `kbagent dataset list` shows the datasets")
        rows = [found[n] for n in names]
        if chosen != "keyword":
            if self.embedder is None:
                raise InvalidInput("mode", f"{chosen} search needs an embedding model; this one is keyword-only")
            for row in rows:
                self._check_embedding(row)
        refs = [DatasetRef(r.id, r.revision, r.embedding_dim, r.embedding_model) for r in rows]
        return search_paragraphs(
            db=self.db,
            settings=self.settings.search,
            embedder=self.embedder,
            keywords=self.keywords,
            vectors=self.vectors,
            analyze=analyze,
            datasets=refs,
            query=query,
            top_k=k,
            mode=chosen,
            query_vector=query_vector,
        )

    def paragraphs(self, ids: Sequence[int]) -> list[ParagraphRecord]:
        """Paragraph records in the order of ``ids``; ids that no longer exist are left out."""
        with self.db.read() as session:
            rows = paragraph_rows(session, list(ids))
        return [r for r in (rows.get(i) for i in ids) if r is not None]

    # -- helpers ------------------------------------------------------------------------------------

    @staticmethod
    def _dataset(session: Session, name: str) -> Dataset:
        row = dataset_rows.dataset_by_name(session, name)
        if row is None:
            raise NotFound(
                f"dataset {name!r} does not exist; create it with `kbagent dataset create {name}` "
                "or see `kbagent dataset list`"
            )
        return row

    def _checked_dataset(self, name: str) -> Dataset:
        with self.db.read() as session:
            row = self._dataset(session, name)
        self._check_embedding(row)
        return row

    def _model(self) -> tuple[str, int]:
        if self.embedder is None:
            return KEYWORD_ONLY_MODEL, 0
        return self.embedder.model, self.embedder.dimension

    def _check_embedding(self, row: Dataset) -> None:
        model, dimension = self._model()
        if row.embedding_model != model or row.embedding_dim != dimension:
            held = (
                f"vectors of {row.embedding_model} ({row.embedding_dim} dimensions)"
                if row.embedding_dim
                else "no vectors (it was built keyword-only)"
            )
            configured = f"{model} ({dimension} dimensions)" if dimension else "none (keyword-only)"
            raise EmbeddingMismatch(
                f"dataset {row.name!r} holds {held}, but the configured embedding model is {configured}; "
                f"run `kbagent reembed {row.name}` to rebuild its vectors with the configured model"
            )

    @staticmethod
    def _info(row: Dataset, counts: tuple[int, int]) -> DatasetInfo:
        return DatasetInfo(
            id=row.id,
            name=row.name,
            description=row.description,
            embedding_model=row.embedding_model,
            embedding_dim=row.embedding_dim,
            document_count=counts[0],
            paragraph_count=counts[1],
            revision=row.revision,
            created_at=row.created_at,
        )
