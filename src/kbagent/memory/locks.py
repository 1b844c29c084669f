"""Session locks: one generation or manual compaction per chat session at a time.

A second request on a busy session fails at once with ``SessionBusy`` instead of waiting or reading a
half-written answer. Inside one process a set of held ids does it (safe from threads and from asyncio tasks:
acquiring never blocks). On PostgreSQL the lock is also a session-level advisory lock taken with
``pg_try_advisory_lock`` on a connection dedicated to the holder, so it holds across processes and hosts, and
it is released by the server when a crashed holder's connection drops (no lease to expire). SQLite serves one
host; its lock covers the process that owns the database handle.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, text

from kbagent.errors import SessionBusy
from kbagent.storage import Database

# First key of the two-key advisory lock form: keeps our locks apart from anyone else's on the server.
_ADVISORY_NAMESPACE = 0x6B62  # "kb"


def advisory_key(session_id: str) -> int:
    """A stable signed 32-bit key for ``session_id`` (the second key of the advisory lock)."""
    return int.from_bytes(hashlib.blake2b(session_id.encode(), digest_size=4).digest(), "big", signed=True)


class SessionLocks:
    """Hands out ``hold(session_id)`` guards. Use one instance per database handle (``session_locks``)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._held: set[str] = set()
        self._guard = threading.Lock()

    def hold(self, session_id: str) -> SessionLock:
        """A guard for ``with`` or ``async with``; entering it raises ``SessionBusy`` when the session is held."""
        return SessionLock(self, session_id)

    def is_held(self, session_id: str) -> bool:
        with self._guard:
            return session_id in self._held

    def _acquire(self, session_id: str) -> Connection | None:
        with self._guard:
            if session_id in self._held:
                raise _busy(session_id)
            self._held.add(session_id)
        if self._db.dialect != "postgresql":
            return None
        try:
            conn = self._db.engine.connect()
            try:
                got = conn.execute(
                    text("SELECT pg_try_advisory_lock(:ns, :key)"),
                    {"ns": _ADVISORY_NAMESPACE, "key": advisory_key(session_id)},
                ).scalar()
                # Autocommit-like: end the implicit transaction so the connection holds only the lock.
                conn.commit()
            except BaseException:
                conn.close()
                raise
            if not got:
                conn.close()
                raise _busy(session_id)
            return conn
        except BaseException:
            with self._guard:
                self._held.discard(session_id)
            raise

    def _release(self, session_id: str, conn: Connection | None) -> None:
        try:
            if conn is not None:
                try:
                    conn.execute(
                        text("SELECT pg_advisory_unlock(:ns, :key)"),
                        {"ns": _ADVISORY_NAMESPACE, "key": advisory_key(session_id)},
                    )
                    conn.commit()
                except BaseException:
                    # The unlock did not run: drop the server session itself, which frees its advisory locks,
                    # rather than return a connection still holding the lock to the pool.
                    conn.invalidate()
                    raise
                finally:
                    conn.close()
        finally:
            with self._guard:
                self._held.discard(session_id)


class SessionLock:
    def __init__(self, locks: SessionLocks, session_id: str) -> None:
        self._locks = locks
        self.session_id = session_id
        self._conn: Connection | None = None

    def __enter__(self) -> SessionLock:
        self._conn = self._locks._acquire(self.session_id)
        return self

    def __exit__(self, *exc: Any) -> None:
        conn, self._conn = self._conn, None
        self._locks._release(self.session_id, conn)

    async def __aenter__(self) -> SessionLock:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


def _busy(session_id: str) -> SessionBusy:
    return SessionBusy(
        f"session busy: chat session {session_id!r} is already answering or compacting; "
        "wait for it to finish and try again"
    )


_LOCKS: weakref.WeakKeyDictionary[Database, SessionLocks] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def session_locks(db: Database) -> SessionLocks:
    """The one ``SessionLocks`` of this database handle (created on first use)."""
    with _LOCKS_GUARD:
        locks = _LOCKS.get(db)
        if locks is None:
            locks = _LOCKS[db] = SessionLocks(db)
        return locks
