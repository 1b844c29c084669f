"""``kbagent demo`` (what ``make run`` starts): load the sample handbook, then ask it questions (or search it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kbagent.cli.context import app_context
from kbagent.cli.knowledge_base import open_knowledge_base, print_hits, print_ingest_report, progress_bar
from kbagent.errors import UserError

DATASET = "handbook"
QUIT = {"quit", "exit", "q", ":q"}


def demo(
    ctx: typer.Context,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Results shown per query (with --search).")] = 3,
    search_only: Annotated[
        bool, typer.Option("--search", help="Only search: show the best paragraphs instead of asking the agent.")
    ] = False,
) -> None:
    """Load the sample handbook and talk with it (what `make run` starts).

    Creates the "handbook" dataset from the bundled sample (unchanged files are skipped on later runs), then
    starts a chat as `kbagent chat --dataset handbook` does: each question is answered by the retrieval agent
    with citations (offline, by extraction, when no language model is configured), in a stored session. With
    --search it shows the best paragraphs instead. "/exit" (chat), an empty line or "quit" (search) or the end
    of input leaves; without a terminal, questions are read line by line from standard input."""
    from kbagent.sample import handbook_dir

    app = app_context(ctx)
    kb = open_knowledge_base(ctx)
    if DATASET not in {d.name for d in kb.list_datasets()}:
        kb.create_dataset(DATASET, "Sample handbook of a fictional organisation (Chinese and English)")
    folder = handbook_dir()
    with progress_bar(app.err, f"loading the sample into {DATASET}") as progress:
        report = kb.ingest_paths(DATASET, [folder], progress=progress)
    print_ingest_report(app.console, app.err, report)
    # Documents are identified by path: after kbagent is reinstalled elsewhere, the copies loaded from the
    # old location would answer twice. The demo dataset holds only the sample, so drop what is not in it.
    current = str(folder.resolve())
    for doc in kb.list_documents(DATASET):
        if not Path(doc.source).is_relative_to(current):
            kb.delete_document(DATASET, doc.id)
    if not search_only:
        _chat(ctx)
        return
    interactive = sys.stdin.isatty()
    app.console.print(
        f"Search the {DATASET} dataset in Chinese or English (e.g. 年假有几天 / how do I file expenses). "
        "Empty line or 'quit' to leave."
    )
    while True:
        if interactive:
            try:
                line = app.console.input("[bold green]search>[/] ")
            except (EOFError, KeyboardInterrupt):
                break
        else:
            line = sys.stdin.readline()
            if not line:
                break
        query = line.strip()
        if not query or query.lower() in QUIT:
            break
        if not interactive:
            app.console.print(f"[bold green]search>[/] {escape(query)}")
        try:
            print_hits(app.console, kb.search([DATASET], query, top_k=top_k))
        except UserError as exc:  # a bad query should not end the session
            app.err.print(f"[red]error:[/] {escape(exc.message)}")


def _chat(ctx: typer.Context) -> None:
    from kbagent.cli.chat import chat

    app = app_context(ctx)
    app.console.print(
        f"Ask the {DATASET} dataset in Chinese or English, e.g. 年假有几天？病假怎么请？ or "
        "What is the taxi limit per day? Type /exit or end the input (Ctrl-D) to leave."
    )
    chat(ctx, dataset=[DATASET], session=None)
