"""Seed 002's multi-turn scenarios, each against the real storage, plus a crash between summary and watermark."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from memory_helpers import (
    FACT,
    FakeAnswerer,
    ScriptedSummarizer,
    chat_settings,
    merged_count,
    parse_facts,
    run_turn,
)

from kbagent.memory import ChatService, ContextStatus, ConversationContext
from kbagent.storage import Database
from kbagent.storage import chat as store
from kbagent.tokens import estimate_tokens

HERE = Path(__file__).resolve().parent


def context_row(db: Database, sid: str) -> tuple[str, int, int, int, int | None]:
    with db.read() as s:
        row = store.get_context(s, sid)
        return row.summary, row.watermark, row.revision, row.compacted_rounds, row.wait_after


def visible_facts(ctx: ConversationContext) -> dict[str, str]:
    """The facts a model would read in this history: summary first, then the raw turns in order (later wins)."""
    facts = parse_facts(ctx.summary)
    for turn in ctx.recent_turns:
        facts.update(dict(FACT.findall(turn.question)))
    return facts


async def test_105_turns_summarize_on_few_turns_and_keep_all_210_messages(db: Database, tmp_path: Path) -> None:
    settings = chat_settings(tmp_path, "x", recent_tokens=3000)
    summarizer = ScriptedSummarizer()
    summarizing_turns = []
    for turn in range(1, 106):
        # A new service every turn, as seed 002 rebuilt its agent each turn: nothing rides on process memory.
        service = ChatService(db, settings, summarizer)
        if turn == 1:
            sid = service.create_session()
        calls = len(summarizer.calls)
        question = f"t{turn}=fact{turn} " + "and a few words of ordinary conversation " * 2
        events = await run_turn(service, sid, question, FakeAnswerer())
        if len(summarizer.calls) > calls:
            summarizing_turns.append(turn)
            assert any(isinstance(e, ContextStatus) and e.phase == "compacting" for e in events)
    # ~8,200 tokens over a 3,000 threshold: few turns summarize, spread out, not one per turn past the threshold.
    assert 2 <= len(summarizing_turns) <= 8, summarizing_turns
    assert len(summarizer.calls) == len(summarizing_turns)
    records = service.records(sid)
    messages = [m for r in records for m in (r["question"], r["answer"]) if m]
    assert len(records) == 105 and len(messages) == 210
    ctx = await service.context(sid)
    facts = visible_facts(ctx)
    assert all(facts[f"t{i}"] == f"fact{i}" for i in range(1, 106)), "an early fact was lost"
    summary, _wm, revision, compacted, _ = context_row(db, sid)
    assert merged_count(summary) == compacted and revision == len(summarizer.calls)


async def test_24_turns_with_a_small_summary_budget_keep_the_first_turn_facts(db: Database, tmp_path: Path) -> None:
    # Each turn is long; the summarizer's input budget is small, so re-summarizing the whole history would have
    # to cut it (seed 002 bug 2). Incremental merging never needs to.
    settings = chat_settings(tmp_path, "x", recent_tokens=400, summary_input_tokens=300, summary_batch_turns=4)
    service = ChatService(db, settings, summarizer := ScriptedSummarizer())
    sid = service.create_session()
    answerer = FakeAnswerer(lambda q, ctx: "Noted, here is a detailed reply. " * 6)
    summarizing_turns = []
    for turn in range(1, 25):
        calls = len(summarizer.calls)
        filler = "with background material the user pasted into the chat " * 3
        first = "code=ORBIT-42 owner=Lin " if turn == 1 else ""
        await run_turn(service, sid, f"{first}step{turn}=done {filler}", answerer)
        if len(summarizer.calls) > calls:
            summarizing_turns.append(turn)
    assert len(summarizing_turns) >= 5, summarizing_turns
    for previous, turns in summarizer.calls:
        sent = (
            summarizer.prompt_tokens
            + estimate_tokens(previous)
            + sum(estimate_tokens(q) + estimate_tokens(a) + 4 for q, a in turns)
        )
        assert sent <= 300
    ctx = await service.context(sid)
    assert parse_facts(ctx.summary)["code"] == "ORBIT-42" and parse_facts(ctx.summary)["owner"] == "Lin"


async def test_an_over_long_summary_then_short_turns_summarizes_once_not_every_turn(
    db: Database, tmp_path: Path
) -> None:
    threshold = 400
    settings = chat_settings(tmp_path, "x", recent_tokens=threshold)
    long_summary = "facts: " + "; ".join(f"detail{i}=value{i}" for i in range(80)) + " | merged=4"
    assert estimate_tokens(long_summary) > threshold
    service = ChatService(db, settings, summarizer := ScriptedSummarizer())
    summarizer.enqueue(long_summary)
    sid = service.create_session()
    answerer = FakeAnswerer(lambda q, ctx: "ok.")
    for i in range(2):
        await run_turn(service, sid, f"long{i}=x " + "background " * 80, answerer)
    assert summarizer.calls == []
    # Turn 3 finds the two long turns over the threshold and summarizes (seed 002: "only turn 2 summarizes")...
    calls_by_turn = []
    for i in range(10):
        await run_turn(service, sid, f"q{i}?", answerer)
        calls_by_turn.append(len(summarizer.calls))
    # ...and the short follow-ups reuse it: the summary alone is over the threshold, but nothing new is.
    assert calls_by_turn == [1] * 10, calls_by_turn
    assert context_row(db, sid)[4] is not None  # waiting for growth
    ctx = answerer.contexts[-1]
    assert ctx.summary == long_summary and ctx.recent_turns[-1].question == "q8?"

    # Not disabled for good: once new turns add a quarter of the threshold, it summarizes again.
    added = 0
    while len(summarizer.calls) == 1:
        question = f"more{added}=y " + "new material " * 10
        await run_turn(service, sid, question, answerer)
        added += 1
    assert 1 <= added <= 4


@pytest.mark.parametrize("summarizer_kind", ["scripted", "offline"])
async def test_facts_updated_mid_conversation_reach_the_final_context(
    db: Database, tmp_path: Path, summarizer_kind: str
) -> None:
    if summarizer_kind == "offline":
        offline = pytest.importorskip("kbagent.reasoning.offline", reason="the offline reasoner has not landed")
        summarizer: object = offline.OfflineReasoner()
    else:
        summarizer = ScriptedSummarizer()
    settings = chat_settings(tmp_path, "x", recent_tokens=220)
    service = ChatService(db, settings, summarizer)  # type: ignore[arg-type]
    sid = service.create_session()
    script = {
        1: "Project facts: code=ORBIT-42, budget=35 (万元), deadline=2026-12-20. Please keep them in mind.",
        6: "Correction: the budget changed, budget=48 (万元) now.",
        8: "Correction: the deadline moved, deadline=2026-12-28.",
    }
    answerer = FakeAnswerer(lambda q, ctx: "Understood; I will use these values in later answers. " * 2)
    for turn in range(1, 13):
        question = script.get(turn, f"Question {turn}: what should the team prepare next for the launch review?")
        await run_turn(service, sid, question, answerer)
    ctx = await service.context(sid)
    assert ctx.context_info.revision >= 2, "the scenario must go through several summaries"
    if summarizer_kind == "scripted":
        assert visible_facts(ctx) == {"code": "ORBIT-42", "budget": "48", "deadline": "2026-12-28"}
    else:
        # The offline summarizer writes prose; the updated values must be there, and after the old ones.
        history = ctx.summary + "\n" + "\n".join(t.question for t in ctx.recent_turns)
        assert "ORBIT-42" in history and "48" in history and "2026-12-28" in history
        assert history.rfind("48") > history.rfind("budget=35")
        assert history.rfind("2026-12-28") > history.rfind("2026-12-20")


CRASH_CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    from pathlib import Path
    from sqlalchemy import event
    from memory_helpers import FakeAnswerer, ScriptedSummarizer, chat_settings
    from kbagent.memory import ChatService
    from kbagent.storage import open_database

    url, sid, statement, tmp = sys.argv[1:5]
    db = open_database(url)

    def die(conn, cursor, sql, params, context, executemany):
        if sql.lstrip().upper().startswith(statement):
            os._exit(17)  # killed: no rollback, no cleanup, like a power cut between statement and commit

    event.listen(db.engine, "after_cursor_execute", die)
    service = ChatService(db, chat_settings(Path(tmp), url, recent_tokens=150), ScriptedSummarizer())

    async def main():
        async for _ in service.ask(sid, "crash=now the question being answered", FakeAnswerer()):
            pass

    asyncio.run(main())
    sys.exit(0)
    """
)


