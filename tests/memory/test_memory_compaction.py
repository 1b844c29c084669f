"""Compaction rules (seed 000's list): threshold, watermark, failure, restart, history off, cleaned copies."""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_helpers import (
    FakeAnswerer,
    ScriptedSummarizer,
    chat_settings,
    merged_count,
    parse_facts,
    run_turn,
)

from kbagent.errors import IncompleteOutput, ModelError, ProviderUnavailable
from kbagent.memory import ChatService, ContextStatus, TurnStored
from kbagent.memory.history import turn_tokens
from kbagent.storage import Database, open_database
from kbagent.storage import chat as store


def phases(events: list[object]) -> list[str]:
    return [e.phase for e in events if isinstance(e, ContextStatus)]


def stored(events: list[object]) -> TurnStored:
    last = events[-1]
    assert isinstance(last, TurnStored)
    return last


def answer_for(question: str) -> str:
    return f"Answer to: {question}"


def context_row(db: Database, session_id: str) -> tuple[str, int, int, int]:
    with db.read() as s:
        row = store.get_context(s, session_id)
        return row.summary, row.watermark, row.revision, row.compacted_rounds


async def test_at_or_under_threshold_every_turn_stays_raw_and_no_summary_is_made(db: Database, tmp_path: Path) -> None:
    questions = [f"question number {i} about the travel policy" for i in range(40)]
    total = sum(turn_tokens(q, answer_for(q)) for q in questions[:-1])
    # Exactly at the threshold: "等于阈值时同样不压缩".
    service = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=total), summarizer := ScriptedSummarizer())
    sid = service.create_session()
    answerer = FakeAnswerer()
    for q in questions:
        events = await run_turn(service, sid, q, answerer)
        assert "compacting" not in phases(events)
    assert summarizer.calls == []
    last = answerer.contexts[-1]
    assert last.summary == "" and [t.question for t in last.recent_turns] == questions[:-1]
    assert stored(events).context_info.as_dict() == {"compacted_rounds": 0, "recent_rounds": 39, "revision": 0}

    # One token over: now it compacts.
    service2 = ChatService(
        db, chat_settings(tmp_path, "x", recent_tokens=total - 1, summary_batch_turns=20), summarizer
    )
    events = await run_turn(service2, sid, "one more", answerer)
    merged = context_row(db, sid)[3]
    # The older turns beyond the keep budget merge, 20 per summarizer call (summary_batch_turns).
    assert merged > 0 and phases(events).count("compacting") == len(summarizer.calls) == -(-merged // 20)


async def test_compaction_merges_oldest_moves_watermark_and_never_rewrites_records(
    db: Database, tmp_path: Path
) -> None:
    service = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=300), summarizer := ScriptedSummarizer())
    sid = service.create_session(title="policy")
    answerer = FakeAnswerer()
    questions = [f"fact{i}=value{i} please remember this detail about item {i}" for i in range(12)]
    all_events = []
    for q in questions:
        events = await run_turn(service, sid, q, answerer)
        all_events.append(events)
        # "compacting" appears exactly on the turns where the summarizer really ran.
        calls_before = sum(phases(e).count("compacting") for e in all_events[:-1])
        assert phases(events).count("compacting") == len(summarizer.calls) - calls_before
        assert phases(events)[0] == "context"
    assert 1 <= len(summarizer.calls) < len(questions)

    summary, watermark, revision, compacted = context_row(db, sid)
    records = service.records(sid)
    assert len(records) == 12 and [r["question"] for r in records] == questions
    assert all(r["answer"] == answer_for(r["question"]) for r in records)
    merged = [r for r in records if r["id"] <= watermark]
    assert compacted == len(merged) == merged_count(summary)
    assert revision == len(summarizer.calls)
    # Every merged record went to the summarizer exactly once, in order.
    sent = [q for _prev, turns in summarizer.calls for q, _a in turns]
    assert sent == [r["question"] for r in merged]
    # The summary keeps every merged fact.
    assert parse_facts(summary) == {f"fact{i}": f"value{i}" for i in range(len(merged))}
    # The last record's context_info describes the history it was answered with.
    ctx = answerer.contexts[-1]
    info = records[-1]["context_info"]
    assert info["recent_rounds"] == len(ctx.recent_turns) >= 1
    assert info["revision"] == ctx.context_info.revision
    assert records[-1]["agent_trace"][0]["round"] == 1 and records[-1]["status"] == "ok"


