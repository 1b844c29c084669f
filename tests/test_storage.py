from __future__ import annotations

from sqlalchemy import inspect, text

from kbagent.storage import Database, open_database
from kbagent.storage.migrate import current_revisions, head_revisions
from kbagent.storage.tables import Base, Dataset


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