@pytest.mark.parametrize(
    ("statement", "summary_committed"),
    [("UPDATE CHAT_CONTEXTS", False), ("INSERT INTO CHAT_RECORDS", True)],
    ids=["killed-before-summary-commit", "killed-after-summary-before-record"],
)
def test_a_killed_process_leaves_a_consistent_context(
    database_url: str, tmp_path: Path, statement: str, summary_committed: bool
) -> None:
    import asyncio

    from kbagent.storage import open_database

    db = open_database(database_url)
    service = ChatService(db, chat_settings(tmp_path, database_url, recent_tokens=5000), ScriptedSummarizer())
    sid = service.create_session()
    for i in range(8):
        asyncio.run(_turn(service, sid, f"k{i}=v{i} " + "words " * 20))
    before = context_row(db, sid)
    assert before[:3] == ("", 0, 0)

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    child = subprocess.run(
        [sys.executable, "-c", CRASH_CHILD, database_url, sid, statement, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 17, child.stderr

    again = open_database(database_url)
    summary, watermark, revision, compacted, _ = context_row(again, sid)
    records = ChatService(again, chat_settings(tmp_path, database_url), ScriptedSummarizer()).records(sid)
    assert len(records) == 8, "the interrupted turn stored no record and no old record was touched"
    if summary_committed:
        assert revision == 1 and watermark > 0 and merged_count(summary) == compacted
        assert compacted == sum(1 for r in records if r["id"] <= watermark)
    else:
        assert (summary, watermark, revision, compacted) == ("", 0, 0, 0)

    # After the restart the next turn continues from the persisted watermark: every record merged once.
    restarted = ChatService(
        again, chat_settings(tmp_path, database_url, recent_tokens=150), summarizer := ScriptedSummarizer()
    )
    asyncio.run(_turn(restarted, sid, "after=restart"))
    summary, watermark, revision, compacted, _ = context_row(again, sid)
    sent = [q for _p, turns in summarizer.calls for q, _a in turns]
    assert len(sent) == len(set(sent))
    assert merged_count(summary) == compacted == sum(1 for r in restarted.records(sid) if r["id"] <= watermark)
    assert all(parse_facts(summary)[f"k{i}"] == f"v{i}" for i in range(compacted))
    again.close()
    db.close()


async def _turn(service: ChatService, sid: str, question: str) -> None:
    await run_turn(service, sid, question, FakeAnswerer())
