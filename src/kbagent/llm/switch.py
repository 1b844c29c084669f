"""The one switch that lets real model requests leave the process.

Tests turn it off for the whole session (``tests/conftest.py``) so a forgotten provider setting can never send
traffic or spend a key; the integration tests against the local llama.cpp server opt back in through a fixture.
Every real adapter calls ``check_model_requests_allowed()`` before it talks to the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kbagent.errors import ModelError

ALLOW_MODEL_REQUESTS = True


class ModelRequestsBlocked(ModelError):
    code = "MODEL_REQUESTS_BLOCKED"


def check_model_requests_allowed() -> None:
    if not ALLOW_MODEL_REQUESTS:
        raise ModelRequestsBlocked(
            "real model requests are switched off (kbagent.llm.switch.ALLOW_MODEL_REQUESTS is False); "
            "tests use a ScriptedModel or opt in with the allow_model_requests fixture"
        )


@contextmanager
def allow_model_requests(allow: bool = True) -> Iterator[None]:
    """Set the switch for the duration of a block and restore it afterwards."""
    global ALLOW_MODEL_REQUESTS
    previous = ALLOW_MODEL_REQUESTS
    ALLOW_MODEL_REQUESTS = allow
    try:
        yield
    finally:
        ALLOW_MODEL_REQUESTS = previous
