"""The verification probe of ``kbagent sandbox check``; runs INSIDE the sandbox as an ordinary function.

It reports facts; the host (``sandbox_check.py``) judges them against the settings. Standard library only.
"""

import os
import resource
import socket
import stat


def _writable(path):
    target = os.path.join(path, ".kbagent-probe")
    try:
        with open(target, "w") as handle:
            handle.write("x")
    except OSError as exc:
        return {"path": path, "writable": False, "error": type(exc).__name__ + ": " + str(exc)}
    os.unlink(target)
    return {"path": path, "writable": True, "error": ""}


def _connect(host, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(2.0)
    try:
        sock.connect((host, port))
    except OSError as exc:
        return {"target": host + ":" + str(port), "connected": False, "error": type(exc).__name__ + ": " + str(exc)}
    finally:
        sock.close()
    return {"target": host + ":" + str(port), "connected": True, "error": ""}


def _read(*paths):
    for path in paths:
        try:
            with open(path) as handle:
                return handle.read().strip()
        except OSError:
            continue
    return ""


def _status_field(name):
    for line in _read("/proc/self/status").splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _tmp_exec():
    script = "/tmp/.kbagent-probe.sh"
    try:
        with open(script, "w") as handle:
            handle.write("#!/bin/sh\nexit 0\n")
        os.chmod(script, stat.S_IRWXU)
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(script, [script])
            except OSError as exc:
                os._exit(exc.errno or 99)
            os._exit(99)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code == 0:
            return {"executed": True, "error": "EXECUTED"}
        return {"executed": False, "error": "exec refused: " + os.strerror(code)}
    except OSError as exc:
        return {"executed": False, "error": type(exc).__name__ + ": " + str(exc)}


def probe(canary, port, secret_names):
    """Facts about the sandbox, as a JSON-able dict. ``canary`` is a value the host put in its environment."""
    environ = dict(os.environ)
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    return {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "cap_eff": _status_field("CapEff"),
        "no_new_privs": _status_field("NoNewPrivs"),
        "seccomp": _status_field("Seccomp"),
        "env_names": sorted(environ),
        "canary_seen": any(canary in value for value in environ.values()),
        "secret_names_seen": sorted(n for n in secret_names if n in environ),
        "writes": [_writable(p) for p in ("/", "/usr", "/etc", "/dev/shm", "/tmp")],
        "tmp_exec": _tmp_exec(),
        "interfaces": sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else [],
        "connect_host_listener": _connect("127.0.0.1", port),
        "connect_outside": _connect("192.0.2.1", 80),  # TEST-NET-1: reserved for documentation, never routed
        "pids": pids,
        "memory_limit": _read("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
        "pids_limit": _read("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"),
        # Runners without cgroups (bubblewrap) limit through rlimits instead.
        "rlimit_as": resource.getrlimit(resource.RLIMIT_AS)[0],
        "rlimit_nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
    }
