"""``kbagent function``: add, list, show, run and debug Python functions (run in disposable containers)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kbagent.cli.context import AppContext, app_context
from kbagent.errors import InvalidInput
from kbagent.functions import FunctionLibrary, RunResult, define, execute, make_runner, parse_spec
from kbagent.functions.library import DEFAULT_OWNER

app = typer.Typer(help="Python functions that run in disposable, hardened containers.", no_args_is_help=True)

OwnerOption = Annotated[str, typer.Option("--owner", help="Owner (user name once users exist).")]
ParamsOption = Annotated[str, typer.Option("--params", help="Call parameters as a JSON object, e.g. '{\"x\": 1}'.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")]


def _json_object(text: str, field: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(field, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise InvalidInput(field, f"expected a JSON object, got {type(value).__name__}")
    return value


def _read_code(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("FILE", f"cannot read {file}: {exc}") from None


@app.command("add")
def add(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="Python source file; its last top-level function is the entry point.")],
    name: Annotated[str, typer.Option("--name", help="Name to store the function under.")],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="Declare a parameter: name:type[:required|optional][=default]. Repeatable."),
    ] = None,
    description: Annotated[str, typer.Option("--description")] = "",
    public: Annotated[bool, typer.Option("--public", help="Let other users list and run it.")] = False,
    init: Annotated[str, typer.Option("--init", help="Stored init parameter values, a JSON object.")] = "{}",
    owner: OwnerOption = DEFAULT_OWNER,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite a function of the same name.")] = False,
) -> None:
    """Check and store a function. Code that does not parse or has no function is refused with line and reason."""
    actx = app_context(ctx)
    specs = [parse_spec(p) for p in param or []]
    stored = FunctionLibrary(actx.db).add(
        name,
        _read_code(file),
        params=specs,
        init_params=_json_object(init, "--init"),
        description=description,
        public=public,
        owner=owner,
        replace=replace,
    )
    actx.console.print(f"saved function [bold]{stored.name}[/] (entry point {stored.entrypoint}, owner {stored.owner})")


@app.command("list")
def list_(
    ctx: typer.Context,
    owner: Annotated[str, typer.Option("--owner", help="List as this user.")] = DEFAULT_OWNER,
    as_json: JsonFlag = False,
) -> None:
    """Your functions and other users' public ones (their init parameter values are never shown)."""
    actx = app_context(ctx)
    functions = FunctionLibrary(actx.db).list(viewer=owner)
    if as_json:
        actx.console.print_json(json.dumps([f.to_json() for f in functions], ensure_ascii=False))
        return
    table = Table("name", "owner", "entry point", "parameters", "public", "description")
    for f in functions:
        signature = ", ".join(f"{p.name}:{p.type}{'' if p.required else '?'}" for p in f.params)
        table.add_row(f.name, f.owner, f.entrypoint, signature, "yes" if f.public else "", f.description)
    actx.console.print(table)


@app.command("show")
def show(
    ctx: typer.Context,
    name: str,
    owner: Annotated[str, typer.Option("--owner", help="Show as this user.")] = DEFAULT_OWNER,
) -> None:
    """A function's declarations, init values (owner only) and code, as JSON."""
    actx = app_context(ctx)
    stored = FunctionLibrary(actx.db).get(name, viewer=owner)
    data = stored.to_json()
    data["code"] = stored.code
    if stored.init_params is None:
        data["init_params"] = f"({stored.init_param_count} hidden: only the owner sees init values)"
    actx.console.print_json(json.dumps(data, ensure_ascii=False))


@app.command("run")
def run(
    ctx: typer.Context,
    name: str,
    params: ParamsOption = "{}",
    owner: Annotated[str, typer.Option("--owner", help="Run as this user.")] = DEFAULT_OWNER,
    as_json: JsonFlag = False,
) -> None:
    """Run a stored function once in a fresh container. Exit code 1 when it does not return a value."""
    actx = app_context(ctx)
    library = FunctionLibrary(actx.db)
    runner = make_runner(actx.settings.python)
    result = asyncio.run(library.run(name, _json_object(params, "--params"), runner, viewer=owner))
    _report(actx, result, as_json)


@app.command("debug")
def debug(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="Python source file to run (not stored).")],
    entrypoint: Annotated[
        str | None, typer.Option("--entrypoint", help="Function to call (default: the last top-level one).")
    ] = None,
    params: ParamsOption = "{}",
    as_json: JsonFlag = False,
) -> None:
    """Run a file once in a fresh container without storing it; parameters pass through unconverted."""
    actx = app_context(ctx)
    definition = define(_read_code(file), entrypoint=entrypoint)
    runner = make_runner(actx.settings.python)
    result = asyncio.run(execute(definition, _json_object(params, "--params"), runner))
    _report(actx, result, as_json)


def _report(actx: AppContext, result: RunResult, as_json: bool) -> None:
    if as_json:
        actx.console.print_json(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        for label, text, cut in (
            ("stdout", result.stdout, result.stdout_truncated),
            ("stderr", result.stderr, result.stderr_truncated),
        ):
            if text:
                actx.err.rule(f"function {label}" + (" (cut)" if cut else ""))
                actx.err.out(text, end="" if text.endswith("\n") else "\n", highlight=False)
        if result.ok:
            actx.console.out(json.dumps(result.value, ensure_ascii=False, indent=2), highlight=False)
        elif result.error is not None:
            actx.err.out(result.error.traceback.rstrip(), highlight=False)
            actx.err.print(f"[bold red]error:[/] the function raised {result.error.type}", highlight=False)
        else:
            actx.err.print(f"[bold red]{result.status}:[/] {result.detail}", highlight=False)
    if not result.ok:
        raise typer.Exit(1)
