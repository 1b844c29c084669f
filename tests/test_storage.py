from __future__ import annotations

from sqlalchemy import create_engine, inspect, text

from kbagent.knowledge.analysis import analyze, analyzed_text
from kbagent.knowledge.keyword_index import KeywordIndex
from kbagent.knowledge.records import DatasetRef
from kbagent.storage import Database, open_database
from kbagent.storage.migrate import current_revisions, head_revisions, upgrade
from kbagent.storage.tables import POSTGRES_ONLY_COLUMNS, Base, Dataset


def test_migrations_reach_head_and_rerun_keeps_data(db: Database) -> None:
    assert current_revisions(db.engine) == head_revisions()
    with db.write() as session:
        session.add(Dataset(name="handbook", embedding_model="m", embedding_dim=3))
    # A second start-up runs the migrations again: nothing breaks, nothing is lost.
    again = open_database(db.url.render_as_string(hide_password=False))
    with again.read() as session:
        assert [d.name for d in session.query(Dataset).all()] == ["handbook"]
    again.close()


def test_tables_match_latest_migration(db: Database) -> None:
    inspector = inspect(db.engine)
    for table in Base.metadata.sorted_tables:
        columns = {c["name"] for c in inspector.get_columns(table.name)}
        if db.dialect == "postgresql":
            columns -= POSTGRES_ONLY_COLUMNS.get(table.name, set())
        assert columns == {c.name for c in table.columns}, table.name


def test_failed_write_rolls_back(db: Database) -> None:
    try:
        with db.write() as session:
            session.add(Dataset(name="a", embedding_model="m", embedding_dim=3))
            session.flush()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with db.read() as session:
        assert session.execute(text("SELECT count(*) FROM datasets")).scalar() == 0


def test_upgrade_from_the_first_keyword_index_keeps_paragraphs_searchable(database_url: str) -> None:
    """A database made before migration 0004 (FTS5 on SQLite, an expression index on PostgreSQL) upgrades
    with its paragraphs intact and found by the new keyword index."""
    engine = create_engine(database_url)
    upgrade(engine, "0001")
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO datasets (name, description, embedding_model, embedding_dim, revision, created_at, "
                 "updated_at) "
                 "VALUES ('hb', '', 'm', 3, 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)")
        )  # fmt: skip
        conn.execute(
            text("INSERT INTO documents (dataset_id, name, source, content_hash, size_bytes, format, "
                 "paragraph_count, meta, created_at, updated_at) "
                 "VALUES (1, 'a', 'a', 'h', 1, 'txt', 1, '{}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)")
        )  # fmt: skip
        conn.execute(
            text("INSERT INTO paragraphs (document_id, dataset_id, position, title_path, content, search_text, "
                 "token_count, page, ocr, meta) VALUES (1, 1, 0, '[]', :c, :s, 3, NULL, false, '{}')"),
            {"c": "报销须在三十日内提交。", "s": analyzed_text("报销须在三十日内提交。")},
        )  # fmt: skip
    engine.dispose()
    db = open_database(database_url)  # start-up runs the remaining migrations
    try:
        assert current_revisions(db.engine) == head_revisions()
        tables = set(inspect(db.engine).get_table_names())
        assert "paragraph_fts" not in tables
        with db.read() as session:
            assert session.execute(text("SELECT count(*) FROM paragraphs")).scalar() == 1
        found = KeywordIndex(db).search([DatasetRef(1, 1, 3, "m")], analyze("报销"), 5)
        assert [pid for pid, _ in found] == [1]
    finally:
        db.close()
