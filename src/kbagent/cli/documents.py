"""``kbagent document list|delete``."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from kbagent.cli.context import app_context
from kbagent.cli.knowledge_base import open_knowledge_base

app = typer.Typer(help="List and delete the documents of a dataset.", no_args_is_help=True)

DatasetOption = Annotated[str, typer.Option("--dataset", "-d", help="Dataset name.")]


@app.command("list")
def list_(
    ctx: typer.Context,
    dataset: DatasetOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Documents of a dataset: id, name, format, paragraphs, size and source."""
    docs = open_knowledge_base(ctx).list_documents(dataset)
    console = app_context(ctx).console
    if as_json:
        rows = [
            {
                "id": d.id,
                "name": d.name,
                "source": d.source,
                "format": d.format,
                "paragraphs": d.paragraph_count,
                "size_bytes": d.size_bytes,
                "updated_at": d.updated_at.isoformat(),
            }
            for d in docs
        ]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not docs:
        console.print(f"dataset {escape(dataset)} has no documents: `kbagent ingest PATH --dataset {escape(dataset)}`")
        return
    table = Table("id", "name", "format", "paragraphs", "bytes", "source")
    for d in docs:
        table.add_row(str(d.id), escape(d.name), d.format, str(d.paragraph_count), str(d.size_bytes), escape(d.source))
    console.print(table)


@app.command("delete")
def delete(
    ctx: typer.Context,
    document: Annotated[str, typer.Argument(help="Document id or source path (see `kbagent document list`).")],
    dataset: DatasetOption,
) -> None:
    """Remove a document from the dataset and from every index."""
    info = open_knowledge_base(ctx).delete_document(dataset, document)
    app_context(ctx).console.print(
        f"deleted document {info.id} [bold]{escape(info.name)}[/] ({info.paragraph_count} paragraphs) "
        f"from {escape(dataset)}"
    )
