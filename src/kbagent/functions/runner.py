"""What every sandbox runner shares: the request, the result, the frame protocol with the harness.

A runner never falls back to the host's Python: when its sandbox cannot run, it raises ``SandboxError``
saying what is missing and how to fix it. Outcomes of the function itself (a value, an exception, a timeout,
the memory limit, too much output) are returned as a ``RunResult``, not raised.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal, Protocol

from kbagent.settings import PythonSettings

Status = Literal["ok", "error", "timeout", "memory_limit", "output_limit", "crashed"]
FRAME = "KBAGENT-RESULT"


@dataclass(frozen=True)
class RunRequest:
    code: str
    entrypoint: str
    params: dict[str, Any]


@dataclass(frozen=True)
class FunctionException:
    """An exception raised by the function, as it was inside the sandbox."""

    type: str
    message: str
    traceback: str


@dataclass
class RunResult:
    """``status`` says how the call ended; ``value`` is set only for ``ok``; ``error`` only for ``error``.

    ``stdout``/``stderr`` are the function's own prints, cut at ``python.output_limit_bytes`` each; the
    ``*_truncated`` flags say when that happened. ``detail`` explains a non-ok status in words.
    """

    status: Status
    value: Any = None
    error: FunctionException | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    detail: str = ""
    exit_code: int | None = None
    seconds: float = 0.0
    sandbox: str = ""  # the container's name (Docker runner), for logs and for checking it is gone

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status,
            "value": self.value,
            "error": None,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "detail": self.detail,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 4),
            "sandbox": self.sandbox,
        }
        if self.error is not None:
            data["error"] = {"type": self.error.type, "message": self.error.message, "traceback": self.error.traceback}
        return data


class Runner(Protocol):
    settings: PythonSettings

    async def run(self, request: RunRequest) -> RunResult:
        """Run one call in a fresh sandbox; raises SandboxError when the sandbox itself cannot run."""
        ...


def harness_source() -> str:
    """The in-sandbox harness, shipped inside the package and handed to ``python3 -c``."""
    return resources.files("kbagent.functions").joinpath("harness.py").read_text(encoding="utf-8")


@dataclass
class Envelope:
    """The stdin payload of one call and the nonce its result frame must carry."""

    request: RunRequest
    output_limit: int
    nonce: str = field(default_factory=lambda: secrets.token_hex(16))

    def encode(self) -> bytes:
        payload = {
            "nonce": self.nonce,
            "code": self.request.code,
            "entrypoint": self.request.entrypoint,
            "params": self.request.params,
            "output_limit": self.output_limit,
        }
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")

    def find_frame(self, stdout: bytes) -> dict[str, Any] | None:
        """The harness's frame: the last one carrying this call's nonce. Anything else on stdout is ignored."""
        marker = f"{FRAME} {self.nonce} ".encode("ascii")
        at = stdout.rfind(marker)
        if at < 0:
            return None
        end = stdout.find(b"\n", at)
        body = stdout[at + len(marker) : end if end >= 0 else len(stdout)]
        try:
            frame = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        return frame if isinstance(frame, dict) else None


def result_from_frame(frame: dict[str, Any], limit: int, exit_code: int | None, seconds: float) -> RunResult:
    result = RunResult(
        status="crashed",
        stdout=str(frame.get("stdout", "")),
        stderr=str(frame.get("stderr", "")),
        stdout_truncated=int(frame.get("stdout_bytes", 0)) > limit,
        stderr_truncated=int(frame.get("stderr_bytes", 0)) > limit,
        exit_code=exit_code,
        seconds=seconds,
    )
    status = frame.get("status")
    if status == "ok":
        result.status = "ok"
        result.value = frame.get("value")
    elif status == "error" and isinstance(frame.get("error"), dict):
        err = frame["error"]
        result.status = "error"
        result.error = FunctionException(
            type=str(err.get("type", "Exception")),
            message=str(err.get("message", "")),
            traceback=str(err.get("traceback", "")),
        )
        result.detail = f"{result.error.type}: {result.error.message}"
    elif status == "output_limit":
        result.status = "output_limit"
        result.detail = (
            f"the return value is {frame.get('result_bytes')} bytes of JSON, over python.output_limit_bytes ({limit})"
        )
    else:
        result.detail = f"the harness reported an unknown status {status!r}"
    if result.status == "ok" and (result.stdout_truncated or result.stderr_truncated):
        result.detail = f"printed output was cut at python.output_limit_bytes ({limit} bytes per stream)"
    return result


class BoundedReader:
    """Drains a stream to its end, keeping at most ``limit`` bytes: a flood can neither block the sandbox
    (its pipe keeps emptying) nor fill the host's memory."""

    def __init__(self, stream: asyncio.StreamReader | None, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.kept = bytearray()
        self.total = 0

    async def read_all(self) -> None:
        if self.stream is None:
            return
        while True:
            chunk = await self.stream.read(65536)
            if not chunk:
                return
            self.total += len(chunk)
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    @property
    def overflowed(self) -> bool:
        return self.total > self.limit


# Room for the sandbox's own error text (engine or bubblewrap messages), beside the function's output.
DIAGNOSTIC_LIMIT = 64 * 1024


@dataclass
class Exchange:
    """What came back from one sandbox process: its bounded output, and whether it ended in time."""

    finished: bool
    stdout: BoundedReader
    stderr: BoundedReader

    @property
    def diagnostic(self) -> str:
        return bytes(self.stderr.kept).decode("utf-8", "replace").strip()


async def exchange(
    proc: asyncio.subprocess.Process,
    envelope: Envelope,
    timeout: float,
    kill: Callable[[], Awaitable[None]],
) -> Exchange:
    """Feed the envelope on stdin, drain stdout and stderr (bounded), and wait for the process to end within
    ``timeout``. On timeout or cancellation ``kill()`` is awaited before returning or re-raising, so no sandbox
    outlives its call."""
    # The frame holds the value and both print streams, JSON-escaped: allow for escaping, then cut.
    stdout = BoundedReader(proc.stdout, 8 * envelope.output_limit + DIAGNOSTIC_LIMIT)
    stderr = BoundedReader(proc.stderr, DIAGNOSTIC_LIMIT)
    finished = False
    try:
        await asyncio.wait_for(
            asyncio.gather(_feed(proc, envelope.encode()), stdout.read_all(), stderr.read_all(), proc.wait()),
            timeout=timeout,
        )
        finished = True
    except TimeoutError:
        pass
    finally:
        if not finished:
            await kill()
    return Exchange(finished, stdout, stderr)


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()
        await proc.stdin.wait_closed()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the sandbox ended before reading everything; its exit code tells why
