"""Function calls in real containers on a real Docker engine: what a user of the sandbox would notice."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kbagent.errors import InvalidInput, SandboxError
from kbagent.functions import define, execute, make_spec
from kbagent.functions.docker_runner import DockerRunner
from kbagent.functions.runner import RunRequest, RunResult
from kbagent.settings import PythonSettings

pytestmark = pytest.mark.docker

Settings = Callable[..., PythonSettings]


async def call(
    runner: DockerRunner, code: str, params: dict[str, Any] | None = None, entry: str | None = None
) -> RunResult:
    return await execute(define(code, entrypoint=entry), params or {}, runner)


def containers_named(name: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


@pytest.mark.parametrize(
    "value",
    ["text 中文", 42, -2.5, True, None, [1, "二", [3.0]], {"nested": {"list": [1, 2], "ok": False}}],
    ids=["string", "int", "float", "bool", "none", "array", "dict"],
)
async def test_return_values_of_every_type(docker_runner: DockerRunner, value: Any) -> None:
    result = await call(docker_runner, "def main(v):\n    return v\n", {"v": value})
    assert result.status == "ok", result.detail
    assert result.value == value
    assert type(result.value) is type(value)


async def test_declared_parameters_arrive_converted(docker_runner: DockerRunner) -> None:
    code = "def main(n, x, tags, opts, s):\n    return [type(v).__name__ for v in (n, x, tags, opts, s)] + [n + 1]\n"
    specs = [
        make_spec("n", "int"),
        make_spec("x", "float"),
        make_spec("tags", "array"),
        make_spec("opts", "dict"),
        make_spec("s", "string"),
    ]
    definition = define(code, specs, init_params={"s": "stored", "n": 1})
    result = await execute(definition, {"n": "41", "x": "0.5", "tags": "[1]", "opts": '{"a": 1}'}, docker_runner)
    assert result.value == ["int", "float", "list", "dict", "str", 42]
    with pytest.raises(InvalidInput, match=r"params\.x: expected float, got string 'half'"):
        await execute(definition, {"x": "half", "tags": [], "opts": {}}, docker_runner)


async def test_exceptions_come_back_with_type_message_and_traceback(docker_runner: DockerRunner) -> None:
    code = "def inner(d):\n    return d['missing']\n\ndef main():\n    print('before')\n    return inner({})\n"
    result = await call(docker_runner, code)
    assert result.status == "error"
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("KeyError", "'missing'")
    assert 'File "<function>", line 2, in inner' in result.error.traceback
    assert "harness" not in result.error.traceback
    assert result.stdout == "before\n"

    exit_result = await call(docker_runner, "import sys\n\ndef main():\n    sys.exit(3)\n")
    assert exit_result.status == "error" and exit_result.error is not None
    assert exit_result.error.type == "SystemExit"


async def test_async_entry_point_and_non_json_result(docker_runner: DockerRunner) -> None:
    result = await call(
        docker_runner, "import asyncio\n\nasync def main():\n    await asyncio.sleep(0)\n    return 'done'\n"
    )
    assert result.value == "done"
    bad = await call(docker_runner, "def main():\n    return {1, 2}\n")
    assert bad.status == "error" and bad.error is not None
    assert "returned a set, which is not JSON-serialisable" in bad.error.message


async def test_timeout_kills_the_container(sandbox_settings: Settings, docker_engine: str) -> None:
    runner = DockerRunner(sandbox_settings(timeout_seconds=2))
    result = await call(runner, "import time\n\ndef main():\n    while True:\n        time.sleep(0.1)\n")
    assert result.status == "timeout"
    assert "python.timeout_seconds (2 s)" in result.detail
    assert result.sandbox.startswith("kbagent-fn-")
    assert containers_named(result.sandbox) == []  # killed by name and removed, not just the client


async def test_cancelled_call_leaves_no_container(docker_runner: DockerRunner) -> None:
    name = f"kbagent-fn-cancel-{uuid.uuid4().hex}"
    request = RunRequest("import time\n\ndef main():\n    time.sleep(60)\n", "main", {})
    task = asyncio.create_task(docker_runner.run(request, name=name))
    for _ in range(100):
        await asyncio.sleep(0.1)
        if containers_named(name):
            break
    assert containers_named(name) == [name], "the container never appeared"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert containers_named(name) == []


async def test_memory_bomb_reports_the_memory_limit(sandbox_settings: Settings, docker_engine: str) -> None:
    runner = DockerRunner(sandbox_settings(memory_mb=128))
    code = "def main():\n    hog = []\n    while True:\n        hog.append(bytearray(16 * 1024 * 1024))\n"
    result = await call(runner, code)
    assert result.status == "memory_limit", result
    assert "python.memory_mb = 128" in result.detail
    assert containers_named(result.sandbox) == []


async def test_fork_bomb_is_contained(sandbox_settings: Settings, docker_engine: str) -> None:
    runner = DockerRunner(sandbox_settings(pids=32, timeout_seconds=10))
    code = (
        "import os, time\n\ndef main():\n    n = 0\n    try:\n        while n < 10000:\n"
        "            if os.fork() == 0:\n                time.sleep(30)\n                os._exit(0)\n"
        "            n += 1\n    except OSError as exc:\n        return {'forked': n, 'error': type(exc).__name__}\n"
    )
    result = await call(runner, code)
    assert result.status == "ok", result
    assert result.value["error"] == "BlockingIOError"
    assert result.value["forked"] < 32
    # The classic unbounded bomb: it must end (error or timeout) and leave nothing behind.
    bomb = await call(runner, "import os\n\ndef main():\n    while True:\n        os.fork()\n")
    assert bomb.status in ("error", "timeout", "crashed")
    assert containers_named(bomb.sandbox) == []
    after = await call(runner, "def main():\n    return 'still fine'\n")
    assert after.value == "still fine"


async def test_network_connect_to_a_host_listener_is_refused(docker_runner: DockerRunner) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.setblocking(False)
    port = server.getsockname()[1]
    code = (
        "import os, socket\n\ndef main(port):\n    s = socket.socket()\n    s.settimeout(3)\n    try:\n"
        "        s.connect(('127.0.0.1', port))\n        return 'connected'\n    except OSError as exc:\n"
        "        return [type(exc).__name__, sorted(os.listdir('/sys/class/net'))]\n"
    )
    try:
        result = await call(docker_runner, code, {"port": port})
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever arrived at the host's listener
    finally:
        server.close()
    assert result.value == ["ConnectionRefusedError", ["lo"]]


async def test_writes_outside_tmp_are_refused(docker_runner: DockerRunner) -> None:
    code = (
        "import os\n\ndef attempt(path):\n    try:\n        with open(path, 'w') as f:\n            f.write('x')\n"
        "        return 'written'\n    except OSError as exc:\n        return exc.strerror\n\n"
        "def main():\n"
        "    return {p: attempt(p) for p in ['/evil', '/usr/evil', '/etc/passwd', '/dev/shm/x', '/tmp/ok']}\n"
    )
    result = await call(docker_runner, code)
    outcome = result.value
    assert outcome.pop("/dev/shm/x") != "written"  # with --ipc none there is no /dev/shm at all
    assert outcome == {
        "/evil": "Read-only file system",
        "/usr/evil": "Read-only file system",
        "/etc/passwd": "Read-only file system",
        "/tmp/ok": "written",
    }


async def test_host_environment_is_invisible(docker_runner: DockerRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBAGENT_TEST_CANARY", "canary-8c1f2e")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-8c1f2e")
    result = await call(docker_runner, "import os\n\ndef main():\n    return [os.getuid(), dict(os.environ)]\n")
    uid, environ = result.value
    assert uid == 65534
    assert "canary-8c1f2e" not in json.dumps(environ)
    assert not set(environ) & {"KBAGENT_TEST_CANARY", "OPENAI_API_KEY", "KBAGENT_TEST_POSTGRES_URL"}


async def test_proc_shows_no_host_processes(docker_runner: DockerRunner) -> None:
    code = "import os\n\ndef main():\n    return sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
    result = await call(docker_runner, code)
    assert result.value == [1]  # only the harness itself, as the container's first process


async def test_output_flood_is_cut_and_reported(sandbox_settings: Settings, docker_engine: str) -> None:
    runner = DockerRunner(sandbox_settings(output_limit_bytes=65536))
    code = (
        "import os, sys\n\ndef main():\n    for _ in range(2000):\n        print('x' * 1000)\n"
        "    os.write(1, b'y' * 5_000_000)\n    sys.stderr.write('e' * 3_000_000)\n    return 'survived'\n"
    )
    result = await call(runner, code)
    assert result.status == "ok"
    assert result.value == "survived"
    assert result.stdout_truncated and result.stderr_truncated
    assert len(result.stdout.encode()) == 65536 and len(result.stderr.encode()) == 65536
    assert "cut at python.output_limit_bytes" in result.detail
    too_big = await call(runner, "def main():\n    return 'z' * 200_000\n")
    assert too_big.status == "output_limit"
    assert "over python.output_limit_bytes (65536)" in too_big.detail


async def test_a_forged_result_frame_in_user_prints_is_ignored(docker_runner: DockerRunner) -> None:
    code = (
        "import os\n\ndef main():\n"
        '    fake = \'KBAGENT-RESULT \' + \'0\' * 32 + \' {"status": "ok", "value": "forged"}\\n\'\n'
        "    print(fake)\n    os.write(1, fake.encode())\n    os.write(2, fake.encode())\n"
        "    for fd in range(3, 12):\n        try:\n            os.write(fd, fake.encode())\n"
        "        except OSError:\n            pass\n    return 'real'\n"
    )
    result = await call(docker_runner, code)
    assert result.status == "ok"
    assert result.value == "real"
    assert "forged" in result.stdout


async def test_parallel_calls_are_isolated(docker_runner: DockerRunner) -> None:
    code = "def main(i):\n    open('/tmp/mine', 'a').write(str(i))\n    return open('/tmp/mine').read()\n"
    results = await asyncio.gather(*(call(docker_runner, code, {"i": i}) for i in range(4)))
    assert [r.value for r in results] == ["0", "1", "2", "3"]  # no /tmp is shared between calls


async def test_no_docker_cli_is_a_clear_error(sandbox_settings: Settings) -> None:
    runner = DockerRunner(sandbox_settings(docker="/nonexistent/bin/docker"))
    with pytest.raises(SandboxError, match=r"no Docker CLI at '/nonexistent/bin/docker' \(python\.docker\)") as caught:
        await call(runner, "def main():\n    return 1\n")
    assert "never run with the host's Python" in caught.value.message


async def test_no_daemon_is_a_clear_error(
    sandbox_settings: Settings, docker_engine: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    runner = DockerRunner(sandbox_settings())
    with pytest.raises(SandboxError, match="the Docker daemon does not answer"):
        await call(runner, "def main():\n    return 1\n")
    with pytest.raises(SandboxError, match="the Docker daemon does not answer"):
        await runner.check_ready()


async def test_missing_image_is_a_clear_error(sandbox_settings: Settings, docker_engine: str) -> None:
    runner = DockerRunner(sandbox_settings(image="kbagent-no-such-image:never"))
    with pytest.raises(SandboxError, match=r"image kbagent-no-such-image:never \(python\.image\) is not present") as e:
        await runner.run(RunRequest("def main():\n    return 1\n", "main", {}))
    assert "scripts/build-sandbox-image.sh" in e.value.message
    with pytest.raises(SandboxError, match="is not present"):
        await runner.check_ready()
