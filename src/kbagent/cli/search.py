"""``kbagent search``."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer

from kbagent.cli.context import app_context
from kbagent.cli.knowledge_base import open_knowledge_base, print_hits


def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for, in any language.")],
    dataset: Annotated[list[str], typer.Option("--dataset", "-d", help="Dataset to search; repeat for several.")],
    top_k: Annotated[
        int | None, typer.Option("--top-k", "-k", help="Number of results (default search.top_k).")
    ] = None,
    mode: Annotated[
        str | None, typer.Option("--mode", "-m", help="hybrid, keyword or vector (default search.mode).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the hits as a JSON list.")] = False,
) -> None:
    """Search one or more datasets by words and meaning.

    Prints each hit's dataset, document, title path, scores and text (or JSON with --json)."""
    hits = open_knowledge_base(ctx).search(dataset, query, top_k=top_k, mode=mode)
    console = app_context(ctx).console
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(h) for h in hits], ensure_ascii=False, indent=2))
    else:
        print_hits(console, hits)
