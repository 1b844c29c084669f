"""Knowledge base: datasets, documents, paragraphs, embeddings, embedding cache, ingestion jobs,
and the keyword index (FTS5 on SQLite, tsvector + GIN on PostgreSQL).

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    if postgres:
        op.execute("CREATE EXTENSION IF NOT EXISTS vector")

    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("embedding_model", sa.String(256), nullable=False),
        sa.Column("embedding_dim", sa.Integer, nullable=False),
        sa.Column("revision", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        # Ids are never reused on SQLite (see tables.py): stored citations must not point at new content.
        sqlite_autoincrement=True,
    )
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("source", sa.String(2048), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("size_bytes", sa.Integer, nullable=False),
        sa.Column("format", sa.String(32), nullable=False),
        sa.Column("paragraph_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("meta", sa.JSON, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.UniqueConstraint("dataset_id", "source", name="uq_documents_dataset_source"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_documents_dataset_id", "documents", ["dataset_id"])
    op.create_table(
        "paragraphs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("document_id", sa.Integer, sa.ForeignKey("documents.id", ondelete="CASCADE"), nullable=False),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("title_path", sa.JSON, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("search_text", sa.Text, nullable=False, server_default=""),
        sa.Column("token_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("page", sa.Integer, nullable=True),
        sa.Column("ocr", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("meta", sa.JSON, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_paragraphs_dataset_id", "paragraphs", ["dataset_id"])
    op.create_index("ix_paragraphs_document_position", "paragraphs", ["document_id", "position"])
    op.create_table(
        "embeddings",
        sa.Column("paragraph_id", sa.Integer, sa.ForeignKey("paragraphs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False),
        sa.Column("vector", Vector() if postgres else sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_embeddings_dataset_id", "embeddings", ["dataset_id"])
    op.create_table(
        "embedding_cache",
        sa.Column("model", sa.String(256), primary_key=True),
        sa.Column("text_hash", sa.String(64), primary_key=True),
        sa.Column("vector", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "ingest_jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("total_files", sa.Integer, nullable=False, server_default="0"),
        sa.Column("done_files", sa.Integer, nullable=False, server_default="0"),
        sa.Column("skipped_files", sa.Integer, nullable=False, server_default="0"),
        sa.Column("failed_files", sa.Integer, nullable=False, server_default="0"),
        sa.Column("failures", sa.JSON, nullable=False),
        sa.Column("seconds", sa.Float, nullable=False, server_default="0"),
        sa.Column("started_at", TZ, nullable=False),
        sa.Column("finished_at", TZ, nullable=True),
    )
    op.create_index("ix_ingest_jobs_dataset_id", "ingest_jobs", ["dataset_id"])

    if postgres:
        op.execute("CREATE INDEX ix_paragraphs_search_tsv ON paragraphs USING GIN (to_tsvector('simple', search_text))")
    else:
        # External-content FTS5 over the analysed text; triggers keep it in the paragraph's transaction,
        # so a deleted or replaced paragraph can never linger in the keyword index.
        op.execute(
            "CREATE VIRTUAL TABLE paragraph_fts USING fts5("
            "search_text, content='paragraphs', content_rowid='id', tokenize=\"unicode61 remove_diacritics 0\")"
        )
        op.execute(
            "CREATE TRIGGER paragraphs_fts_insert AFTER INSERT ON paragraphs BEGIN "
            "INSERT INTO paragraph_fts(rowid, search_text) VALUES (new.id, new.search_text); END"
        )
        op.execute(
            "CREATE TRIGGER paragraphs_fts_delete AFTER DELETE ON paragraphs BEGIN "
            "INSERT INTO paragraph_fts(paragraph_fts, rowid, search_text) "
            "VALUES ('delete', old.id, old.search_text); END"
        )
        op.execute(
            "CREATE TRIGGER paragraphs_fts_update AFTER UPDATE OF search_text ON paragraphs BEGIN "
            "INSERT INTO paragraph_fts(paragraph_fts, rowid, search_text) "
            "VALUES ('delete', old.id, old.search_text); "
            "INSERT INTO paragraph_fts(rowid, search_text) VALUES (new.id, new.search_text); END"
        )
