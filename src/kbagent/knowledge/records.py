"""The typed records the knowledge base hands to its callers (CLI, API, agent, evaluation)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from kbagent.knowledge.parsers.base import ParsedDocument
from kbagent.storage.paragraphs import ParagraphRow

SearchMode = Literal["hybrid", "keyword", "vector"]

# progress(done, total, what): done/total in files (ingest) or paragraphs (reembed).
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class DatasetRef:
    """What the search indexes need of a dataset: which one, the revision their caches are checked against
    (bumped by every change to its paragraphs or vectors), the vector dimension and the embedding model
    (``reembed`` replaces every vector under the same paragraph ids, so a cache built from another model's
    vectors must be reloaded whole rather than synced)."""

    id: int
    revision: int
    dimension: int
    embedding_model: str


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    name: str
    description: str
    embedding_model: str
    embedding_dim: int
    document_count: int
    paragraph_count: int
    revision: int
    created_at: datetime


@dataclass(frozen=True)
class DocumentInfo:
    id: int
    dataset: str
    name: str
    source: str
    format: str
    size_bytes: int
    paragraph_count: int
    content_hash: str
    updated_at: datetime


# A stored paragraph with its dataset and document names: storage's row is exactly the record callers need.
ParagraphRecord = ParagraphRow


@dataclass(frozen=True)
class SearchHit:
    """One search result. ``score`` orders the list (fused in hybrid mode); ``keyword_score`` and
    ``vector_score`` are the raw scores of each index (None when the paragraph was not among that
    index's candidates). Keyword scores are BM25 on SQLite (tantivy) and idf-weighted ts_rank on
    PostgreSQL: compare them only within one result list."""

    paragraph_id: int
    dataset: str
    document_id: int
    document_name: str
    title_path: tuple[str, ...]
    content: str
    page: int | None
    ocr: bool
    score: float
    keyword_score: float | None
    vector_score: float | None


@dataclass(frozen=True)
class SourceDocument:
    """An already-parsed document for ``KnowledgeBase.ingest_documents``. ``source`` identifies it within
    the dataset (re-ingesting the same source replaces it, or skips it when its text is unchanged)."""

    source: str
    name: str
    parsed: ParsedDocument


@dataclass(frozen=True)
class IngestFailure:
    source: str
    reason: str


@dataclass
class IngestReport:
    job_id: int
    dataset: str
    added: int = 0
    updated: int = 0
    skipped: int = 0
    paragraphs: int = 0
    failures: list[IngestFailure] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def ok(self) -> bool:
        return not self.failures
