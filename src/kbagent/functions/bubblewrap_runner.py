"""Runs one function call under bubblewrap, for hosts without Docker; used only when ``python.runner`` says so.

Weaker than the Docker runner, and said so in the README: no seccomp filter, ``/tmp`` cannot be mounted noexec,
and limits are rlimits (address space, processes, file size, CPU time) instead of cgroups. The interpreter is
the one inside ``python.rootfs`` (a root file system built by scripts/build-sandbox-image.sh --rootfs DIR),
never the host's. bubblewrap starts as an unprivileged user: RLIMIT_NPROC is ignored for uid 0.
"""

from __future__ import annotations

import asyncio
import math
import os
import resource
import signal
import time
from pathlib import Path

from kbagent.errors import SandboxError
from kbagent.functions.runner import Envelope, RunRequest, RunResult, exchange, harness_source, result_from_frame
from kbagent.settings import PythonSettings

SANDBOX_UID = 65534


class BubblewrapRunner:
    def __init__(self, settings: PythonSettings) -> None:
        self.settings = settings

    def run_args(self) -> list[str]:
        s = self.settings
        return [
            s.bubblewrap,
            "--ro-bind",
            s.rootfs,
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(s.tmpfs_mb * 1024 * 1024),
            "--tmpfs",
            "/tmp",
            "--unshare-all",  # network, pid, ipc, uts, cgroup and user namespaces
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--chdir",
            "/tmp",
            "--",
            "python3",
            "-I",
            "-B",
            "-c",
            harness_source(),
        ]

    def _limits(self) -> None:
        # Runs in the child after it became the unprivileged user, before bwrap starts.
        s = self.settings
        memory = s.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_NPROC, (s.pids, s.pids))
        resource.setrlimit(resource.RLIMIT_FSIZE, (s.tmpfs_mb * 1024 * 1024,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cpu = math.ceil(s.timeout_seconds) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    def _check(self) -> None:
        s = self.settings
        if not s.rootfs:
            raise SandboxError(
                "python.runner is bubblewrap but python.rootfs is empty; build a root file system with "
                "scripts/build-sandbox-image.sh --rootfs DIR and set python.rootfs to DIR"
            )
        if not (Path(s.rootfs) / "usr" / "bin" / "python3").exists():
            raise SandboxError(
                f"python.rootfs {s.rootfs!r} has no usr/bin/python3; build it with "
                "scripts/build-sandbox-image.sh --rootfs DIR (functions never run with the host's Python)"
            )

    async def run(self, request: RunRequest) -> RunResult:
        self._check()
        s = self.settings
        started = time.monotonic()
        envelope = Envelope(request, s.output_limit_bytes)
        as_root = os.geteuid() == 0
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.run_args(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                start_new_session=True,
                user=SANDBOX_UID if as_root else None,
                group=SANDBOX_UID if as_root else None,
                extra_groups=[] if as_root else None,
                preexec_fn=self._limits,
            )
        except (FileNotFoundError, PermissionError) as exc:
            raise SandboxError(
                f"no bubblewrap at {s.bubblewrap!r} (python.bubblewrap): {exc.strerror}; "
                "install it (Debian: apt-get install bubblewrap) or use the Docker runner"
            ) from None

        async def kill() -> None:
            # bwrap's child dies with it (--die-with-parent), and the pid namespace with its first process.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()

        done = await exchange(proc, envelope, s.timeout_seconds, kill)
        seconds = time.monotonic() - started
        if not done.finished:
            return RunResult(
                status="timeout",
                detail=f"no result within python.timeout_seconds ({s.timeout_seconds:g} s); the sandbox was killed",
                seconds=seconds,
            )
        frame = envelope.find_frame(bytes(done.stdout.kept))
        if frame is not None:
            result = result_from_frame(frame, s.output_limit_bytes, proc.returncode, seconds)
            if result.error is not None and result.error.type == "MemoryError":
                result.status = "memory_limit"
                result.detail = f"the function went over the memory limit (python.memory_mb = {s.memory_mb})"
            return result
        diagnostic = done.diagnostic
        if diagnostic.startswith("bwrap:"):
            raise SandboxError(
                f"bubblewrap could not start the sandbox ({diagnostic.splitlines()[0]}); python.rootfs must be "
                f"readable by uid {SANDBOX_UID} (every directory on its path world-executable) and the kernel "
                "must allow unprivileged user namespaces"
            )
        if proc.returncode == -signal.SIGKILL or proc.returncode == 137:
            return RunResult(
                status="memory_limit",
                detail=f"the sandbox was killed, most likely over the memory limit (python.memory_mb = {s.memory_mb})",
                exit_code=proc.returncode,
                seconds=seconds,
            )
        if done.stdout.overflowed:
            return RunResult(
                status="output_limit",
                detail=f"the sandbox wrote more than {done.stdout.limit} bytes without a result; output was cut",
                exit_code=proc.returncode,
                seconds=seconds,
            )
        return RunResult(
            status="crashed",
            detail=f"bubblewrap ended with exit code {proc.returncode} and no result"
            + (f": {diagnostic}" if diagnostic else ""),
            exit_code=proc.returncode,
            seconds=seconds,
        )
