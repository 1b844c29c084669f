"""``kbagent ask``: one question, answered by the retrieval agent with progress, a streamed answer and citations."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from kbagent.cli.context import app_context
from kbagent.cli.knowledge_base import open_knowledge_base
from kbagent.errors import InvalidInput

if TYPE_CHECKING:
    from kbagent.agent import AgentResult, StatusEvent


def _progress_line(event: StatusEvent) -> str:
    if event.phase == "retrieving":
        return f"round {event.round}: searching " + "; ".join(event.queries)
    if event.phase == "assessed":
        if event.message:
            return f"round {event.round}: {event.message}"
        verdict = "sufficient" if event.sufficient else f"missing: {event.missing or '?'}"
        return f"round {event.round}: {event.new_evidence} new paragraphs, {event.total_evidence} in all; {verdict}"
    if event.phase == "generating":
        return f"writing the answer from {event.total_evidence} paragraphs"
    return event.phase


def print_citations(console: Console, result: AgentResult) -> None:
    if not result.citations:
        return
    console.print()
    for c in result.citations:
        where = " › ".join([c.document, *c.title_path])
        page = f", page {c.page}" if c.page is not None else ""
        console.print(f"[bold cyan][{c.marker}][/] {escape(where)}{page} [dim]({escape(c.source)})[/]", soft_wrap=True)


def print_trace(err: Console, result: AgentResult) -> None:
    err.print(
        f"[dim]stop: {result.stop_reason}; rounds: {result.rounds_used}; reasoner: {escape(result.reasoner)}"
        f"{'; degraded' if result.degraded else ''}; {result.duration_ms:.0f} ms[/]"
    )
    for r in result.trace:
        err.print(
            f"[dim]  round {r.round}: queries {json.dumps(list(r.queries), ensure_ascii=False)}; "
            f"+{len(r.new_paragraph_ids)} -> {r.total_evidence}; sufficient={r.sufficient}; "
            f"missing={escape(r.missing)!r}; next {json.dumps(list(r.next_queries), ensure_ascii=False)}; "
            f"retrieve {r.retrieve_ms:.0f} ms, assess {r.assess_ms:.0f} ms[/]",
            soft_wrap=True,
        )


def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question, in Chinese or English.")],
    dataset: Annotated[list[str], typer.Option("--dataset", "-d", help="Dataset to search (repeat for several).")],
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy", help="verify (assess coverage each round) or decide (the model picks SEARCH/FINAL)."
        ),
    ] = None,
    max_rounds: Annotated[
        int | None, typer.Option("--max-rounds", help="Most retrieval rounds (default agent.max_rounds).")
    ] = None,
    trace: Annotated[
        bool, typer.Option("--trace", help="Print each round's queries and judgement at the end.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON object: answer, citations, agent_trace, agent_stop_reason, rounds_used, degraded, "
            "duration_ms (and usage).",
        ),
    ] = False,
) -> None:
    """Answer QUESTION from the datasets, citing each paragraph by its number in square brackets.

    Runs offline (extractive) when no language model is configured.
    """
    from kbagent.agent import Agent, AnswerDelta, DoneEvent, KnowledgeRetriever, StatusEvent
    from kbagent.reasoning import build_reasoner

    app = app_context(ctx)
    settings = app.settings
    if strategy is not None and strategy not in ("verify", "decide"):
        raise InvalidInput("--strategy", f"must be verify or decide, got {strategy!r}")
    kb = open_knowledge_base(ctx)
    for name in dataset:
        kb.get_dataset(name)  # NotFound names an unknown dataset before any work starts
    reasoner = build_reasoner(app.chat_model, settings.agent.queries_per_round)
    agent = Agent(settings.agent, reasoner, [KnowledgeRetriever(kb, dataset)])
    if reasoner.name == "offline" and not as_json:
        app.err.print("[dim]no language model configured (llm.provider): answering offline, by extraction[/]")

    async def run() -> AgentResult:
        async for event in agent.run(
            question,
            strategy=strategy,  # type: ignore[arg-type]
            max_rounds=max_rounds,
            style="ask",
        ):
            if as_json:
                if isinstance(event, DoneEvent):
                    return event.result
                continue
            if isinstance(event, StatusEvent):
                app.err.print(f"[dim]{escape(_progress_line(event))}[/]", soft_wrap=True)
            elif isinstance(event, AnswerDelta):
                app.console.print(event.text, end="", markup=False, highlight=False, soft_wrap=True)
            elif isinstance(event, DoneEvent):
                return event.result
        raise AssertionError("the agent always ends with a DoneEvent")

    async def run_and_close() -> AgentResult:
        try:
            return await run()
        finally:
            await app.aclose_chat_model()

    result = asyncio.run(run_and_close())
    if as_json:
        typer.echo(json.dumps(result.to_dict(), ensure_ascii=False))
        return
    app.console.print()
    if result.degraded:
        app.err.print("[yellow]degraded: the language model failed; the offline reasoner answered[/]")
    print_citations(app.console, result)
    if trace:
        print_trace(app.err, result)
