"""What every command needs, built once from the Settings at the entry point and opened lazily."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from kbagent.settings import Settings

if TYPE_CHECKING:
    from kbagent.llm import ChatModel
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

    @cached_property
    def chat_model(self) -> ChatModel | None:
        """The configured language model, or None (offline). Built once per command; a command that used it
        calls ``aclose_chat_model`` inside the same event loop, so no connection is left open."""
        from kbagent.llm.factory import build_chat_model

        return build_chat_model(self.settings)

    async def aclose_chat_model(self) -> None:
        model = self.__dict__.get("chat_model")  # only if it was built
        if model is not None:
            from kbagent.llm import close_model

            await close_model(model)


def app_context(ctx: typer.Context) -> AppContext:
    obj = ctx.find_root().obj
    assert isinstance(obj, AppContext), "the root callback builds the AppContext"
    return obj
