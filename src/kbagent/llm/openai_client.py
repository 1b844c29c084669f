"""The one real ChatModel: any OpenAI-compatible chat-completions endpoint through the official ``openai`` SDK.

It is handed its ``AsyncOpenAI`` (built by ``llm.factory`` from a provider profile; tests pass one over
``httpx.MockTransport``) and translates typed requests to the wire and replies back. It does not retry: the SDK is
built with ``max_retries=0`` and ``llm.resilience`` decides. Errors come out as the kbagent tree, classified by
``llm.error_catalogue``.

An empty 200 stream (llama.cpp's server answers a prompt over its context that way) is not taken as an answer and not
guessed to be a context error: the same request is sent once without streaming, and the provider's explicit reply
decides (a 400 ``context_length_exceeded`` then reaches the guard as ``ContextExceeded``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
from openai import AsyncOpenAI

from kbagent.errors import (
    ContextExceeded,
    IncompleteOutput,
    ModelError,
    ProviderBusy,
    ProviderUnavailable,
    StructuredOutputError,
)
from kbagent.llm.error_catalogue import classify_error
from kbagent.llm.messages import (
    AssistantMessage,
    ChatRequest,
    ChatResult,
    ForceTool,
    JsonSchema,
    Message,
    ReasoningDelta,
    StreamEnd,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from kbagent.llm.switch import check_model_requests_allowed
from kbagent.llm.thinking import ThinkSplitter, split_think, thinking_off_params
from kbagent.settings import ProviderProfile
from kbagent.tokens import estimate_tokens

JSON_OBJECT_INSTRUCTION = "Reply with one JSON object only: no prose before or after it, no code fences."


def schema_instruction(response_format: JsonSchema | str) -> str:
    """The instruction that carries a format where the provider cannot enforce it (validated after the reply)."""
    if isinstance(response_format, JsonSchema):
        schema = json.dumps(response_format.schema, ensure_ascii=False)
        return f"{JSON_OBJECT_INSTRUCTION} It must match this JSON Schema:\n{schema}"
    return JSON_OBJECT_INSTRUCTION


def _wire_message(message: Message) -> dict[str, Any]:
    match message:
        case SystemMessage() | UserMessage():
            return {"role": message.role, "content": message.content}
        case AssistantMessage():
            wire: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                wire["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in message.tool_calls
                ]
            return wire
        case ToolMessage():
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}


def _with_instruction(messages: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    if messages and messages[0]["role"] == "system":
        first = dict(messages[0])
        first["content"] = f"{first['content']}\n\n{instruction}" if first["content"] else instruction
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def _reasoning_field(obj: Any) -> str:
    """``reasoning_content`` (DeepSeek, Qwen, vLLM, llama.cpp) or ``reasoning`` (OpenRouter, newer vLLM)."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(obj, name, None)
        if value is None:
            extra = getattr(obj, "model_extra", None) or {}
            value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


