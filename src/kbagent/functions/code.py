"""Save-time checks of a function's source, done with ``ast`` on the host: the code is parsed, never run here."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from kbagent.errors import InvalidInput
from kbagent.functions.params import ParamSpec

MAX_CODE_BYTES = 256 * 1024


@dataclass(frozen=True)
class CodeInfo:
    functions: tuple[str, ...]  # top-level functions, in source order

    @property
    def default_entrypoint(self) -> str:
        """The last top-level function is the entry point unless a debug run names another."""
        return self.functions[-1]


def analyse(code: str, params: Sequence[ParamSpec] = (), entrypoint: str | None = None) -> CodeInfo:
    """Parse ``code`` and find its functions; refuse it with the line and reason when it cannot be used.

    Refused: code that does not parse, code with no top-level function, an ``entrypoint`` that is not one
    of them, and declared parameters the entry point cannot accept.
    """
    size = len(code.encode("utf-8"))
    if size > MAX_CODE_BYTES:
        raise InvalidInput("code", f"{size} bytes is over the limit of {MAX_CODE_BYTES}")
    try:
        tree = ast.parse(code, filename="<function>")
    except SyntaxError as exc:
        raise InvalidInput("code", f"line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # e.g. NUL bytes in the source
        raise InvalidInput("code", str(exc)) from None
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    ordered = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not ordered:
        last = max((getattr(n, "end_lineno", 1) or 1 for n in tree.body), default=1)
        raise InvalidInput("code", f"line {last}: no top-level function (define one with `def`)")
    # A name defined twice keeps its last definition, as Python does.
    functions = tuple(dict.fromkeys(reversed(ordered)))[::-1]
    info = CodeInfo(functions=functions)
    name = entrypoint or info.default_entrypoint
    if name not in defs:
        raise InvalidInput("entrypoint", f"{name!r} is not a top-level function (found: {', '.join(functions)})")
    _check_signature(defs[name], params)
    return info


def _check_signature(node: ast.FunctionDef | ast.AsyncFunctionDef, params: Sequence[ParamSpec]) -> None:
    args = node.args
    if args.kwarg is not None:
        return
    accepted = {a.arg for a in args.args + args.kwonlyargs}
    for spec in params:
        if spec.name not in accepted:
            raise InvalidInput(
                f"params.{spec.name}",
                f"line {node.lineno}: {node.name}() has no parameter {spec.name!r} to receive it",
            )
