"""The function library: save, list and show stored functions, and ``execute``, the one shared entry point
that the CLI uses now and the API and workflow nodes use later."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kbagent.errors import InvalidInput, NotFound
from kbagent.functions.code import analyse
from kbagent.functions.params import ParamSpec, convert, merge_params
from kbagent.functions.runner import Runner, RunRequest, RunResult
from kbagent.settings import PythonSettings
from kbagent.storage import Database
from kbagent.storage import functions as store
from kbagent.storage.tables import PythonFunction

DEFAULT_OWNER = "local"
_NAME_LIMIT = 128


@dataclass(frozen=True)
class FunctionDefinition:
    """Everything needed to run a function. Build it with ``define`` so the code has been checked."""

    code: str
    entrypoint: str
    params: tuple[ParamSpec, ...] = ()
    init_params: Mapping[str, Any] | None = None


def define(
    code: str,
    params: Sequence[ParamSpec] = (),
    init_params: Mapping[str, Any] | None = None,
    entrypoint: str | None = None,
) -> FunctionDefinition:
    """Check the code (parse, find the entry point, match the declarations) and the init values' types."""
    info = analyse(code, params, entrypoint)
    declared = {spec.name: spec for spec in params}
    init = dict(init_params or {})
    for key, value in init.items():
        if declared and key not in declared:
            raise InvalidInput(f"init_params.{key}", "not a declared parameter of this function")
        if key in declared:
            init[key] = convert(key, declared[key].type, value)
    return FunctionDefinition(
        code=code, entrypoint=entrypoint or info.default_entrypoint, params=tuple(params), init_params=init
    )


async def execute(function: FunctionDefinition, params: Mapping[str, Any], runner: Runner) -> RunResult:
    """Run ``function`` once in a fresh sandbox with its init values merged under ``params`` (the call wins).

    Raises InvalidInput for parameters of the wrong type, missing or undeclared, and SandboxError when the
    sandbox cannot run. Everything the function itself does (return, raise, time out, exhaust memory, print
    too much) comes back as the RunResult's ``status``.
    """
    arguments = merge_params(function.params, function.init_params or {}, params)
    try:
        encoded = json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("params", f"values must be JSON ({exc})") from None
    limit = runner.settings.output_limit_bytes
    if len(encoded.encode("utf-8")) > limit:
        raise InvalidInput("params", f"{len(encoded.encode('utf-8'))} bytes of JSON, over the limit of {limit}")
    return await runner.run(RunRequest(code=function.code, entrypoint=function.entrypoint, params=arguments))


def make_runner(settings: PythonSettings) -> Runner:
    """The configured runner: Docker unless ``python.runner`` names bubblewrap explicitly."""
    if settings.runner == "bubblewrap":
        from kbagent.functions.bubblewrap_runner import BubblewrapRunner

        return BubblewrapRunner(settings)
    from kbagent.functions.docker_runner import DockerRunner

    return DockerRunner(settings)


@dataclass(frozen=True)
class StoredFunction:
    """A stored function as one viewer sees it: ``init_params`` is None unless the viewer owns it."""

    id: int
    owner: str
    name: str
    description: str
    code: str
    params: tuple[ParamSpec, ...]
    init_params: dict[str, Any] | None
    init_param_count: int
    public: bool
    entrypoint: str
    created_at: datetime
    updated_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner": self.owner,
            "name": self.name,
            "description": self.description,
            "params": [p.to_json() for p in self.params],
            "init_params": self.init_params,
            "public": self.public,
            "entrypoint": self.entrypoint,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


def _view(row: PythonFunction, viewer: str) -> StoredFunction:
    specs = tuple(ParamSpec.from_json(p) for p in row.params)
    return StoredFunction(
        id=row.id,
        owner=row.owner,
        name=row.name,
        description=row.description,
        code=row.code,
        params=specs,
        init_params=dict(row.init_params) if row.owner == viewer else None,
        init_param_count=len(row.init_params),
        public=row.public,
        entrypoint=analyse(row.code).default_entrypoint,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class FunctionLibrary:
    """Stored functions of one database. ``viewer`` is the user asking; "local" until the API adds users."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def add(
        self,
        name: str,
        code: str,
        *,
        params: Sequence[ParamSpec] = (),
        init_params: Mapping[str, Any] | None = None,
        description: str = "",
        public: bool = False,
        owner: str = DEFAULT_OWNER,
        replace: bool = False,
    ) -> StoredFunction:
        """Check and store a function; refused with the line and reason when the code cannot be used."""
        if not name.strip() or len(name) > _NAME_LIMIT:
            raise InvalidInput("name", f"must be 1 to {_NAME_LIMIT} characters")
        if not owner.strip() or len(owner) > _NAME_LIMIT:
            raise InvalidInput("owner", f"must be 1 to {_NAME_LIMIT} characters")
        definition = define(code, params, init_params)
        with self.db.write() as session:
            row = store.save_function(
                session,
                owner=owner,
                name=name,
                description=description,
                code=code,
                params=[p.to_json() for p in params],
                init_params=dict(definition.init_params or {}),
                public=public,
                replace=replace,
            )
            return _view(row, owner)

    def get(self, name: str, *, viewer: str = DEFAULT_OWNER, owner: str | None = None) -> StoredFunction:
        with self.db.read() as session:
            row = store.visible_function(session, viewer, name, owner)
            if row is None:
                raise NotFound(f"no function {name!r} visible to {viewer!r} (see `kbagent function list`)")
            return _view(row, viewer)

    def list(self, *, viewer: str = DEFAULT_OWNER, include_public: bool = True) -> list[StoredFunction]:
        """The viewer's functions and others' public ones; others' init values are never included."""
        with self.db.read() as session:
            return [
                _view(row, viewer) for row in store.visible_functions(session, viewer, include_public=include_public)
            ]

    def remove(self, name: str, *, owner: str = DEFAULT_OWNER) -> None:
        with self.db.write() as session:
            if not store.delete_function(session, owner, name):
                raise NotFound(f"no function {name!r} owned by {owner!r}")

    def definition(self, name: str, *, viewer: str = DEFAULT_OWNER, owner: str | None = None) -> FunctionDefinition:
        """What ``execute`` needs, with the owner's init values (used, never shown to another viewer)."""
        with self.db.read() as session:
            row = store.visible_function(session, viewer, name, owner)
            if row is None:
                raise NotFound(f"no function {name!r} visible to {viewer!r} (see `kbagent function list`)")
            specs = tuple(ParamSpec.from_json(p) for p in row.params)
            return define(row.code, specs, row.init_params)

    async def run(
        self, name: str, params: Mapping[str, Any], runner: Runner, *, viewer: str = DEFAULT_OWNER
    ) -> RunResult:
        return await execute(self.definition(name, viewer=viewer), params, runner)
