"""``kbagent llm``: check a configured language-model provider."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.table import Table

from kbagent.cli.context import app_context
from kbagent.errors import ConfigError
from kbagent.llm.check import check_provider

app = typer.Typer(
    help="Language-model providers (profiles are `llm.providers.NAME` tables in kbagent.toml).", no_args_is_help=True
)


@app.command("check")
def check(
    ctx: typer.Context,
    provider: Annotated[
        str | None, typer.Option("--provider", "-p", help="Profile name (default: llm.provider).")
    ] = None,
) -> None:
    """Call the provider once and report model, latency, the thinking switch and structured-output support."""
    app_ctx = app_context(ctx)
    settings = app_ctx.settings
    if provider is None and not settings.llm.provider:
        known = ", ".join(sorted(settings.llm.providers)) or "none"
        raise ConfigError(f"no provider to check: llm.provider is empty (profiles: {known}); pass --provider NAME")
    report = asyncio.run(check_provider(settings, provider))
    table = Table(show_header=False, title=f"provider {report.provider}")
    table.add_row("model", report.model)
    table.add_row("base_url", report.base_url)
    if not report.ok:
        table.add_row("result", f"[red]failed[/]: {report.error}")
        app_ctx.console.print(table)
        raise typer.Exit(1)
    table.add_row("result", "[green]ok[/]")
    table.add_row("latency", f"{report.latency_ms:.0f} ms")
    table.add_row("reply", report.reply or "(empty)")
    table.add_row("thinking off", report.thinking)
    table.add_row("structured output", report.structured)
    for note in report.notes:
        table.add_row("note", note)
    app_ctx.console.print(table)
