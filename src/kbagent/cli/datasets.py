"""``kbagent dataset create|list|delete``."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from kbagent.cli.context import app_context
from kbagent.cli.knowledge_base import open_knowledge_base

app = typer.Typer(help="Create, list and delete datasets (knowledge bases).", no_args_is_help=True)


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Letters, digits, '_', '-' or '.'; at most 128.")],
    description: Annotated[str, typer.Option("--description", "-d", help="What the dataset holds.")] = "",
) -> None:
    """Create an empty dataset; it records the configured embedding model and dimension."""
    info = open_knowledge_base(ctx).create_dataset(name, description)
    app_context(ctx).console.print(
        f"created dataset [bold]{escape(info.name)}[/] "
        f"({escape(info.embedding_model)}, {info.embedding_dim} dimensions)"
    )


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Datasets with their document and paragraph counts and embedding model."""
    infos = open_knowledge_base(ctx).list_datasets()
    console = app_context(ctx).console
    if as_json:
        rows = [
            {
                "name": i.name,
                "description": i.description,
                "documents": i.document_count,
                "paragraphs": i.paragraph_count,
                "embedding_model": i.embedding_model,
                "embedding_dim": i.embedding_dim,
            }
            for i in infos
        ]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not infos:
        console.print("no datasets yet: `kbagent dataset create NAME`")
        return
    table = Table("name", "documents", "paragraphs", "embedding model", "description")
    for i in infos:
        table.add_row(
            escape(i.name),
            str(i.document_count),
            str(i.paragraph_count),
            escape(f"{i.embedding_model or 'none'} ({i.embedding_dim})"),
            escape(i.description),
        )
    console.print(table)


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a dataset with all its documents, paragraphs and vectors."""
    kb = open_knowledge_base(ctx)
    info = kb.get_dataset(name)
    if not yes:
        typer.confirm(
            f"delete dataset {name!r} with {info.document_count} documents and {info.paragraph_count} paragraphs?",
            abort=True,
        )
    kb.delete_dataset(name)
    app_context(ctx).console.print(f"deleted dataset [bold]{escape(name)}[/]")
