"""Typed messages, requests, results and stream events exchanged with a language model.

Everything here is a small frozen dataclass with a ``Literal`` ``role`` or ``kind`` so callers can match on it
exhaustively. Nothing here knows HTTP: the OpenAI-compatible client translates these to wire dictionaries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# ---------------------------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class SystemMessage:
    content: str
    role: Literal["system"] = field(default="system", init=False)


@dataclass(frozen=True, slots=True)
class UserMessage:
    content: str
    role: Literal["user"] = field(default="user", init=False)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. ``arguments`` is the JSON text exactly as the model produced it."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = field(default="assistant", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


@dataclass(frozen=True, slots=True)
class ToolMessage:
    """The result of one tool call; ``tool_call_id`` pairs it with the assistant's ``ToolCall.id``."""

    tool_call_id: str
    content: str
    role: Literal["tool"] = field(default="tool", init=False)


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage

# ---------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class JsonSchema:
    """Ask for JSON matching ``schema`` (a JSON Schema object). ``name`` is sent to providers that want one."""

    name: str
    schema: Mapping[str, Any]
    strict: bool = True


ResponseFormat = JsonSchema | Literal["json_object"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call; ``parameters`` is its JSON Schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ForceTool:
    """``tool_choice`` that obliges the model to call this one tool."""

    name: str


ToolChoice = Literal["auto", "none", "required"] | ForceTool


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One call to a model.

    ``max_output_tokens`` None means the provider profile's cap. ``thinking=False`` asks the provider to switch
    reasoning off (auxiliary calls); providers that cannot are still safe because reasoning text never reaches
    ``ChatResult.text``. ``response_format`` and ``tool_choice`` are constraints: an adapter that cannot honour
    them raises ``StructuredOutputError`` instead of dropping them.
    """

    messages: tuple[Message, ...]
    max_output_tokens: int | None = None
    response_format: ResponseFormat | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    thinking: bool = True
    temperature: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))

    def with_messages(self, messages: Sequence[Message]) -> ChatRequest:
        """A copy with other messages; every constraint (format, tools, tool choice, thinking) is kept."""
        return ChatRequest(
            messages=tuple(messages),
            max_output_tokens=self.max_output_tokens,
            response_format=self.response_format,
            tools=self.tools,
            tool_choice=self.tool_choice,
            thinking=self.thinking,
            temperature=self.temperature,
        )

    @property
    def is_structured(self) -> bool:
        """True when the caller needs machine-readable output (a format or a forced tool call)."""
        return (
            self.response_format is not None
            or isinstance(self.tool_choice, ForceTool)
            or self.tool_choice == ("required")
        )


# ---------------------------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reported them (or estimated where it reported none)."""

    input_tokens: int = 0
    output_tokens: int = 0


FinishReason = str  # "stop", "length", "tool_calls", "content_filter", or a provider's own word


@dataclass(frozen=True, slots=True)
class ChatResult:
    """A complete reply. ``text`` never contains reasoning: ``<think>`` blocks and ``reasoning_content`` go to
    ``reasoning``. ``recoveries`` counts context-overflow retries the guard made to get it."""

    text: str
    reasoning: str = ""
    finish_reason: FinishReason | None = "stop"
    usage: Usage = field(default_factory=Usage)
    tool_calls: tuple[ToolCall, ...] = ()
    recoveries: int = 0


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    kind: Literal["text"] = field(default="text", init=False)


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    kind: Literal["reasoning"] = field(default="reasoning", init=False)


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """Last event of every successful stream. A stream that stops without one is an error, never a short answer."""

    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    tool_calls: tuple[ToolCall, ...] = ()
    recoveries: int = 0
    kind: Literal["end"] = field(default="end", init=False)


StreamEvent = TextDelta | ReasoningDelta | StreamEnd
