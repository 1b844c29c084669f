"""What every command needs, built once from the Settings at the entry point and opened lazily."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from kbagent.settings import Settings

if TYPE_CHECKING:
    from kbagent.storage import Database


@dataclass
class AppContext:
    settings: Settings
    console: Console = field(default_factory=Console)
    err: Console = field(default_factory=lambda: Console(stderr=True))

    @cached_property
    def db(self) -> Database:
        from kbagent.storage import open_database

        return open_database(self.settings.database.url, pool_size=self.settings.database.pool_size)


def app_context(ctx: typer.Context) -> AppContext:
    obj = ctx.find_root().obj
    assert isinstance(obj, AppContext), "the root callback builds the AppContext"
    return obj
