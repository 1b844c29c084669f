"""SQLAlchemy 2 table definitions. The schema changes only through numbered migrations in ``migrations/``;
these classes must describe what the latest migration leaves behind (a test compares the two)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


# SQLite stores float32 bytes; PostgreSQL a pgvector column without a fixed dimension (each dataset
# gets its own partial HNSW index with the dimension cast in, see storage/vectors.py).
VectorColumn = LargeBinary().with_variant(Vector(), "postgresql")


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


# AUTOINCREMENT on SQLite: ids of deleted datasets, documents and paragraphs are never handed out again, so a
# citation stored with a chat record, or a vector matrix cached by another process, can never silently point
# at different content (PostgreSQL sequences never reuse ids anyway).
_NEVER_REUSE_IDS = {"sqlite_autoincrement": True}

# Columns that exist only on PostgreSQL and are maintained by the server itself, never written through the
# ORM: ``paragraphs.search_vector`` is the stored ``to_tsvector('simple', search_text)`` that
# ``storage/text_search.py`` queries (migration 0004).
POSTGRES_ONLY_COLUMNS = {"paragraphs": {"search_vector"}}


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = _NEVER_REUSE_IDS

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    embedding_model: Mapped[str] = mapped_column(String(256))
    embedding_dim: Mapped[int] = mapped_column(Integer)
    # Bumped on every change to the dataset's paragraphs, so in-process vector caches know when to reload.
    revision: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("dataset_id", "source", name="uq_documents_dataset_source"),
        _NEVER_REUSE_IDS,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(512))
    # Where it came from (absolute path or upload name); re-ingesting the same source replaces it.
    source: Mapped[str] = mapped_column(String(2048))
    content_hash: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(Integer)
    format: Mapped[str] = mapped_column(String(32))
    paragraph_count: Mapped[int] = mapped_column(Integer, default=0)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class Paragraph(Base):
    __tablename__ = "paragraphs"
    __table_args__ = (Index("ix_paragraphs_document_position", "document_id", "position"), _NEVER_REUSE_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    title_path: Mapped[list[Any]] = mapped_column(JSON, default=list)
    content: Mapped[str] = mapped_column(Text)
    # Analysed text for the keyword index: jieba-segmented, lower-cased, stemmed terms joined by spaces.
    search_text: Mapped[str] = mapped_column(Text, default="")
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    page: Mapped[int | None] = mapped_column(Integer, nullable=True)
    ocr: Mapped[bool] = mapped_column(Boolean, default=False)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Embedding(Base):
    __tablename__ = "embeddings"

    paragraph_id: Mapped[int] = mapped_column(ForeignKey("paragraphs.id", ondelete="CASCADE"), primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    vector: Mapped[Any] = mapped_column(VectorColumn)


class EmbeddingCache(Base):
    """Vectors by (model, content hash): re-ingesting or re-evaluating unchanged text skips the model."""

    __tablename__ = "embedding_cache"

    model: Mapped[str] = mapped_column(String(256), primary_key=True)
    text_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class IngestJob(Base):
    __tablename__ = "ingest_jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="running")  # running | done | failed
    total_files: Mapped[int] = mapped_column(Integer, default=0)
    done_files: Mapped[int] = mapped_column(Integer, default=0)
    skipped_files: Mapped[int] = mapped_column(Integer, default=0)
    failed_files: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[list[Any]] = mapped_column(JSON, default=list)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


# --- chat: sessions, records, persisted context (memory area; migration 0003) ---


class ChatSession(Base):
    __tablename__ = "chat_sessions"
    __table_args__ = (Index("ix_chat_sessions_owner_updated", "owner", "updated_at"),)

    # Random hex id: sessions are addressed from URLs and the CLI, and must not be guessable.
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner: Mapped[str] = mapped_column(String(128), default="local")
    title: Mapped[str] = mapped_column(String(256), default="")
    history_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChatRecord(Base):
    """One question and its answer. Never rewritten by compaction: kept whole for display and audit."""

    __tablename__ = "chat_records"
    __table_args__ = (Index("ix_chat_records_session_id_id", "session_id", "id"),)

    # Monotonic id: the compaction watermark is "the id of the last record merged into the summary".
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("chat_sessions.id", ondelete="CASCADE"))
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text, default="")
    citations: Mapped[list[Any]] = mapped_column(JSON, default=list)
    agent_trace: Mapped[list[Any]] = mapped_column(JSON, default=list)
    agent_stop_reason: Mapped[str] = mapped_column(String(32), default="")
    context_info: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    usage: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="ok")  # ok | degraded | error
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChatContext(Base):
    """The persisted summary of a session's older records (the seed's max_kb_chat_context)."""

    __tablename__ = "chat_contexts"

    session_id: Mapped[str] = mapped_column(ForeignKey("chat_sessions.id", ondelete="CASCADE"), primary_key=True)
    summary: Mapped[str] = mapped_column(Text, default="")
    # Id of the last record merged into the summary; 0 before the first compaction.
    watermark: Mapped[int] = mapped_column(Integer, default=0)
    # Bumped with every stored summary; also the compare-and-set guard against two writers.
    revision: Mapped[int] = mapped_column(Integer, default=0)
    compacted_rounds: Mapped[int] = mapped_column(Integer, default=0)
    # Set when the last summary plus kept turns was still over the threshold: no new summary until
    # the records after this id add `context.growth_fraction` of the threshold.
    wait_after: Mapped[int | None] = mapped_column(Integer, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# --- functions: the Python function library (functions area; migration 0002) ---


class PythonFunction(Base):
    """A stored Python function. ``init_params`` may hold an owner's secrets: only the owner sees them."""

    __tablename__ = "python_functions"
    __table_args__ = (
        UniqueConstraint("owner", "name", name="uq_python_functions_owner_name"),
        Index("ix_python_functions_public", "public"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # A user name once the API adds users; "local" for the CLI.
    owner: Mapped[str] = mapped_column(String(128), default="local")
    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, default="")
    code: Mapped[str] = mapped_column(Text)
    # Declarations: [{"name", "type", "required", "default"}], in call order.
    params: Mapped[list[Any]] = mapped_column(JSON, default=list)
    init_params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    public: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
