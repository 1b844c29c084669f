"""Fixtures for the CLI tests: the real typer app, run in-process against a test database."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli.app import app


@pytest.fixture
def run(tmp_path: Path, database_url: str):  # type: ignore[no-untyped-def]
    """``run(*args, input=None, extra_env=None)``: invoke ``kbagent`` with the test database and data folder."""
    runner = CliRunner()
    env = {"KBAGENT_DATABASE_URL": database_url, "KBAGENT_DATA_DIR": str(tmp_path / "data"), "KBAGENT_CONFIG": ""}

    def invoke(*args: str, input: str | None = None, extra_env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(app, list(args), env={**env, **(extra_env or {})}, input=input)

    return invoke
