"""The ChatModel protocol every language-model implementation follows (real client, guard, scripted models)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kbagent.llm.messages import (
    ChatRequest,
    ChatResult,
    ReasoningDelta,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)


@runtime_checkable
class ChatModel(Protocol):
    """A language model. Both calls raise ``kbagent.errors.ModelError`` subclasses on failure:
    ``ContextExceeded`` when the provider says the prompt is over its window, ``IncompleteOutput`` when a stream
    ends without a finish reason, ``ProviderUnavailable`` for auth/quota/open circuit, plain ``ModelError`` else.
    """

    @property
    def name(self) -> str:
        """Model name for logs and records."""
        ...

    async def complete(self, request: ChatRequest) -> ChatResult:
        """One non-streaming call."""
        ...

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Text and reasoning deltas, then exactly one ``StreamEnd``. Closing the iterator early cancels the call."""
        ...


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """What is known of a model's window. ``max_input_tokens`` None means unknown: nothing is pre-trimmed."""

    max_input_tokens: int | None = None
    max_output_tokens: int = 1024


async def close_model(model: ChatModel) -> None:
    """Release a model's connections (the real client has ``aclose``; scripted models have nothing to close)."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()


async def collect_stream(events: AsyncIterator[StreamEvent]) -> ChatResult:
    """Drain a stream into a ChatResult (tests and callers that want streaming's transport but one result)."""
    text: list[str] = []
    reasoning: list[str] = []
    end: StreamEnd | None = None
    async for event in events:
        match event:
            case TextDelta():
                text.append(event.text)
            case ReasoningDelta():
                reasoning.append(event.text)
            case StreamEnd():
                end = event
    if end is None:
        from kbagent.errors import IncompleteOutput

        raise IncompleteOutput("the stream ended without a finish reason")
    tool_calls: tuple[ToolCall, ...] = end.tool_calls
    return ChatResult(
        text="".join(text),
        reasoning="".join(reasoning),
        finish_reason=end.finish_reason,
        usage=end.usage or Usage(),
        tool_calls=tool_calls,
        recoveries=end.recoveries,
    )