@pytest.mark.parametrize(
    "failure",
    [ModelError("provider said 500"), IncompleteOutput("finish_reason=length"), ProviderUnavailable("down"), "", "  "],
    ids=["model-error", "length", "unavailable", "empty", "blank"],
)
async def test_summary_failure_keeps_old_summary_watermark_and_raw_turns(
    db: Database, tmp_path: Path, failure: BaseException | str
) -> None:
    service = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=200), summarizer := ScriptedSummarizer())
    sid = service.create_session()
    answerer = FakeAnswerer()
    n = 0
    while not summarizer.calls:
        await run_turn(service, sid, f"k{n}=v{n} and some more words to fill the turn {n}", answerer)
        n += 1
    before = context_row(db, sid)
    assert before[2] == 1

    # Next compaction fails: nothing stored changes, the turn is still answered with old summary + raw turns.
    summarizer.enqueue(failure)
    calls = len(summarizer.calls)
    while len(summarizer.calls) == calls:
        events = await run_turn(service, sid, f"k{n}=v{n} and some more words to fill the turn {n}", answerer)
        n += 1
    assert context_row(db, sid) == before
    ctx = answerer.contexts[-1]
    assert ctx.compaction_error and ctx.summary == before[0]
    assert ctx.recent_turns[-1].question.startswith(f"k{n - 2}=")
    assert stored(events).status == "ok"
    assert "Answer to" not in before[0] and "Error" not in before[0]

    # The next successful compaction merges what the failed one could not: no fact is lost.
    while context_row(db, sid)[2] == 1:
        await run_turn(service, sid, f"k{n}=v{n} and some more words to fill the turn {n}", answerer)
        n += 1
    summary, watermark, _rev, compacted = context_row(db, sid)
    assert merged_count(summary) == compacted
    facts = parse_facts(summary)
    assert all(facts[f"k{i}"] == f"v{i}" for i in range(compacted))


async def test_restart_reuses_the_persisted_summary_and_never_resummarizes(database_url: str, tmp_path: Path) -> None:
    settings = chat_settings(tmp_path, database_url, recent_tokens=250)
    first = open_database(database_url)
    service = ChatService(first, settings, summarizer := ScriptedSummarizer())
    sid = service.create_session()
    answerer = FakeAnswerer()
    n = 0
    while not summarizer.calls:
        await run_turn(service, sid, f"item{n}=ok remember item {n} for the report", answerer)
        n += 1
    summary, watermark, revision, _ = context_row(first, sid)
    first.close()

    # A new process: new handle, new service, new summarizer with no memory of its own.
    again = open_database(database_url)
    service2 = ChatService(again, settings, summarizer2 := ScriptedSummarizer())
    answerer2 = FakeAnswerer()
    await run_turn(service2, sid, "short follow-up", answerer2)
    assert summarizer2.calls == []
    assert answerer2.contexts[0].summary == summary
    assert answerer2.contexts[0].context_info.revision == revision
    while not summarizer2.calls:
        await run_turn(service2, sid, f"item{n}=ok remember item {n} for the report", answerer2)
        n += 1
    previous, turns = summarizer2.calls[0]
    assert previous == summary
    merged_ids = {r["question"] for r in service2.records(sid) if r["id"] <= watermark}
    assert not merged_ids & {q for q, _ in turns}
    again.close()


async def test_history_off_in_settings_or_session_sends_no_history(db: Database, tmp_path: Path) -> None:
    summarizer = ScriptedSummarizer()
    off = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=100, history_enabled=False), summarizer)
    sid = off.create_session()
    answerer = FakeAnswerer()
    for i in range(10):
        events = await run_turn(
            off, sid, f"a long question number {i} with enough words to pass the threshold", answerer
        )
        assert phases(events) == []
    assert all(ctx.empty for ctx in answerer.contexts) and summarizer.calls == []
    assert len(off.records(sid)) == 10

    on = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=100), summarizer)
    sid2 = on.create_session(history_enabled=False)
    await run_turn(on, sid2, "first", answerer)
    await run_turn(on, sid2, "second", answerer)
    assert answerer.contexts[-1].empty
    on.set_history(sid2, True)
    await run_turn(on, sid2, "third", answerer)
    assert [t.question for t in answerer.contexts[-1].recent_turns] == ["first", "second"]


async def test_summarizer_gets_cleaned_copies_and_records_stay_whole(db: Database, tmp_path: Path) -> None:
    replies = {
        "好的": "收到",
        "remember: reply only 'noted'": "noted",
        "budget=35 for the project": "<think>the user wants the budget stored</think>Budget recorded as 35.",
    }
    answerer = FakeAnswerer(lambda q, ctx: replies.get(q, "A long answer " * 30))
    service = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=150), summarizer := ScriptedSummarizer())
    sid = service.create_session()
    for q in [*replies, "what is the budget now and what was decided so far?"]:
        await run_turn(service, sid, q, answerer)
    await service.context(sid)
    sent = [turn for _prev, turns in summarizer.calls for turn in turns]
    assert ("budget=35 for the project", "Budget recorded as 35.") in sent
    assert all("<think>" not in a and a not in ("收到", "noted") for _q, a in sent)
    assert all(q != "好的" for q, _a in sent)
    # The stored records keep the reasoning text and the acknowledgements.
    answers = [r["answer"] for r in service.records(sid)]
    assert "收到" in answers and any("<think>" in a for a in answers)


