"""Alembic, driven from code: migrations ship inside the package and run at start-up."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).with_name("migrations")


def _config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "heads") -> None:
    # "heads": each area (knowledge, functions, chat) has its own branch of migrations off 0001.
    command.upgrade(_config(engine), revision)


def current_revisions(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return set(MigrationContext.configure(conn).get_current_heads())


def head_revisions() -> set[str]:
    return set(ScriptDirectory(str(MIGRATIONS)).get_heads())
