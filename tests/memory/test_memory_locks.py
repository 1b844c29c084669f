"""Session locks: one generation or manual compaction per session; across processes on PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from memory_helpers import FakeAnswerer, ScriptedSummarizer, chat_settings, run_turn

from kbagent.errors import SessionBusy
from kbagent.memory import ChatService, ConversationContext, TurnResult, session_locks
from kbagent.storage import Database


def test_second_holder_gets_session_busy_until_the_first_releases(db: Database) -> None:
    locks = session_locks(db)
    with locks.hold("s1"):
        with pytest.raises(SessionBusy, match="session busy"):
            with locks.hold("s1"):
                pass
        with locks.hold("s2"):  # other sessions are not affected
            pass
    with locks.hold("s1"):
        pass


def test_lock_is_released_when_the_work_fails(db: Database) -> None:
    locks = session_locks(db)
    with pytest.raises(RuntimeError):
        with locks.hold("s1"):
            raise RuntimeError("generation failed")
    assert not locks.is_held("s1")


def test_threads_racing_for_one_session_let_exactly_one_in(db: Database) -> None:
    locks = session_locks(db)
    barrier = threading.Barrier(8)
    inside = threading.Event()
    release = threading.Event()
    outcomes: list[str] = []

    def worker() -> None:
        barrier.wait()
        try:
            with locks.hold("race"):
                outcomes.append("held")
                inside.set()
                release.wait(10)
        except SessionBusy:
            outcomes.append("busy")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    inside.wait(10)
    # Keep the holder inside until every other thread has tried.
    for _ in range(1000):
        if outcomes.count("busy") == 7:
            break
        threading.Event().wait(0.01)
    release.set()
    for t in threads:
        t.join(10)
    assert sorted(outcomes) == ["busy"] * 7 + ["held"]


async def test_a_second_question_on_a_busy_session_is_refused_and_nothing_half_written_is_read(
    db: Database, tmp_path: Path
) -> None:
    service = ChatService(db, chat_settings(tmp_path, "x"), ScriptedSummarizer())
    sid = service.create_session()
    started, finish = asyncio.Event(), asyncio.Event()

    async def slow(question: str, context: ConversationContext) -> AsyncIterator[Any]:
        started.set()
        await finish.wait()
        yield TurnResult(answer="the complete answer")

    first = asyncio.create_task(run_turn(service, sid, "first question", slow))  # type: ignore[arg-type]
    await started.wait()
    with pytest.raises(SessionBusy):
        await run_turn(service, sid, "follow-up", FakeAnswerer())
    with pytest.raises(SessionBusy):
        [e async for e in service.compact(sid)]
    assert service.records(sid) == []
    finish.set()
    await first
    answerer = FakeAnswerer()
    await run_turn(service, sid, "follow-up", answerer)
    assert answerer.contexts[0].recent_turns[0].answer == "the complete answer"


CHILD = textwrap.dedent(
    """
    import os, sys, time
    from kbagent.errors import SessionBusy
    from kbagent.memory import session_locks
    from kbagent.storage import open_database

    url, sid, mode = sys.argv[1:4]
    locks = session_locks(open_database(url))
    if mode == "try":
        try:
            with locks.hold(sid):
                print("held", flush=True)
        except SessionBusy as exc:
            print("busy:", exc, flush=True)
    else:  # hold, then get killed
        with locks.hold(sid):
            print("held", flush=True)
            sys.stdin.readline()
            os._exit(9)
    """
)


def _child(url: str, sid: str, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url, sid, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def test_postgres_lock_holds_across_processes_and_dies_with_its_holder(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("locks across processes are a PostgreSQL feature; SQLite's lock is per process")
    from kbagent.storage import open_database

    db = open_database(database_url)
    locks = session_locks(db)
    with locks.hold("shared-session"):
        out, err = _child(database_url, "shared-session", "try").communicate(timeout=60)
        assert out.startswith("busy: session busy"), err
        out, err = _child(database_url, "other-session", "try").communicate(timeout=60)
        assert out.strip() == "held", err
    out, err = _child(database_url, "shared-session", "try").communicate(timeout=60)
    assert out.strip() == "held", err

    # A holder that is killed frees the lock: the server ends its connection.
    holder = _child(database_url, "shared-session", "hold")
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(SessionBusy):
        with locks.hold("shared-session"):
            pass
    holder.communicate("go\n", timeout=60)
    assert holder.returncode == 9
    with locks.hold("shared-session"):
        pass
    db.close()