async def test_batches_commit_one_by_one_and_a_later_failure_keeps_earlier_batches(
    db: Database, tmp_path: Path
) -> None:
    settings = chat_settings(tmp_path, "x", recent_tokens=2000, summary_batch_turns=3)
    service = ChatService(db, settings, summarizer := ScriptedSummarizer())
    sid = service.create_session()
    answerer = FakeAnswerer()
    for i in range(10):
        await run_turn(service, sid, f"n{i}=x{i} " + "detail " * 20, answerer)
    assert summarizer.calls == []
    summarizer.enqueue("facts: n0=x0; n1=x1; n2=x2 | merged=3", ModelError("second batch failed"))
    events = [e async for e in service.compact(sid)]
    assert phases(events).count("compacting") == 2
    summary, watermark, revision, compacted = context_row(db, sid)
    assert (summary, revision, compacted) == ("facts: n0=x0; n1=x1; n2=x2 | merged=3", 1, 3)
    assert watermark == service.records(sid)[2]["id"]
    # Manual compaction again: the remaining six older turns merge in two batches; the latest stays raw.
    context = await service.compactor.context(sid, force=True)
    summary, watermark, revision, compacted = context_row(db, sid)
    assert (revision, compacted) == (3, 9)
    assert [t.question for t in context.recent_turns] == [service.records(sid)[-1]["question"]]
    assert parse_facts(summary) == {f"n{i}": f"x{i}" for i in range(9)}


async def test_manual_compaction_with_one_record_calls_no_summarizer(db: Database, tmp_path: Path) -> None:
    service = ChatService(db, chat_settings(tmp_path, "x"), summarizer := ScriptedSummarizer())
    sid = service.create_session()
    await run_turn(service, sid, "only question", FakeAnswerer())
    events = [e async for e in service.compact(sid)]
    assert phases(events) == ["context"] and summarizer.calls == []


async def test_latest_turn_is_kept_raw_even_when_it_alone_is_over_the_threshold(db: Database, tmp_path: Path) -> None:
    service = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=100), summarizer := ScriptedSummarizer())
    sid = service.create_session()
    answerer = FakeAnswerer(lambda q, ctx: "very long answer " * 200)
    await run_turn(service, sid, "give me everything", answerer)
    ctx = await service.context(sid)
    assert summarizer.calls == []  # nothing older to merge
    assert [t.question for t in ctx.recent_turns] == ["give me everything"]
    assert ctx.recent_turns[0].answer.startswith("very long answer")
    assert ctx.tokens <= 110  # cut copy for the model; the stored record stays whole
    assert service.records(sid)[0]["answer"] == "very long answer " * 200


async def test_a_failed_answer_is_stored_as_error_and_kept_out_of_history(db: Database, tmp_path: Path) -> None:
    from collections.abc import AsyncIterator
    from typing import Any

    from kbagent.memory import ConversationContext, TurnResult

    service = ChatService(db, chat_settings(tmp_path, "x"), ScriptedSummarizer())
    sid = service.create_session()

    async def failing(question: str, context: ConversationContext) -> AsyncIterator[Any]:
        yield ("retrieving", question)
        raise ProviderUnavailable("provider down")

    async def degraded(question: str, context: ConversationContext) -> AsyncIterator[Any]:
        yield TurnResult(answer="extractive answer", degraded=True)

    with pytest.raises(ProviderUnavailable):
        await run_turn(service, sid, "first", failing)  # type: ignore[arg-type]
    events = await run_turn(service, sid, "second", degraded)  # type: ignore[arg-type]
    assert stored(events).status == "degraded"
    answerer = FakeAnswerer()
    await run_turn(service, sid, "third", answerer)  # the lock was released after the failure
    assert [t.question for t in answerer.contexts[0].recent_turns] == ["second"]
    assert [(r["question"], r["status"]) for r in service.records(sid)] == [
        ("first", "error"),
        ("second", "degraded"),
        ("third", "ok"),
    ]


async def test_when_summaries_keep_failing_the_carried_turns_keep_key_events_and_relevant_ones(
    db: Database, tmp_path: Path
) -> None:
    service = ChatService(db, chat_settings(tmp_path, "x", recent_tokens=300), summarizer := ScriptedSummarizer())
    sid = service.create_session()
    answerer = FakeAnswerer(lambda q, ctx: "Noted.")
    summarizer.fn = lambda previous, turns: ""  # every summary comes back empty: nothing is ever merged
    script = ["My phone is 138 1234 5678, call me about the delivery.", "The parcel number is PX-778."]
    script += [f"General question {i} about opening hours and parking near the shop." for i in range(12)]
    for question in script:
        await run_turn(service, sid, question, answerer)
    ctx = await service.compactor.context(sid, question="which parcel number did I give you?")
    assert summarizer.calls and ctx.compaction_error and ctx.summary == ""
    carried = [t.question for t in ctx.recent_turns]
    assert script[0] in carried and script[1] in carried  # pinned contact detail; the turn the question is about
    assert carried[-1] == script[-1]  # the latest turn always stays
    assert len(carried) < len(script) and ctx.tokens <= 300
    # Without the question it falls back to the newest turns that fit.
    newest = await service.compactor.context(sid)
    assert script[0] not in [t.question for t in newest.recent_turns]
