"""The chat service used by the CLI and the API: lock the session, read (and if needed compact) its history,
run the answerer with that history, store the record with its ``context_info``.

The answerer (the agent) lives on a higher floor, so it is passed in: any callable that takes the question and
the ``ConversationContext`` and yields its own events, ending with one ``TurnResult``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, Literal

from kbagent.errors import InvalidInput
from kbagent.memory.compaction import CompactionPolicy, Compactor, ContextStatus, Summarizer
from kbagent.memory.history import ContextInfo, ConversationContext
from kbagent.memory.locks import SessionLocks, session_locks
from kbagent.memory.trimming import EmbeddingCache, TextEmbedder, default_scorers
from kbagent.settings import Settings
from kbagent.storage import Database
from kbagent.storage import chat as store
from kbagent.tokens import estimate_tokens


@dataclass(frozen=True)
class TurnResult:
    """What the answerer returns for one question (the agent's result mapped onto the record's columns)."""

    answer: str
    citations: list[Any] = field(default_factory=list)
    agent_trace: list[Any] = field(default_factory=list)
    agent_stop_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    degraded: bool = False


@dataclass(frozen=True)
class TurnStored:
    """The last event of ``ChatService.ask``: the stored record."""

    record_id: int
    session_id: str
    result: TurnResult
    context_info: ContextInfo
    status: Literal["ok", "degraded", "error"]
    timings: dict[str, float]


Answerer = Callable[[str, ConversationContext], AsyncIterator[Any]]


@dataclass(frozen=True)
class SessionView:
    id: str
    owner: str
    title: str
    history_enabled: bool
    records: int
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class SummaryState:
    summary: str
    watermark: int
    revision: int
    compacted_rounds: int
    # Set while a summary that is itself over the threshold waits for new turns (see compaction.py).
    waiting_after_record: int | None


class ChatService:
    """Sessions and turns of conversations. One instance per database handle and summarizer."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        summarizer: Summarizer,
        *,
        locks: SessionLocks | None = None,
        embedder: TextEmbedder | None = None,
    ) -> None:
        """``embedder`` (optional) adds embedding relevance to the trimming of history that cannot all be
        carried; its passage vectors are cached for the life of the service."""
        self.db = db
        self.settings = settings
        self.locks = locks or session_locks(db)
        scorers = default_scorers(embedder, EmbeddingCache()) if embedder is not None else None
        self.compactor = Compactor(db, summarizer, CompactionPolicy.from_settings(settings.context), scorers=scorers)

    # --- sessions ---

    def create_session(self, *, owner: str = "local", title: str = "", history_enabled: bool = True) -> str:
        if len(title) > 256:
            raise InvalidInput("title", f"at most 256 characters, got {len(title)}")
        with self.db.write() as s:
            return store.insert_session(s, owner=owner, title=title, history_enabled=history_enabled).id

    def session(self, session_id: str, *, owner: str | None = None) -> SessionView:
        with self.db.read() as s:
            row = store.get_session(s, session_id, owner=owner)
            return _view(row, store.count_records(s, session_id))

    def sessions(self, *, owner: str | None = None, limit: int = 50) -> list[SessionView]:
        with self.db.read() as s:
            return [_view(row, n) for row, n in store.list_sessions(s, owner=owner, limit=limit)]

    def set_history(self, session_id: str, enabled: bool) -> None:
        with self.db.write() as s:
            store.update_session(s, session_id, history_enabled=enabled)

    def rename(self, session_id: str, title: str) -> None:
        if len(title) > 256:
            raise InvalidInput("title", f"at most 256 characters, got {len(title)}")
        with self.db.write() as s:
            store.update_session(s, session_id, title=title)

    def summary_state(self, session_id: str, *, owner: str | None = None) -> SummaryState:
        """The persisted summary of the session and where it stands."""
        with self.db.read() as s:
            store.get_session(s, session_id, owner=owner)
            row = store.get_context(s, session_id)
            return SummaryState(row.summary, row.watermark, row.revision, row.compacted_rounds, row.wait_after)

    def records(self, session_id: str, *, owner: str | None = None) -> list[dict[str, Any]]:
        """Every stored record of the session, oldest first, as plain data (the raw, never-compacted turns)."""
        with self.db.read() as s:
            store.get_session(s, session_id, owner=owner)
            return [_record_dict(r) for r in store.records(s, session_id)]

    # --- turns ---

    async def ask(
        self, session_id: str, question: str, answerer: Answerer, *, owner: str | None = None
    ) -> AsyncIterator[Any]:
        """Answer ``question`` in the session. Yields ``ContextStatus`` events, then the answerer's own events,
        then one ``TurnStored``. ``SessionBusy`` when the session is already answering or compacting.

        A failing summary does not stop the turn (the old summary and raw turns are used); a failing answerer
        stores a record with status ``error`` and re-raises."""
        limit = self.settings.agent.question_tokens
        if not question.strip():
            raise InvalidInput("question", "must not be empty")
        if estimate_tokens(question) > limit:
            raise InvalidInput("question", f"at most {limit} estimated tokens, got {estimate_tokens(question)}")
        with self.db.read() as s:
            session = store.get_session(s, session_id, owner=owner)
            history_on = self.settings.context.history_enabled and session.history_enabled
            revision = store.get_context(s, session_id).revision
        async with self.locks.hold(session_id):
            started = time.perf_counter()
            context = ConversationContext(context_info=ContextInfo(revision=revision))
            if history_on:
                async for item in self.compactor.prepare(session_id, question=question):
                    if isinstance(item, ConversationContext):
                        context = item
                    else:
                        yield item
            context_done = time.perf_counter()
            result: TurnResult | None = None
            try:
                async for event in answerer(question, context):
                    if isinstance(event, TurnResult):
                        result = event
                    else:
                        yield event
                if result is None:
                    raise RuntimeError("the answerer finished without a TurnResult")
            except Exception:
                self._store(session_id, question, TurnResult(answer=""), context, "error", started, context_done)
                raise
            status: Literal["ok", "degraded"] = "degraded" if result.degraded else "ok"
            yield self._store(session_id, question, result, context, status, started, context_done)

    async def compact(
        self, session_id: str, *, owner: str | None = None
    ) -> AsyncIterator[ContextStatus | ConversationContext]:
        """Manual compaction: merge every uncompacted record but the latest into the summary, under the lock."""
        with self.db.read() as s:
            store.get_session(s, session_id, owner=owner)
        async with self.locks.hold(session_id):
            async for item in self.compactor.prepare(session_id, force=True):
                yield item

    async def context(self, session_id: str) -> ConversationContext:
        """The history a new question would get now (may compact), under the lock."""
        async with self.locks.hold(session_id):
            return await self.compactor.context(session_id)

    def _store(
        self,
        session_id: str,
        question: str,
        result: TurnResult,
        context: ConversationContext,
        status: Literal["ok", "degraded", "error"],
        started: float,
        context_done: float,
    ) -> TurnStored:
        now = time.perf_counter()
        timings = {
            "context_ms": round((context_done - started) * 1000, 2),
            "answer_ms": round((now - context_done) * 1000, 2),
            "total_ms": round((now - started) * 1000, 2),
        }
        with self.db.write() as s:
            row = store.insert_record(
                s,
                session_id,
                question=question,
                answer=result.answer,
                citations=jsonable(result.citations),
                agent_trace=jsonable(result.agent_trace),
                agent_stop_reason=result.agent_stop_reason,
                context_info=context.context_info.as_dict(),
                usage=jsonable(result.usage),
                timings=timings,
                status=status,
            )
            record_id = row.id
        return TurnStored(record_id, session_id, result, context.context_info, status, timings)


def jsonable(value: Any) -> Any:
    """Plain JSON data from dataclasses, pydantic models, tuples and mappings (for the JSON columns)."""
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump(mode="json"))
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _view(row: Any, records: int) -> SessionView:
    return SessionView(
        id=row.id,
        owner=row.owner,
        title=row.title,
        history_enabled=row.history_enabled,
        records=records,
        created_at=row.created_at.isoformat(),
        updated_at=row.updated_at.isoformat(),
    )


def _record_dict(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "question": row.question,
        "answer": row.answer,
        "citations": row.citations,
        "agent_trace": row.agent_trace,
        "agent_stop_reason": row.agent_stop_reason,
        "context_info": row.context_info,
        "usage": row.usage,
        "timings": row.timings,
        "status": row.status,
        "created_at": row.created_at.isoformat(),
    }
