"""Sandbox fixtures: a real Docker engine and the sandbox image, or a skip that says which is missing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from kbagent.errors import SandboxError
from kbagent.functions.docker_runner import DockerRunner
from kbagent.settings import PythonSettings, load_settings


def python_settings(**overrides: Any) -> PythonSettings:
    """The ``python`` settings section with test overrides; nothing from the developer's environment."""
    return load_settings(config_path=None, environ={}, overrides={"python": overrides}).python


@pytest.fixture(scope="session")
def docker_engine() -> str:
    """Skips (with the reason) unless the Docker CLI, its daemon and the sandbox image are all present."""
    try:
        return asyncio.run(DockerRunner(python_settings()).check_ready())
    except SandboxError as exc:
        pytest.skip(f"Docker sandbox unavailable: {exc.message} (scripts/ci/start-docker.sh sets it up)")


@pytest.fixture
def docker_runner(docker_engine: str) -> DockerRunner:
    return DockerRunner(python_settings())


@pytest.fixture
def sandbox_settings() -> Callable[..., PythonSettings]:
    """``sandbox_settings(memory_mb=128, ...)``: the ``python`` section with overrides."""
    return python_settings
