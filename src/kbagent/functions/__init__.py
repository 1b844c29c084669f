"""Python function library and its sandbox runners.

Public face: ``FunctionLibrary`` (save/list/show), ``define`` + ``execute`` (the one shared way to run a
function), ``make_runner`` (Docker by default; bubblewrap only when configured), ``ParamSpec`` and
``RunResult``. User code is only ever parsed on the host, never run there.
"""

from kbagent.functions.library import (
    FunctionDefinition,
    FunctionLibrary,
    StoredFunction,
    define,
    execute,
    make_runner,
)
from kbagent.functions.params import ParamSpec, make_spec, parse_spec
from kbagent.functions.runner import FunctionException, Runner, RunRequest, RunResult

__all__ = [
    "FunctionDefinition",
    "FunctionException",
    "FunctionLibrary",
    "ParamSpec",
    "RunRequest",
    "RunResult",
    "Runner",
    "StoredFunction",
    "define",
    "execute",
    "make_runner",
    "make_spec",
    "parse_spec",
]
