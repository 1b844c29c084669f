"""``kbagent sandbox check``: run the probe inside a real sandbox and judge each fact against the settings."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

from kbagent.functions.runner import Runner, RunRequest

CANARY_ENV = "KBAGENT_SANDBOX_CANARY"
# Names of host variables that must never reach a function, whatever their value.
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "DATABASE", "KBAGENT_")


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


@contextmanager
def _listener() -> Iterator[int]:
    """A TCP listener on the host's 127.0.0.1: the sandbox must not be able to reach it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@contextmanager
def _canary() -> Iterator[str]:
    value = "canary-" + secrets.token_hex(12)
    previous = os.environ.get(CANARY_ENV)
    os.environ[CANARY_ENV] = value
    try:
        yield value
    finally:
        if previous is None:
            os.environ.pop(CANARY_ENV, None)
        else:
            os.environ[CANARY_ENV] = previous


async def run_checks(runner: Runner) -> list[Check]:
    """Run the probe once in a fresh sandbox; raises SandboxError when the sandbox cannot start at all."""
    code = resources.files("kbagent.functions").joinpath("probe.py").read_text(encoding="utf-8")
    with _canary() as canary, _listener() as port:
        secret_names = sorted(n for n in os.environ if any(m in n.upper() for m in _SECRET_MARKERS))
        result = await runner.run(
            RunRequest(
                code=code, entrypoint="probe", params={"canary": canary, "port": port, "secret_names": secret_names}
            )
        )
    if not result.ok:
        return [Check("probe ran", False, f"{result.status}: {result.detail}")]
    checks = [Check("probe ran", True, f"in {result.seconds:.2f} s")]
    checks.extend(judge(result.value, runner))
    leftovers = getattr(runner, "leftover_containers", None)
    if leftovers is not None and result.sandbox:
        # Only the probe's own container: other calls may be running on the same engine right now.
        names: list[str] = []
        # --rm removes it shortly after it ends; on a loaded engine that can take seconds.
        for _ in range(100):
            names = await leftovers(result.sandbox)
            if not names:
                break
            await asyncio.sleep(0.1)
        checks.append(Check("no container left behind", not names, ", ".join(names) or f"{result.sandbox} removed"))
    return checks


def judge(facts: dict[str, Any], runner: Runner) -> list[Check]:
    s = runner.settings
    checks = [
        Check("non-root user", facts["uid"] != 0 and facts["gid"] != 0, f"uid {facts['uid']}, gid {facts['gid']}"),
        Check(
            "no capabilities, no privilege escalation",
            int(facts["cap_eff"] or "1", 16) == 0 and facts["no_new_privs"] == "1",
            f"CapEff {facts['cap_eff']}, NoNewPrivs {facts['no_new_privs']}, Seccomp {facts['seccomp']}",
        ),
        Check(
            "host secrets not visible",
            not facts["canary_seen"] and not facts["secret_names_seen"],
            f"canary seen: {facts['canary_seen']}; host secret variables seen: "
            f"{', '.join(facts['secret_names_seen']) or 'none'}; environment: {', '.join(facts['env_names'])}",
        ),
    ]
    for write in facts["writes"]:
        if write["path"] == "/tmp":
            checks.append(Check("/tmp writable (tmpfs)", write["writable"], write["error"] or "ok"))
        else:
            checks.append(Check(f"{write['path']} not writable", not write["writable"], write["error"] or "WRITABLE"))
    tmp_exec = facts["tmp_exec"]
    checks.append(Check("/tmp not executable", not tmp_exec["executed"], tmp_exec["error"]))
    interfaces = facts["interfaces"]
    checks.append(Check("only loopback interface", interfaces in ([], ["lo"]), ", ".join(interfaces) or "none"))
    for key, label in (("connect_host_listener", "host listener on 127.0.0.1"), ("connect_outside", "outside")):
        attempt = facts[key]
        checks.append(
            Check(
                f"network unreachable ({label})",
                not attempt["connected"],
                f"{attempt['target']}: {attempt['error'] or 'CONNECTED'}",
            )
        )
    pids = facts["pids"]
    checks.append(Check("no host processes in /proc", len(pids) <= 8, f"{len(pids)} processes: {pids[:10]}"))
    memory, rlimit_as = facts["memory_limit"], int(facts["rlimit_as"])
    expected_memory = s.memory_mb * 1024 * 1024
    checks.append(
        Check(
            "memory limit in force",
            (memory.isdigit() and int(memory) <= expected_memory) or 0 <= rlimit_as <= expected_memory,
            f"cgroup {memory or 'unreadable'}, RLIMIT_AS {rlimit_as} bytes (python.memory_mb = {s.memory_mb})",
        )
    )
    pids_limit, rlimit_nproc = facts["pids_limit"], int(facts["rlimit_nproc"])
    checks.append(
        Check(
            "process limit in force",
            (pids_limit.isdigit() and int(pids_limit) <= s.pids) or 0 <= rlimit_nproc <= s.pids,
            f"cgroup {pids_limit or 'unreadable'}, RLIMIT_NPROC {rlimit_nproc} (python.pids = {s.pids})",
        )
    )
    return checks
