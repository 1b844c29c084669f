"""Root of the ``kbagent`` command: builds Settings once, maps errors to clear messages and exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kbagent.cli.context import AppContext
from kbagent.errors import KbagentError, UserError
from kbagent.settings import load_settings

app = typer.Typer(
    name="kbagent",
    help="Knowledge-base question answering: ingest documents, search them, ask questions with cited answers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="kbagent.toml to read (default: ./kbagent.toml).")
    ] = None,
) -> None:
    ctx.obj = AppContext(settings=load_settings(config))


def _register() -> None:
    # Each command group lives in its own module; this is the one place that mounts them.
    from kbagent.cli import ask, chat, datasets, demo, documents, function, ingest, llm, sandbox, search, session
    from kbagent.cli.eval import eval_app

    app.command("demo")(demo.demo)
    app.add_typer(datasets.app, name="dataset")
    app.add_typer(documents.app, name="document")
    app.command("ingest")(ingest.ingest)
    app.command("reembed")(ingest.reembed)
    app.command("search")(search.search)
    app.command("ask")(ask.ask)
    app.command("chat")(chat.chat)
    app.add_typer(session.app, name="session")
    app.add_typer(eval_app, name="eval")
    app.add_typer(llm.app, name="llm")
    app.add_typer(function.app, name="function")
    app.add_typer(sandbox.app, name="sandbox")


_register()


def main() -> None:
    try:
        app()
    except KbagentError as exc:
        from rich.console import Console

        Console(stderr=True).print(f"[bold red]error:[/] {exc.message}", highlight=False)
        sys.exit(2 if isinstance(exc, UserError) else 1)
