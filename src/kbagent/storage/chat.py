"""Chat rows: sessions, records and the persisted context (summary, watermark, revision).

Records are append-only: nothing here rewrites a stored question or answer. The summary, the watermark and the
revision change together in one statement (``store_summary``), guarded by the revision the caller read, so two
writers can never both advance the same context.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from kbagent.errors import Conflict, NotFound
from kbagent.storage.tables import ChatContext, ChatRecord, ChatSession, utcnow


def new_session_id() -> str:
    return uuid.uuid4().hex


def insert_session(session: Session, *, owner: str, title: str, history_enabled: bool = True) -> ChatSession:
    """A new chat session with an empty context row."""
    now = utcnow()
    row = ChatSession(
        id=new_session_id(),
        owner=owner,
        title=title,
        history_enabled=history_enabled,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    session.flush()
    session.add(ChatContext(session_id=row.id, summary="", watermark=0, revision=0, compacted_rounds=0, updated_at=now))
    session.flush()
    return row


def get_session(session: Session, session_id: str, *, owner: str | None = None) -> ChatSession:
    """The session; ``NotFound`` when it does not exist or belongs to another owner (the same answer for both,
    so an id cannot be probed)."""
    row = session.get(ChatSession, session_id)
    if row is None or (owner is not None and row.owner != owner):
        raise NotFound(f"chat session {session_id!r} not found")
    return row


def list_sessions(session: Session, *, owner: str | None = None, limit: int = 50) -> list[tuple[ChatSession, int]]:
    """Sessions, most recently used first, each with its number of records."""
    counts = select(ChatRecord.session_id, func.count().label("n")).group_by(ChatRecord.session_id).subquery("counts")
    query = (
        select(ChatSession, func.coalesce(counts.c.n, 0))
        .outerjoin(counts, counts.c.session_id == ChatSession.id)
        .order_by(ChatSession.updated_at.desc(), ChatSession.id)
        .limit(limit)
    )
    if owner is not None:
        query = query.where(ChatSession.owner == owner)
    return [(row, int(n)) for row, n in session.execute(query).all()]


def update_session(
    session: Session, session_id: str, *, title: str | None = None, history_enabled: bool | None = None
) -> ChatSession:
    row = get_session(session, session_id)
    if title is not None:
        row.title = title
    if history_enabled is not None:
        row.history_enabled = history_enabled
    row.updated_at = utcnow()
    session.flush()
    return row


def delete_session(session: Session, session_id: str) -> None:
    get_session(session, session_id)
    # Explicit deletes: SQLite enforces ON DELETE CASCADE only with foreign_keys on, and it is cheap to be sure.
    session.execute(delete(ChatRecord).where(ChatRecord.session_id == session_id))
    session.execute(delete(ChatContext).where(ChatContext.session_id == session_id))
    session.execute(delete(ChatSession).where(ChatSession.id == session_id))


def insert_record(
    session: Session,
    session_id: str,
    *,
    question: str,
    answer: str,
    citations: list[Any],
    agent_trace: list[Any],
    agent_stop_reason: str,
    context_info: dict[str, Any],
    usage: dict[str, Any],
    timings: dict[str, Any],
    status: str,
    created_at: datetime | None = None,
) -> ChatRecord:
    if status not in ("ok", "degraded", "error"):
        raise ValueError(f"record status must be ok, degraded or error, got {status!r}")
    now = created_at or utcnow()
    row = ChatRecord(
        session_id=session_id,
        question=question,
        answer=answer,
        citations=citations,
        agent_trace=agent_trace,
        agent_stop_reason=agent_stop_reason,
        context_info=context_info,
        usage=usage,
        timings=timings,
        status=status,
        created_at=now,
    )
    session.add(row)
    session.execute(update(ChatSession).where(ChatSession.id == session_id).values(updated_at=now))
    session.flush()
    return row


def records(session: Session, session_id: str, *, after_id: int = 0, limit: int | None = None) -> list[ChatRecord]:
    """Records of a session with id > ``after_id``, oldest first."""
    query = (
        select(ChatRecord).where(ChatRecord.session_id == session_id, ChatRecord.id > after_id).order_by(ChatRecord.id)
    )
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query).all())


def record_turns(session: Session, session_id: str, *, after_id: int = 0) -> list[tuple[int, str, str]]:
    """(id, question, answer) of the records after ``after_id``, oldest first: what context assembly needs,
    without loading traces and citations. Failed turns (status ``error``) have no answer and are left out."""
    query = (
        select(ChatRecord.id, ChatRecord.question, ChatRecord.answer)
        .where(ChatRecord.session_id == session_id, ChatRecord.id > after_id, ChatRecord.status != "error")
        .order_by(ChatRecord.id)
    )
    return [(int(i), q, a) for i, q, a in session.execute(query).all()]


def count_records(session: Session, session_id: str) -> int:
    return int(session.scalar(select(func.count()).where(ChatRecord.session_id == session_id)) or 0)


def get_context(session: Session, session_id: str) -> ChatContext:
    row = session.get(ChatContext, session_id)
    if row is None:
        raise NotFound(f"chat session {session_id!r} has no context row")
    return row


def store_summary(
    session: Session,
    session_id: str,
    *,
    summary: str,
    watermark: int,
    expected_revision: int,
    merged_rounds: int,
    wait_after: int | None,
) -> int:
    """Write summary, watermark and the next revision in one statement, only if the revision is still
    ``expected_revision``. Returns the new revision; ``Conflict`` when another writer got there first."""
    result = session.execute(
        update(ChatContext)
        .where(ChatContext.session_id == session_id, ChatContext.revision == expected_revision)
        .values(
            summary=summary,
            watermark=watermark,
            revision=expected_revision + 1,
            compacted_rounds=ChatContext.compacted_rounds + merged_rounds,
            wait_after=wait_after,
            updated_at=utcnow(),
        )
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise Conflict(f"chat session {session_id!r}: context changed while summarizing (revision moved)")
    return expected_revision + 1