class OpenAIChatModel:
    """ChatModel over ``client.chat.completions``; ``profile`` says model, caps, thinking switch and JSON support."""

    def __init__(self, client: AsyncOpenAI, profile: ProviderProfile, provider: str = "") -> None:
        self._client = client
        self.profile = profile
        self.provider = provider or profile.model

    @property
    def name(self) -> str:
        return self.profile.model

    async def aclose(self) -> None:
        """Close the HTTP connections of the client this model was handed."""
        await self._client.close()

    # ------------------------------------------------------------------------------------------ request

    def build_params(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create`` (public so tests can see what goes out)."""
        messages = [_wire_message(m) for m in request.messages]
        params: dict[str, Any] = {
            "model": self.profile.model,
            "max_tokens": request.max_output_tokens or self.profile.max_output_tokens,
            "timeout": self.profile.timeout_seconds,
        }
        extra_body: dict[str, Any] = {}
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if not request.thinking:
            top, extra = thinking_off_params(self.profile.thinking)
            params.update(top)
            extra_body.update(extra)
        if request.response_format is not None:
            mode = self.profile.structured_output
            fmt = request.response_format
            if isinstance(fmt, JsonSchema) and mode == "json_schema":
                params["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": fmt.name, "schema": dict(fmt.schema), "strict": fmt.strict},
                }
            else:
                # The schema travels in the prompt; complete_json validates the reply against it.
                messages = _with_instruction(messages, schema_instruction(fmt))
                if mode in ("json_schema", "json_object"):
                    params["response_format"] = {"type": "json_object"}
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
                }
                for t in request.tools
            ]
        if request.tool_choice is not None:
            if isinstance(request.tool_choice, ForceTool):
                params["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice.name}}
            else:
                params["tool_choice"] = request.tool_choice
        if stream:
            params["stream"] = True
            params["stream_options"] = {"include_usage": True}
        if extra_body:
            params["extra_body"] = extra_body
        params["messages"] = messages
        return params

    # ------------------------------------------------------------------------------------------ calls

    async def complete(self, request: ChatRequest) -> ChatResult:
        check_model_requests_allowed()
        params = self.build_params(request, stream=False)
        try:
            completion = await self._client.chat.completions.create(**params)
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        if not completion.choices:
            raise IncompleteOutput(f"{self.provider}: the reply has no choices")
        choice = completion.choices[0]
        message = choice.message
        text, think = split_think(message.content or "")
        reasoning = _reasoning_field(message) + think
        calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
            for c in (message.tool_calls or ())
            if getattr(c, "function", None) is not None
        )
        self._check_tool_choice(request, calls)
        usage = completion.usage
        return ChatResult(
            text=text,
            reasoning=reasoning,
            finish_reason=choice.finish_reason,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens)
            if usage
            else Usage(0, estimate_tokens(text) + estimate_tokens(reasoning)),
            tool_calls=calls,
        )

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        check_model_requests_allowed()
        params = self.build_params(request, stream=True)
        splitter = ThinkSplitter()
        finish: str | None = None
        usage: Usage | None = None
        chunks = 0
        produced = 0
        calls: dict[int, dict[str, str]] = {}
        try:
            response = await self._client.chat.completions.create(**params)
            async with response as events:
                async for chunk in events:
                    chunks += 1
                    if chunk.usage is not None:
                        usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                    for choice in chunk.choices:
                        delta = choice.delta
                        reasoning = _reasoning_field(delta) if delta is not None else ""
                        if reasoning:
                            produced += len(reasoning)
                            yield ReasoningDelta(reasoning)
                        if delta is not None and delta.content:
                            for kind, piece in splitter.feed(delta.content):
                                produced += len(piece)
                                yield TextDelta(piece) if kind == "text" else ReasoningDelta(piece)
                        for call in (delta.tool_calls or ()) if delta is not None else ():
                            slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                            slot["id"] = call.id or slot["id"]
                            if call.function is not None:
                                slot["name"] += call.function.name or ""
                                slot["arguments"] += call.function.arguments or ""
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        for kind, piece in splitter.flush():
            yield TextDelta(piece) if kind == "text" else ReasoningDelta(piece)
        if finish is None:
            if chunks == 0:
                # Empty 200 stream: ask the provider once without streaming for an explicit verdict.
                try:
                    result = await self.complete(request)
                except ProviderBusy:
                    # llama.cpp may leave the kept-alive connection of the empty stream broken: the pool hands it
                    # out again and it fails at once. One more try gets a fresh connection.
                    result = await self.complete(request)
                if result.reasoning:
                    yield ReasoningDelta(result.reasoning)
                if result.text:
                    yield TextDelta(result.text)
                yield StreamEnd(result.finish_reason or "stop", result.usage, result.tool_calls)
                return
            raise IncompleteOutput(
                f"{self.provider}: the stream ended without a finish reason after {chunks} chunks; "
                "the answer may be cut off"
            )
        tool_calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items()))
        self._check_tool_choice(request, tool_calls)
        yield StreamEnd(finish, usage or Usage(0, produced // 4 + 1), tool_calls)

    # ------------------------------------------------------------------------------------------ errors

    def _check_tool_choice(self, request: ChatRequest, calls: tuple[ToolCall, ...]) -> None:
        forced = request.tool_choice
        if isinstance(forced, ForceTool) and not any(c.name == forced.name for c in calls):
            raise StructuredOutputError(f"{self.provider}: the model did not call the required tool {forced.name!r}")
        if forced == "required" and not calls:
            raise StructuredOutputError(f"{self.provider}: the model called no tool although one was required")

    def _translate(self, exc: openai.OpenAIError) -> ModelError:
        where = f"{self.provider} ({self.profile.model})"
        if isinstance(exc, openai.APITimeoutError):
            return ProviderBusy(f"{where}: no reply within {self.profile.timeout_seconds:g} s")
        if isinstance(exc, openai.APIConnectionError):
            return ProviderBusy(f"{where}: cannot connect to {self.profile.base_url} ({exc})")
        status: int | None = None
        body = str(exc)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            try:
                body = exc.response.text or body
            except Exception:  # a streamed response whose body was already consumed
                body = str(exc)
        elif isinstance(exc, openai.APIError) and exc.body is not None:
            body = json.dumps(exc.body, ensure_ascii=False) if not isinstance(exc.body, str) else exc.body
        short = body if len(body) <= 500 else body[:500] + "..."
        kind = classify_error(status, body)
        shown = f"HTTP {status}" if status is not None else "stream error"
        match kind:
            case "context":
                return ContextExceeded(f"{where}: the prompt is over the model's context window ({shown}: {short})")
            case "auth":
                return ProviderUnavailable(
                    f"{where}: authentication failed ({shown}); check the key in ${self.profile.api_key_env or '?'}"
                )
            case "quota":
                return ProviderUnavailable(f"{where}: quota or balance exhausted ({shown}: {short})")
            case "rate_limit" | "transient":
                return ProviderBusy(f"{where}: busy or failing ({shown}: {short})")
            case "other":
                return ModelError(f"{where}: the request was rejected ({shown}: {short})")
