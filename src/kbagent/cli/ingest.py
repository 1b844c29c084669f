"""``kbagent ingest`` and ``kbagent reembed``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kbagent.cli.context import app_context
from kbagent.cli.knowledge_base import open_knowledge_base, print_ingest_report, progress_bar
from kbagent.errors import InvalidInput


def ingest(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Files and folders (walked recursively).")],
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset to ingest into (must exist).")],
    password_env: Annotated[
        str | None,
        typer.Option(
            "--password-env",
            help="Name of an environment variable holding the password of encrypted PDFs (never the password).",
        ),
    ] = None,
) -> None:
    """Ingest files and folders into a dataset.

    Parses, chunks, embeds and indexes each file. Unchanged files are skipped; changed files replace their
    old paragraphs. Each file that fails is printed with its reason, and the exit code is then 1."""
    app = app_context(ctx)
    password = None
    if password_env:
        password = os.environ.get(password_env)
        if password is None:
            raise InvalidInput("--password-env", f"environment variable {password_env} is not set")
    kb = open_knowledge_base(ctx)
    with progress_bar(app.err, f"ingesting into {dataset}") as progress:
        report = kb.ingest_paths(dataset, paths, progress=progress, password=password)
    print_ingest_report(app.console, app.err, report)
    if report.failures:
        raise typer.Exit(1)


def reembed(
    ctx: typer.Context,
    dataset: Annotated[str, typer.Argument(help="Dataset whose vectors to rebuild.")],
) -> None:
    """Rebuild a dataset's vectors with the configured embedding model.

    Needed after changing `embedding.*`: until then the dataset refuses vector and hybrid search."""
    app = app_context(ctx)
    kb = open_knowledge_base(ctx)
    with progress_bar(app.err, f"re-embedding {dataset}") as progress:
        info = kb.reembed(dataset, progress=progress)
    app.console.print(
        f"dataset [bold]{escape(info.name)}[/]: {info.paragraph_count} paragraphs embedded with "
        f"{escape(info.embedding_model)} ({info.embedding_dim} dimensions)"
    )
