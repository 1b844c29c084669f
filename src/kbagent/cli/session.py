"""``kbagent session list|show|compact|history``: stored conversations, their summary and records."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from kbagent.cli.context import app_context
from kbagent.errors import InvalidInput
from kbagent.memory import ChatService, ConversationContext

app = typer.Typer(help="Stored chat sessions: list them, show one, compact one, switch its history on or off.")


def _service(ctx: typer.Context, *, summarizer: bool = False) -> ChatService:
    from kbagent.reasoning import OfflineReasoner, build_reasoner

    context = app_context(ctx)
    db = context.db
    ctx.call_on_close(db.close)
    # Only compaction needs the model; listing and showing must work without one configured.
    reasoner = build_reasoner(context.chat_model) if summarizer else OfflineReasoner()
    return ChatService(db, context.settings, reasoner)


@app.command("list")
def list_sessions(
    ctx: typer.Context,
    owner: Annotated[str | None, typer.Option(help="Only this owner's sessions.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Most sessions to show.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Sessions, most recently used first."""
    views = _service(ctx).sessions(owner=owner, limit=limit)
    if as_json:
        typer.echo(json.dumps([v.__dict__ for v in views], ensure_ascii=False, indent=2))
        return
    table = Table("id", "title", "turns", "history", "owner", "updated")
    for v in views:
        table.add_row(
            v.id, escape(v.title), str(v.records), "on" if v.history_enabled else "off", v.owner, v.updated_at
        )
    app_context(ctx).console.print(table)


@app.command("show")
def show(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON: session, summary state and every record.")
    ] = False,
) -> None:
    """The session's summary (with its watermark and revision) and every stored record, oldest first."""
    service = _service(ctx)
    view = service.session(session_id)
    state = service.summary_state(session_id)
    records = service.records(session_id)
    if as_json:
        data = {"session": view.__dict__, "context": state.__dict__, "records": records}
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    console = app_context(ctx).console
    console.print(
        f"[bold]{escape(view.title or '(untitled)')}[/]  {view.id}  history {'on' if view.history_enabled else 'off'}"
    )
    console.print(
        f"summary revision {state.revision}: {state.compacted_rounds} turns merged (up to record {state.watermark})"
    )
    if state.summary:
        console.print(state.summary, markup=False, highlight=False)
    for r in records:
        info = r["context_info"]
        console.print(
            f"\n[bold]#{r['id']}[/] ({r['status']}) stop: {r['agent_stop_reason'] or '-'}  context: "
            f"{info.get('compacted_rounds', 0)} summarized, {info.get('recent_rounds', 0)} recent, "
            f"revision {info.get('revision', 0)}"
        )
        console.print(f"Q: {r['question']}", markup=False, highlight=False)
        console.print(f"A: {r['answer']}", markup=False, highlight=False)


@app.command("compact")
def compact(ctx: typer.Context, session_id: Annotated[str, typer.Argument(help="Session id.")]) -> None:
    """Merge every turn but the latest into the session's summary now (the raw turns stay stored)."""
    service = _service(ctx, summarizer=True)
    err = app_context(ctx).err

    async def run() -> ConversationContext:
        result: ConversationContext | None = None
        try:
            async for item in service.compact(session_id):
                if isinstance(item, ConversationContext):
                    result = item
                elif item.phase == "compacting":
                    err.print("Compacting context…")
        finally:
            await app_context(ctx).aclose_chat_model()
        assert result is not None
        return result

    context = asyncio.run(run())
    info = context.context_info
    if context.compaction_error:
        err.print(f"[yellow]summary failed, nothing changed:[/] {escape(context.compaction_error)}")
        raise typer.Exit(1)
    app_context(ctx).console.print(
        f"{info.compacted_rounds} turns in the summary (revision {info.revision}); "
        f"{info.recent_rounds} recent turn(s) kept raw"
    )


@app.command("history")
def history(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    state: Annotated[str, typer.Argument(help="on: carry earlier turns into new questions; off: do not.")],
) -> None:
    """Switch conversation history on or off for one session."""
    if state not in ("on", "off"):
        raise InvalidInput("state", f"must be on or off, got {state!r}")
    service = _service(ctx)
    service.set_history(session_id, state == "on")
    app_context(ctx).console.print(f"history {state} for session {session_id}")
