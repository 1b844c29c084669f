"""Against a real OpenAI-compatible server: llama.cpp (llama-cpp-python) serving SmolLM2-135M with n_ctx=512.

The product's own stack is used end to end: ``build_chat_model`` from Settings (guard over retries over the client
over the official SDK). The model is tiny, so the tests check behaviour (finish reasons, JSON, recovery), not wit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kbagent.errors import ContextExceeded
from kbagent.llm import (
    ChatModel,
    ChatRequest,
    StreamEnd,
    SystemMessage,
    TextDelta,
    UserMessage,
    build_chat_model,
    close_model,
    collect_stream,
    complete_json,
    estimate_request_tokens,
)
from kbagent.llm.factory import build_openai_client
from kbagent.llm.openai_client import OpenAIChatModel
from kbagent.settings import Settings, load_settings

pytestmark = pytest.mark.llm_server

LONG_TEXT = " ".join(f"Paragraph {i}: the staff handbook says employees accrue leave every month." for i in range(120))


def _settings(base_url: str, **profile: Any) -> Settings:
    values: dict[str, Any] = {"base_url": base_url, "model": "smollm2", "max_output_tokens": 32, "max_retries": 1}
    values.update(profile)
    return load_settings(environ={}, overrides={"llm": {"provider": "local", "providers": {"local": values}}})


@pytest.fixture
async def model(llama_server: str, allow_model_requests: None) -> AsyncIterator[ChatModel]:
    built = build_chat_model(_settings(llama_server))
    assert built is not None
    yield built
    await close_model(built)


def _ask(text: str, **fields: Any) -> ChatRequest:
    return ChatRequest(messages=(SystemMessage("You are a helpful assistant."), UserMessage(text)), **fields)


async def test_plain_completion(model: ChatModel) -> None:
    result = await model.complete(_ask("Say hello.", temperature=0.0))
    assert result.text.strip()
    assert result.finish_reason in ("stop", "length")
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


async def test_streaming(model: ChatModel) -> None:
    events = [e async for e in model.stream(_ask("Name three colours.", temperature=0.0))]
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1, "a real stream arrives in several deltas"
    assert isinstance(events[-1], StreamEnd) and events[-1].finish_reason in ("stop", "length")


async def test_finish_reason_length(model: ChatModel) -> None:
    result = await model.complete(_ask("Write a long story about a cat.", max_output_tokens=5))
    assert result.finish_reason == "length"


async def test_json_object_mode(llama_server: str, allow_model_requests: None) -> None:
    built = build_chat_model(_settings(llama_server, structured_output="json_object", max_output_tokens=256))
    assert built is not None
    try:
        value = await complete_json(built, _ask('Return {"ok": true} as JSON.', temperature=0.0))
    finally:
        await close_model(built)
    assert isinstance(value, dict)


async def test_raw_client_sees_the_explicit_context_error(llama_server: str, allow_model_requests: None) -> None:
    settings = _settings(llama_server)
    profile = settings.llm.providers["local"]
    client = OpenAIChatModel(build_openai_client(profile, environ={}), profile, "local")
    request = _ask(LONG_TEXT)
    assert estimate_request_tokens(request) > 512
    try:
        with pytest.raises(ContextExceeded, match="maximum context length is 512"):
            await client.complete(request)
        # Streaming: llama.cpp answers with an empty 200 stream; the client asks once more without streaming.
        with pytest.raises(ContextExceeded):
            await collect_stream(client.stream(request))
    finally:
        await client.aclose()


async def test_guard_recovers_from_a_prompt_far_over_the_window(model: ChatModel) -> None:
    request = _ask(LONG_TEXT + "\nQuestion: what do employees accrue?", temperature=0.0)
    assert estimate_request_tokens(request) > 3 * 512
    result = await model.complete(request)
    assert result.recoveries >= 1 and result.text.strip()


async def test_guard_recovers_a_stream_from_a_prompt_far_over_the_window(model: ChatModel) -> None:
    request = _ask(LONG_TEXT + "\nQuestion: what do employees accrue?", temperature=0.0)
    result = await collect_stream(model.stream(request))
    assert result.recoveries >= 1 and result.text.strip()
    # The connection is still usable after the empty stream (it once broke a kept-alive connection).
    again = await model.complete(_ask("Say hello."))
    assert again.text.strip()


async def test_known_window_pre_trims_and_needs_no_recovery(llama_server: str, allow_model_requests: None) -> None:
    built = build_chat_model(_settings(llama_server, max_input_tokens=512))
    assert built is not None
    try:
        result = await built.complete(_ask(LONG_TEXT + "\nQuestion: what do employees accrue?"))
    finally:
        await close_model(built)
    assert result.recoveries == 0 and result.text.strip()
