"""The bubblewrap runner (used only when configured), on a root file system exported from the sandbox image."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli.app import app
from kbagent.errors import SandboxError
from kbagent.functions import define, execute, make_runner
from kbagent.functions.bubblewrap_runner import BubblewrapRunner
from kbagent.settings import PythonSettings

pytestmark = pytest.mark.docker  # the root file system comes from the Docker image


@pytest.fixture(scope="session")
def rootfs(docker_engine: str) -> Iterator[Path]:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    # Not pytest's tmp_path: that is private to root, and the sandbox user must be able to enter the tree.
    target = Path(tempfile.mkdtemp(prefix="kbagent-rootfs-"))
    target.chmod(0o755)
    name = f"kbagent-export-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["docker", "create", "--name", name, "kbagent-sandbox:latest", "true"], check=True, capture_output=True
    )
    try:
        exported = subprocess.run(["docker", "export", name], check=True, capture_output=True).stdout
    finally:
        subprocess.run(["docker", "rm", name], check=True, capture_output=True)
    subprocess.run(["tar", "-C", str(target), "-x"], input=exported, check=True)
    probe = subprocess.run(
        ["bwrap", "--ro-bind", str(target), "/", "--unshare-all", "--", "true"],
        capture_output=True,
        text=True,
        user=65534,
        group=65534,
        extra_groups=[],
    )
    if probe.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        pytest.skip(f"bubblewrap cannot run as an unprivileged user here: {probe.stderr.strip()}")
    yield target
    shutil.rmtree(target, ignore_errors=True)


@pytest.fixture
def bwrap_settings(rootfs: Path, sandbox_settings: Callable[..., PythonSettings]) -> Callable[..., PythonSettings]:
    def build(**overrides: object) -> PythonSettings:
        return sandbox_settings(runner="bubblewrap", rootfs=str(rootfs), **overrides)

    return build


async def test_runs_functions_as_an_unprivileged_user_without_network(
    bwrap_settings: Callable[..., PythonSettings],
) -> None:
    runner = make_runner(bwrap_settings())
    assert isinstance(runner, BubblewrapRunner)
    code = (
        "import os, socket\n\ndef main(x):\n    try:\n        socket.create_connection(('127.0.0.1', 9), 2)\n"
        "        net = 'connected'\n    except OSError as exc:\n        net = type(exc).__name__\n"
        "    return {'x': x, 'uid': os.getuid(), 'net': net, 'env': sorted(os.environ)}\n"
    )
    result = await execute(define(code), {"x": [1, "二"]}, runner)
    assert result.status == "ok", result.detail
    assert result.value["x"] == [1, "二"]
    assert result.value["uid"] != 0
    assert result.value["net"] in ("ConnectionRefusedError", "OSError")
    assert set(result.value["env"]) <= {"PATH", "PWD", "LC_CTYPE"}


async def test_exceptions_timeouts_and_memory(bwrap_settings: Callable[..., PythonSettings]) -> None:
    runner = make_runner(bwrap_settings(timeout_seconds=2, memory_mb=256))
    error = await execute(define("def main():\n    raise ValueError('nope')\n"), {}, runner)
    assert error.error is not None and (error.error.type, error.error.message) == ("ValueError", "nope")
    timeout = await execute(define("def main():\n    while True:\n        pass\n"), {}, runner)
    assert timeout.status == "timeout"
    hog = "def main():\n    hog = []\n    while True:\n        hog.append(bytearray(16 * 1024 * 1024))\n"
    memory = await execute(define(hog), {}, runner)
    assert memory.status == "memory_limit", memory


async def test_without_a_usable_root_file_system_it_refuses(
    sandbox_settings: Callable[..., PythonSettings], tmp_path: Path
) -> None:
    code = define("def main():\n    return 1\n")
    with pytest.raises(SandboxError, match="python.rootfs is empty"):
        await execute(code, {}, make_runner(sandbox_settings(runner="bubblewrap")))
    with pytest.raises(SandboxError, match="has no usr/bin/python3.*never run with the host's Python"):
        await execute(code, {}, make_runner(sandbox_settings(runner="bubblewrap", rootfs=str(tmp_path))))


def test_sandbox_check_reports_what_bubblewrap_cannot_do(rootfs: Path, tmp_path: Path) -> None:
    env = {
        "KBAGENT_DATABASE_URL": f"sqlite:///{tmp_path}/kb.db",
        "KBAGENT_CONFIG": "",
        "KBAGENT_PYTHON_RUNNER": "bubblewrap",
        "KBAGENT_PYTHON_ROOTFS": str(rootfs),
    }
    result = CliRunner().invoke(app, ["sandbox", "check"], env=env)
    # bubblewrap cannot mount /tmp noexec: the check says so and the command fails.
    assert "FAIL /tmp not executable" in result.output
    assert result.exit_code == 1
