"""Runs one function call in a fresh, hardened Docker container, driven through the ``docker`` CLI.

One ``docker run --rm -i`` per call; nothing is shared between calls and nothing is left behind. Killing the
``docker run`` client does not stop its container, so on a timeout (or a cancelled call) the container is killed
by its unique ``--name`` and the engine is asked until it is gone.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Mapping

from kbagent.errors import SandboxError
from kbagent.functions.runner import (
    Envelope,
    RunRequest,
    RunResult,
    exchange,
    harness_source,
    result_from_frame,
)
from kbagent.settings import PythonSettings

NAME_PREFIX = "kbagent-fn-"
SANDBOX_USER = "65534:65534"  # nobody:nogroup, present in every Debian-based image
BUILD_HINT = "build it with scripts/build-sandbox-image.sh, or set python.image to an image you prepared"
# Environment variables the docker CLI itself may need; nothing else of the host reaches even the client.
_CLI_ENV_KEYS = ("PATH", "HOME", "XDG_RUNTIME_DIR", "TMPDIR")


def _cli_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in _CLI_ENV_KEYS or k.startswith("DOCKER_")}


class DockerRunner:
    """The default runner. ``settings`` is the ``python`` section: CLI path, image and limits."""

    def __init__(self, settings: PythonSettings) -> None:
        self.settings = settings

    def run_args(self, name: str) -> list[str]:
        """The exact ``docker run`` command line of one call (the harness source is the last argument)."""
        s = self.settings
        return [
            s.docker,
            "run",
            "--rm",
            "-i",
            "--name",
            name,
            "--network",
            "none",
            "--read-only",
            "--user",
            SANDBOX_USER,
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--memory",
            f"{s.memory_mb}m",
            "--memory-swap",
            f"{s.memory_mb}m",
            "--cpus",
            f"{s.cpus:g}",
            "--pids-limit",
            str(s.pids),
            "--tmpfs",
            f"/tmp:rw,noexec,nosuid,nodev,size={s.tmpfs_mb}m",
            "--ipc",
            "none",
            "--pull=never",
            # The engine would otherwise copy every printed byte into a log file on the host's disk.
            "--log-driver",
            "none",
            "--workdir",
            "/tmp",
            s.image,
            "python3",
            "-I",  # ignore PYTHON* variables and the user site directory
            "-B",
            "-c",
            harness_source(),
        ]

    async def run(self, request: RunRequest, *, name: str | None = None) -> RunResult:
        """One call in a fresh container named ``name`` (default: a new ``kbagent-fn-<uuid>``)."""
        name = name or NAME_PREFIX + uuid.uuid4().hex
        result = await self._run(request, name)
        result.sandbox = name
        return result

    async def _run(self, request: RunRequest, name: str) -> RunResult:
        s = self.settings
        started = time.monotonic()
        envelope = Envelope(request, s.output_limit_bytes)
        proc = await self._spawn(self.run_args(name))
        done = await exchange(proc, envelope, s.timeout_seconds, lambda: self._kill(name, proc))
        seconds = time.monotonic() - started
        if not done.finished:
            return RunResult(
                status="timeout",
                detail=f"no result within python.timeout_seconds ({s.timeout_seconds:g} s); the container was killed",
                seconds=seconds,
            )
        code = proc.returncode
        frame = envelope.find_frame(bytes(done.stdout.kept))
        if frame is not None:
            return result_from_frame(frame, s.output_limit_bytes, code, seconds)
        diagnostic = done.diagnostic
        if code == 125:
            raise self._engine_error(diagnostic)
        if code in (126, 127):
            raise SandboxError(f"image {s.image} cannot start python3 (exit {code}: {diagnostic}); {BUILD_HINT}")
        if code == 137:
            return RunResult(
                status="memory_limit",
                detail=f"the function went over the memory limit (python.memory_mb = {s.memory_mb}) and was killed",
                exit_code=code,
                seconds=seconds,
            )
        if done.stdout.overflowed:
            return RunResult(
                status="output_limit",
                detail=f"the sandbox wrote more than {done.stdout.limit} bytes without a result; output was cut",
                exit_code=code,
                seconds=seconds,
            )
        return RunResult(
            status="crashed",
            detail=f"the sandbox ended with exit code {code} and no result" + (f": {diagnostic}" if diagnostic else ""),
            exit_code=code,
            seconds=seconds,
        )

    async def check_ready(self) -> str:
        """Raise SandboxError unless the CLI, the daemon and the image are all there; return the engine version."""
        code, out, err = await self._docker("version", "--format", "{{.Server.Version}}")
        if code != 0:
            raise self._engine_error(err or out)
        version = out.strip()
        code, out, err = await self._docker("image", "inspect", "--format", "{{.Id}}", self.settings.image)
        if code != 0:
            raise self._engine_error(err or f"No such image: {self.settings.image}")
        return version

    async def leftover_containers(self, name: str = NAME_PREFIX) -> list[str]:
        """Names of function containers (all, or the one named) that the engine still has, running or not."""
        code, out, err = await self._docker("ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}")
        if code != 0:
            raise self._engine_error(err)
        return [line for line in out.splitlines() if line.strip()]

    async def _spawn(self, argv: list[str]) -> asyncio.subprocess.Process:
        try:
            return await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=_cli_env(os.environ),
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise SandboxError(
                f"no Docker CLI at {self.settings.docker!r} (python.docker): {exc.strerror}. Install Docker Engine "
                "(Debian: apt-get install docker.io) or set python.docker to the CLI's path; "
                "functions never run with the host's Python"
            ) from None

    async def _docker(self, *args: str, timeout: float = 30.0) -> tuple[int, str, str]:
        proc = await self._spawn([self.settings.docker, *args])
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise SandboxError(
                f"`docker {args[0]}` did not answer within {timeout:g} s; is the engine stuck?"
            ) from None
        return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace").strip()

    async def _kill(self, name: str, proc: asyncio.subprocess.Process) -> None:
        """Kill the container by name, reap the client, and make sure the engine no longer has it."""
        await self._docker("kill", name)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        # --rm removes the container shortly after it dies; wait for that, and force it if it does not happen.
        for attempt in range(50):
            code, out, _ = await self._docker("ps", "-a", "-q", "--filter", f"name={name}")
            if code == 0 and not out.strip():
                return
            if attempt == 20:
                await self._docker("rm", "-f", name)
            await asyncio.sleep(0.1)
        raise SandboxError(
            f"container {name} is still present after being killed; remove it with `docker rm -f {name}`"
        )

    def _engine_error(self, diagnostic: str) -> SandboxError:
        s = self.settings
        lowered = diagnostic.lower()
        if "cannot connect to the docker daemon" in lowered or "daemon running" in lowered:
            return SandboxError(
                f"the Docker daemon does not answer ({diagnostic.splitlines()[0]}). Start it "
                "(systemctl start docker, or scripts/ci/start-docker.sh); functions never run with the host's Python"
            )
        if "permission denied" in lowered and "docker" in lowered:
            return SandboxError(
                f"not allowed to use the Docker daemon ({diagnostic.splitlines()[0]}); "
                "run kbagent as a user in the docker group"
            )
        if "no such image" in lowered or "unable to find image" in lowered:
            return SandboxError(f"the sandbox image {s.image} (python.image) is not present; {BUILD_HINT}")
        return SandboxError(f"docker failed: {diagnostic or 'no message'}")
