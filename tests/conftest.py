"""Shared fixtures. Storage-backed tests run once on SQLite and once on a real PostgreSQL with pgvector.

PostgreSQL comes from ``KBAGENT_TEST_POSTGRES_URL`` (``.ci/run`` starts one with scripts/ci/start-postgres.sh);
without it the PostgreSQL half of each test is skipped with that reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from kbagent.settings import Settings, load_settings
from kbagent.storage import Database, open_database

REPO_ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = REPO_ROOT.parent / "shared" / "eval"

POSTGRES_ENV = "KBAGENT_TEST_POSTGRES_URL"


def pytest_configure(config: pytest.Config) -> None:
    # No test reaches a real language model unless it opts in (tests/llm/conftest.py: allow_model_requests).
    from kbagent.llm import switch

    switch.ALLOW_MODEL_REQUESTS = False


def postgres_admin_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_ENV} is not set (scripts/ci/start-postgres.sh starts a server with pgvector)")
    return url


def _create_pg_database(admin_url: str) -> tuple[str, str]:
    name = f"kbt_{uuid.uuid4().hex[:12]}"
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return name, make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def _drop_pg_database(admin_url: str, name: str) -> None:
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'kbagent.db'}"
        return
    admin = postgres_admin_url()
    name, url = _create_pg_database(admin)
    try:
        yield url
    finally:
        _drop_pg_database(admin, name)


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = open_database(database_url)
    try:
        yield database
    finally:
        database.close()


def make_settings(tmp_path: Path, database_url: str | None = None, **sections: Any) -> Settings:
    """Settings for a test: nothing from the developer's environment or kbagent.toml leaks in."""
    overrides: dict[str, Any] = {"data_dir": str(tmp_path / "data")}
    if database_url:
        overrides["database"] = {"url": database_url}
    overrides.update(sections)
    return load_settings(config_path=None, environ={}, overrides=overrides)


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return make_settings(tmp_path, database_url)


@pytest.fixture
def eval_dir() -> Path:
    if not EVAL_DIR.is_dir():
        pytest.skip(f"evaluation data not found at {EVAL_DIR} (../shared/eval beside the repository)")
    return EVAL_DIR
