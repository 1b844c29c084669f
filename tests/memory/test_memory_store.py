"""Chat storage on SQLite and PostgreSQL: sessions, append-only records, the guarded summary write."""

from __future__ import annotations

import pytest

from kbagent.errors import Conflict, NotFound
from kbagent.storage import Database
from kbagent.storage import chat as store


def add(db: Database, sid: str, question: str, status: str = "ok") -> int:
    with db.write() as s:
        return store.insert_record(
            s,
            sid,
            question=question,
            answer=f"A: {question}",
            citations=[{"marker": 1, "document": "d.md"}],
            agent_trace=[{"round": 1, "queries": [question]}],
            agent_stop_reason="sufficient",
            context_info={"compacted_rounds": 0, "recent_rounds": 0, "revision": 0},
            usage={"prompt_tokens": 3},
            timings={"total_ms": 1.0},
            status=status,
        ).id


def test_sessions_are_owned_listed_by_use_and_deleted_with_their_records(db: Database) -> None:
    with db.write() as s:
        a = store.insert_session(s, owner="alice", title="a").id
        b = store.insert_session(s, owner="bob", title="b").id
    add(db, a, "q1")
    add(db, b, "q2")
    add(db, a, "q3")
    with db.read() as s:
        assert [(row.id, n) for row, n in store.list_sessions(s)] == [(a, 2), (b, 1)]
        assert [row.id for row, _ in store.list_sessions(s, owner="bob")] == [b]
        with pytest.raises(NotFound):
            store.get_session(s, a, owner="bob")  # another owner's session looks like a missing one
        assert store.get_context(s, a).revision == 0
    with db.write() as s:
        store.delete_session(s, a)
    with db.read() as s:
        assert store.count_records(s, a) == 0 and store.count_records(s, b) == 1
        with pytest.raises(NotFound):
            store.get_context(s, a)


def test_records_keep_their_json_and_failed_turns_are_not_history(db: Database) -> None:
    with db.write() as s:
        sid = store.insert_session(s, owner="local", title="").id
    first = add(db, sid, "问题一")
    add(db, sid, "broken", status="error")
    third = add(db, sid, "问题三")
    with db.read() as s:
        rows = store.records(s, sid)
        assert [r.question for r in rows] == ["问题一", "broken", "问题三"]
        assert rows[0].citations == [{"marker": 1, "document": "d.md"}] and rows[0].usage == {"prompt_tokens": 3}
        assert [t[0] for t in store.record_turns(s, sid)] == [first, third]
        assert [t[0] for t in store.record_turns(s, sid, after_id=first)] == [third]
    with pytest.raises(ValueError, match="record status must be ok, degraded or error"):
        add(db, sid, "x", status="weird")


def test_summary_watermark_and_revision_move_together_and_only_from_the_revision_read(db: Database) -> None:
    with db.write() as s:
        sid = store.insert_session(s, owner="local", title="").id
    ids = [add(db, sid, f"q{i}") for i in range(3)]
    with db.write() as s:
        assert (
            store.store_summary(
                s, sid, summary="S1", watermark=ids[1], expected_revision=0, merged_rounds=2, wait_after=None
            )
            == 1
        )
    # A second writer that read revision 0 loses, and changes nothing.
    with pytest.raises(Conflict, match="context changed while summarizing"):
        with db.write() as s:
            store.store_summary(
                s, sid, summary="stale", watermark=ids[2], expected_revision=0, merged_rounds=3, wait_after=None
            )
    with db.read() as s:
        row = store.get_context(s, sid)
        assert (row.summary, row.watermark, row.revision, row.compacted_rounds) == ("S1", ids[1], 1, 2)
        assert [r.answer for r in store.records(s, sid)] == [f"A: q{i}" for i in range(3)]
