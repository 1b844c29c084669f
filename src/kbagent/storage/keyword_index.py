"""Keyword search over ``paragraphs.search_text`` (already analysed: jieba words, lower-cased stems).

SQLite: the FTS5 table ``paragraph_fts`` kept in sync by triggers, ranked by ``bm25()``.
PostgreSQL: ``to_tsvector('simple', search_text)`` with its GIN index, ranked by ``ts_rank``.
Scores are "higher is better" on both; their scales differ, so callers fuse by rank or normalised score.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session


def usable_terms(terms: Sequence[str]) -> list[str]:
    """Distinct terms that hold at least one letter or digit (punctuation alone matches nothing)."""
    seen: dict[str, None] = {}
    for term in terms:
        term = term.strip()
        if term and any(ch.isalnum() for ch in term):
            seen.setdefault(term, None)
    return list(seen)


def _fts5_query(terms: list[str]) -> str:
    # Each term is a quoted string so FTS5 operators in user text (AND, NEAR, *, :) stay plain words.
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _tsquery(terms: list[str]) -> str:
    quoted = ("'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms)
    return " | ".join(quoted)


def keyword_search(
    session: Session, dataset_ids: Sequence[int], terms: Sequence[str], limit: int
) -> list[tuple[int, float]]:
    """Paragraph ids matching any of ``terms`` in the given datasets, best first, with their scores."""
    usable = usable_terms(terms)
    if not usable or not dataset_ids or limit <= 0:
        return []
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        stmt = text(
            "SELECT p.id, -bm25(paragraph_fts) AS score FROM paragraph_fts "
            "JOIN paragraphs p ON p.id = paragraph_fts.rowid "
            "WHERE paragraph_fts MATCH :query AND p.dataset_id IN :datasets "
            "ORDER BY score DESC, p.id LIMIT :limit"
        ).bindparams(bindparam("datasets", expanding=True))
        query = _fts5_query(usable)
    else:
        stmt = text(
            "SELECT p.id, ts_rank(to_tsvector('simple', p.search_text), q.query) AS score "
            "FROM paragraphs p, to_tsquery('simple', :query) AS q(query) "
            "WHERE p.dataset_id IN :datasets AND to_tsvector('simple', p.search_text) @@ q.query "
            "ORDER BY score DESC, p.id LIMIT :limit"
        ).bindparams(bindparam("datasets", expanding=True))
        query = _tsquery(usable)
    rows = session.execute(stmt, {"query": query, "datasets": list(dataset_ids), "limit": limit}).all()
    return [(int(pid), float(score)) for pid, score in rows]
