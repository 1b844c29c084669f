"""``kbagent sandbox check``: verify, inside a real container, that the function sandbox holds."""

from __future__ import annotations

import asyncio

import typer

from kbagent.cli.context import app_context
from kbagent.functions import make_runner
from kbagent.functions.sandbox_check import run_checks

app = typer.Typer(help="The sandbox that Python functions run in.", no_args_is_help=True)


@app.command("check")
def check(ctx: typer.Context) -> None:
    """Non-root user, host secrets invisible, read-only root, no network, limits in force. Exit 1 if any fails."""
    actx = app_context(ctx)
    runner = make_runner(actx.settings.python)
    checks = asyncio.run(run_checks(runner))
    for item in checks:
        mark = "[green]PASS[/]" if item.passed else "[bold red]FAIL[/]"
        actx.console.print(f"{mark} {item.name}: [dim]{item.detail}[/]", highlight=False)
    failed = [c for c in checks if not c.passed]
    if failed:
        actx.console.print(f"[bold red]{len(failed)} of {len(checks)} checks failed[/]")
        raise typer.Exit(1)
    actx.console.print(f"all {len(checks)} checks passed ({actx.settings.python.runner} runner)")
