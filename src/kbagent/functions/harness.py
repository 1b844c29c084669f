"""The harness that runs INSIDE the sandbox; never imported by kbagent itself.

Its source is handed to ``python3 -c`` in the container; the request arrives as one JSON object on stdin:
``{"nonce", "code", "entrypoint", "params", "output_limit"}``. The result leaves as exactly one line on the
original stdout, ``KBAGENT-RESULT <nonce> <json>``.

Why the frame cannot be forged by the function's prints: before the function runs, file descriptors 1 and 2 are
redirected to pipes that the harness drains into bounded buffers (so ``print``, ``os.write(1, ...)`` and child
processes all land there), and the original stdout is kept on a private descriptor. The host accepts only a
frame carrying the per-call random nonce. Code that deliberately digs the nonce out of the harness's memory can
only replace its own return value, which it controls anyway.

Only the standard library of the image's Python 3 is available here.
"""

import io
import json
import os
import sys
import threading
import traceback
import types

FRAME = "KBAGENT-RESULT"


class _Drain:
    """Reads a pipe to its end, keeping at most ``limit`` bytes and counting the rest."""

    def __init__(self, fd, limit):
        self.fd = fd
        self.limit = limit
        self.kept = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.total += len(chunk)
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    def text(self):
        return bytes(self.kept).decode("utf-8", "replace")


def _redirect(target_fd, limit):
    read_end, write_end = os.pipe()
    os.dup2(write_end, target_fd)
    os.close(write_end)
    return _Drain(read_end, limit)


def _exception(exc, skip_frames):
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(type(exc), exc, tb)),
    }


def main():
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    nonce = request["nonce"]
    limit = int(request["output_limit"])
    harness_pid = os.getpid()
    sys.stdout.flush()
    result_fd = os.dup(1)  # not inheritable: child processes of the function never get it
    out = _redirect(1, limit)
    err = _redirect(2, limit)
    # Line buffering keeps print() and direct writes to fd 1 in the order they happened.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)
    frame: dict[str, object] = {"status": "error"}
    try:
        namespace = {"__name__": "__kbagent_function__", "__builtins__": __builtins__}
        compiled = compile(request["code"], "<function>", "exec")
        exec(compiled, namespace)
        entry = namespace.get(request["entrypoint"])
        if not callable(entry):
            raise NameError("entry point " + repr(request["entrypoint"]) + " is not a function in the code")
        value = entry(**request["params"])
        if isinstance(value, types.CoroutineType):
            import asyncio  # only when needed: importing it costs more than a whole small call

            value = asyncio.run(value)
        try:
            encoded = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                "the function returned a " + type(value).__name__ + ", which is not JSON-serialisable: " + str(exc)
            ) from None
        if len(encoded.encode("utf-8")) > limit:
            frame = {"status": "output_limit", "result_bytes": len(encoded.encode("utf-8"))}
        else:
            frame = {"status": "ok", "value": value}
    except BaseException as exc:  # noqa: B036 - SystemExit and KeyboardInterrupt from user code are results too
        if os.getpid() != harness_pid:
            os._exit(1)  # a forked child of the function: only the harness process reports
        frame = {"status": "error", "error": _exception(exc, 1)}
    if os.getpid() != harness_pid:
        os._exit(0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # the function may have closed or replaced the stream
            pass
    # Closing our ends lets the drains see end-of-file unless a child process still holds them.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    out.thread.join(1.0)
    err.thread.join(1.0)
    frame["stdout"] = out.text()
    frame["stderr"] = err.text()
    frame["stdout_bytes"] = out.total
    frame["stderr_bytes"] = err.total
    line = FRAME + " " + nonce + " " + json.dumps(frame, ensure_ascii=True) + "\n"
    data = line.encode("ascii")
    while data:
        data = data[os.write(result_fd, data) :]
    # os._exit: threads the function left running must not keep the container alive.
    os._exit(0)


if __name__ == "__main__":
    main()
