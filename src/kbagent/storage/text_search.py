"""PostgreSQL full-text search over ``paragraphs.search_vector``.

``search_vector`` is ``to_tsvector('simple', search_text)``, a stored generated column with a GIN index
(migration 0004), so ranking reads the parsed vector instead of parsing every matching paragraph again.
``ts_rank`` weighs term frequency but not how rare a term is (no IDF), so on PostgreSQL keyword ranking is
weaker than the BM25 of the embedded index (``knowledge/keyword_index.py``); the results contract is the same.
The terms arrive already analysed (letters and digits only, see ``knowledge/analysis.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session


def _tsquery(terms: Sequence[str]) -> str:
    quoted = ("'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms)
    return " | ".join(quoted)


def text_search(
    session: Session, dataset_ids: Sequence[int], terms: Sequence[str], limit: int
) -> list[tuple[int, float]]:
    """Paragraph ids matching any of ``terms`` in the given datasets, best first (ties by id), with their
    ``ts_rank`` scores (higher is better)."""
    if not terms or not dataset_ids or limit <= 0:
        return []
    stmt = text(
        "SELECT p.id, ts_rank(p.search_vector, q.query) AS score "
        "FROM paragraphs p, to_tsquery('simple', :query) AS q(query) "
        "WHERE p.dataset_id IN :datasets AND p.search_vector @@ q.query "
        "ORDER BY score DESC, p.id LIMIT :limit"
    ).bindparams(bindparam("datasets", expanding=True))
    params = {"query": _tsquery(terms), "datasets": list(dataset_ids), "limit": limit}
    return [(int(pid), float(score)) for pid, score in session.execute(stmt, params)]
