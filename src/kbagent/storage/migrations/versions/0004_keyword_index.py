"""Keyword index, second form.

SQLite: the FTS5 table and its triggers go. The embedded keyword index is now a tantivy index kept in memory
and synced from ``paragraphs.search_text`` by dataset revision (``knowledge/keyword_index.py``): FTS5 scored
every matching paragraph before it could sort (over 100 ms for common words at a million paragraphs).
PostgreSQL: ``search_vector``, a stored ``to_tsvector('simple', search_text)`` with its GIN index, replaces the
expression index, so ranking no longer parses each matching paragraph's text again.

Revision ID: 0004
Revises: 0001
"""

from alembic import op

revision = "0004"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE paragraphs ADD COLUMN search_vector tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED"
        )
        op.execute("CREATE INDEX ix_paragraphs_search_vector ON paragraphs USING GIN (search_vector)")
        op.execute("DROP INDEX IF EXISTS ix_paragraphs_search_tsv")
    else:
        for trigger in ("paragraphs_fts_insert", "paragraphs_fts_delete", "paragraphs_fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS paragraph_fts")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE INDEX ix_paragraphs_search_tsv ON paragraphs USING GIN (to_tsvector('simple', search_text))")
        op.execute("DROP INDEX IF EXISTS ix_paragraphs_search_vector")
        op.execute("ALTER TABLE paragraphs DROP COLUMN search_vector")
    else:
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
        op.execute("INSERT INTO paragraph_fts(paragraph_fts) VALUES ('rebuild')")
