"""``kbagent chat``: a conversation in the terminal, with progress, answers, citations and persisted memory.

Reads questions from the terminal, or line by line from standard input when it is not a terminal (so a script or a
test can drive it). ``/compact`` compacts the session by hand, ``/exit`` ends it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from kbagent.cli.context import app_context
from kbagent.memory import ChatService, ContextStatus, ConversationContext, TurnResult, TurnStored

if TYPE_CHECKING:
    from kbagent.agent import Agent
    from kbagent.memory import Answerer


def agent_answerer(agent: Agent, **options: Any) -> Answerer:
    """The agent as the chat service's answerer: history in as ``History``, ``DoneEvent`` out as ``TurnResult``."""
    from kbagent.agent import DoneEvent, History

    async def answer(question: str, context: ConversationContext) -> AsyncIterator[Any]:
        history = None
        if not context.empty:
            turns = tuple((t.question, t.answer) for t in context.recent_turns)
            history = History(summary=context.summary, turns=turns)
        async for event in agent.run(question, history=history, **options):
            if isinstance(event, DoneEvent):
                r = event.result
                yield TurnResult(
                    answer=r.answer,
                    citations=[c.to_dict() for c in r.citations],
                    agent_trace=[t.to_dict() for t in r.trace],
                    agent_stop_reason=r.stop_reason,
                    usage=dict(r.usage),
                    degraded=r.degraded,
                )
            else:
                yield event

    return answer


def build_chat(ctx: typer.Context, datasets: list[str]) -> tuple[ChatService, Answerer]:
    """The chat service and the agent over ``datasets``, from the command's settings (offline reasoner when no
    model is configured; the same reasoner writes the summaries)."""
    from kbagent.agent import Agent, KnowledgeRetriever
    from kbagent.knowledge.embeddings import build_embedder
    from kbagent.knowledge.service import KnowledgeBase
    from kbagent.reasoning import build_reasoner

    app = app_context(ctx)
    db = app.db
    ctx.call_on_close(db.close)
    settings = app.settings
    embedder = build_embedder(settings)
    kb = KnowledgeBase(db, settings, embedder)
    for name in datasets:
        kb.get_dataset(name)  # NotFound with the name, before any question is asked
    reasoner = build_reasoner(app.chat_model, settings.agent.queries_per_round)
    agent = Agent(settings.agent, reasoner, [KnowledgeRetriever(kb, datasets)])
    return ChatService(db, settings, reasoner, embedder=embedder), agent_answerer(agent)


def chat(
    ctx: typer.Context,
    dataset: Annotated[list[str], typer.Option("--dataset", "-d", help="Dataset to answer from; repeat for several.")],
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Continue this session (default: start a new one).")
    ] = None,
) -> None:
    """Talk with the knowledge base. Each answer is stored in the session; long sessions are compacted into a
    summary of older turns (the raw turns stay stored). Type /compact to compact now, /exit to leave."""
    app = app_context(ctx)
    service, answerer = build_chat(ctx, dataset)
    if session is None:
        session_id = service.create_session()
        app.err.print(f"new session [bold]{session_id}[/]", highlight=False)
    else:
        view = service.session(session)
        session_id = view.id
        app.err.print(f"session [bold]{session_id}[/] ({view.records} turns so far)", highlight=False)

    async def converse() -> None:
        try:
            await _converse(service, answerer, session_id, app.console, app.err, _questions())
        finally:
            await app.aclose_chat_model()

    asyncio.run(converse())


def _questions() -> Callable[[], str | None]:
    interactive = sys.stdin.isatty()

    def next_question() -> str | None:
        try:
            line = input("you> ") if interactive else sys.stdin.readline()
        except EOFError:
            return None
        if not interactive and line == "":
            return None
        return line.strip()

    return next_question


async def _converse(
    service: ChatService,
    answerer: Answerer,
    session_id: str,
    console: Console,
    err: Console,
    next_question: Callable[[], str | None],
) -> None:
    titled = bool(service.session(session_id).title)
    while (question := next_question()) is not None:
        if not question:
            continue
        if question in ("/exit", "/quit"):
            break
        if question == "/compact":
            async for item in service.compact(session_id):
                show_progress(item, err)
                if isinstance(item, ConversationContext):
                    info = item.context_info
                    err.print(f"compacted: {info.compacted_rounds} turns in the summary (revision {info.revision})")
            continue
        if not titled:
            service.rename(session_id, question[:80])
            titled = True
        async for event in service.ask(session_id, question, answerer):
            show_event(event, console, err)


def show_progress(item: object, err: Console) -> None:
    if isinstance(item, ContextStatus) and item.phase == "compacting":
        err.print("[dim]Compacting context…[/]")


def show_event(event: object, console: Console, err: Console) -> None:
    """Progress on stderr, answer text and citations on stdout (so the answer can be piped)."""
    from kbagent.agent import AnswerDelta, CitationsEvent, StatusEvent

    if isinstance(event, ContextStatus):
        show_progress(event, err)
    elif isinstance(event, StatusEvent):
        if event.phase == "retrieving":
            err.print(f"[dim]Searching (round {event.round}): {escape('; '.join(event.queries))}[/]")
        elif event.phase == "assessed":
            state = "enough evidence" if event.sufficient else f"missing: {escape(event.missing)}"
            err.print(f"[dim]Assessed: {event.total_evidence} paragraphs, {state}[/]")
        elif event.phase == "generating":
            err.print("[dim]Writing the answer…[/]")
    elif isinstance(event, AnswerDelta):
        console.print(event.text, end="", markup=False, highlight=False, soft_wrap=True)
    elif isinstance(event, CitationsEvent):
        console.print()
        for c in event.citations:
            where = " > ".join(c.title_path)
            console.print(f"  [{c.marker}] {c.document}" + (f" — {where}" if where else ""), markup=False)
    elif isinstance(event, TurnStored):
        console.print()
        info = event.context_info
        flag = " (degraded: the model failed, the offline reasoner answered)" if event.status == "degraded" else ""
        err.print(
            f"[dim]record {event.record_id}: {info.compacted_rounds} turns summarized, "
            f"{info.recent_rounds} recent turns carried, summary revision {info.revision}{flag}[/]"
        )
