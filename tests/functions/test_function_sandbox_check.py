"""``kbagent sandbox check`` on the real engine, and the judgement of each probed fact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kbagent.cli.app import app
from kbagent.functions.docker_runner import DockerRunner
from kbagent.functions.sandbox_check import judge, run_checks
from kbagent.settings import PythonSettings


def _safe_facts() -> dict[str, Any]:
    return {
        "uid": 65534,
        "gid": 65534,
        "cap_eff": "0000000000000000",
        "no_new_privs": "1",
        "seccomp": "2",
        "env_names": ["HOME", "PATH"],
        "canary_seen": False,
        "secret_names_seen": [],
        "writes": [
            {"path": "/", "writable": False, "error": "read-only"},
            {"path": "/tmp", "writable": True, "error": ""},
        ],
        "tmp_exec": {"executed": False, "error": "exec refused"},
        "interfaces": ["lo"],
        "connect_host_listener": {"target": "127.0.0.1:1", "connected": False, "error": "refused"},
        "connect_outside": {"target": "192.0.2.1:80", "connected": False, "error": "unreachable"},
        "pids": [1],
        "memory_limit": str(256 * 1024 * 1024),
        "pids_limit": "64",
        "rlimit_as": -1,
        "rlimit_nproc": -1,
    }


@pytest.mark.parametrize(
    ("change", "failing"),
    [
        ({"uid": 0}, "non-root user"),
        ({"canary_seen": True}, "host secrets not visible"),
        ({"writes": [{"path": "/", "writable": True, "error": ""}]}, "/ not writable"),
        ({"interfaces": ["eth0", "lo"]}, "only loopback interface"),
        (
            {"connect_host_listener": {"target": "127.0.0.1:1", "connected": True, "error": ""}},
            "network unreachable (host listener on 127.0.0.1)",
        ),
        ({"memory_limit": "9223372036854771712"}, "memory limit in force"),
        ({"pids_limit": "max"}, "process limit in force"),
        ({"pids": list(range(1, 200))}, "no host processes in /proc"),
    ],
)
def test_each_unsafe_fact_fails_its_check(
    change: dict[str, Any], failing: str, sandbox_settings: Callable[..., PythonSettings]
) -> None:
    runner = DockerRunner(sandbox_settings())
    assert all(c.passed for c in judge(_safe_facts(), runner))
    checks = judge({**_safe_facts(), **change}, runner)
    assert [c.name for c in checks if not c.passed] == [failing]


@pytest.mark.docker
async def test_the_real_sandbox_passes_every_check(docker_runner: DockerRunner) -> None:
    checks = await run_checks(docker_runner)
    assert [c.name for c in checks if not c.passed] == []
    assert {"non-root user", "host secrets not visible", "/ not writable", "memory limit in force"} <= {
        c.name for c in checks
    }


@pytest.mark.docker
def test_cli_sandbox_check_passes(docker_engine: str, tmp_path: Path) -> None:
    env = {"KBAGENT_DATABASE_URL": f"sqlite:///{tmp_path}/kb.db", "KBAGENT_CONFIG": ""}
    ok = CliRunner().invoke(app, ["sandbox", "check"], env=env)
    assert ok.exit_code == 0, ok.output
    assert "all 17 checks passed" in ok.output
