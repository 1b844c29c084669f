"""The database handle: one engine per process, sessions, the single SQLite writer, migrations at start-up."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

from sqlalchemy import ClauseElement, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from kbagent.errors import ConfigError, StorageError

Dialect = Literal["sqlite", "postgresql"]
T = TypeVar("T")

# Values per IN (...) list: under SQLite's historical limit of 999 bound parameters per statement.
_IN_CHUNK = 900


class Database:
    """Owns the engine. ``read()`` for queries, ``write()`` for a transaction.

    SQLite allows one writer at a time; ``write()`` serialises writers inside the process so they queue
    instead of failing with "database is locked" (other processes wait on SQLite's busy timeout).
    """

    def __init__(self, url: str, *, pool_size: int = 5) -> None:
        try:
            parsed = make_url(url)
        except ArgumentError as exc:
            raise ConfigError(f"database.url: not a database URL ({url!r})") from exc
        backend = parsed.get_backend_name()
        if backend not in ("sqlite", "postgresql"):
            raise ConfigError(f"database.url: only sqlite and postgresql are supported, got {backend!r}")
        self.dialect: Dialect = backend  # type: ignore[assignment]
        kwargs: dict[str, Any] = {}
        if self.dialect == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            if parsed.drivername == "postgresql":
                parsed = parsed.set(drivername="postgresql+psycopg")
            kwargs["pool_size"] = pool_size
            kwargs["pool_pre_ping"] = True
        self.url = parsed
        self.engine: Engine = create_engine(parsed, **kwargs)
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock = threading.RLock()

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._sessions() as session:
            try:
                yield session
            except OperationalError as exc:
                raise StorageError(f"database read failed: {exc.orig}") from exc

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session inside one transaction: committed on success, rolled back on any error."""
        lock = self._write_lock if self.dialect == "sqlite" else _NULL_LOCK
        with lock, self._sessions() as session:
            try:
                with session.begin():
                    yield session
            except OperationalError as exc:
                raise StorageError(f"database write failed: {exc.orig}") from exc

    def migrate(self) -> None:
        """Bring the schema to the latest migration. Safe to run on every start; keeps existing data."""
        from kbagent.storage.migrate import upgrade

        with self._write_lock:
            upgrade(self.engine)

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


class _NullLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NULL_LOCK = _NullLock()


def open_database(url: str, *, pool_size: int = 5, migrate: bool = True) -> Database:
    db = Database(url, pool_size=pool_size)
    if migrate:
        db.migrate()
    return db


def raw_batches(session: Session, stmt: ClauseElement, batch: int) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of ``stmt`` straight from the DBAPI cursor, ``batch`` at a time, for bulk reads of up to millions
    of rows where SQLAlchemy's per-row processing costs more than the read itself. Values arrive as the driver
    gives them (no column type conversion: plain integers, text and SQLite blobs only). The statement's
    parameters are inlined into the SQL, so it may hold only values the caller built (ids), never user text."""
    sql = str(stmt.compile(session.get_bind(), compile_kwargs={"literal_binds": True}))
    cursor = session.connection().connection.cursor()
    try:
        cursor.execute(sql)
        while rows := cursor.fetchmany(batch):
            yield list(rows)
    finally:
        cursor.close()


def in_chunks(values: Sequence[T]) -> Iterator[Sequence[T]]:
    """``values`` in slices small enough for one ``IN (...)`` list on every backend."""
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]
