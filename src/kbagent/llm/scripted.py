"""Scripted language models for tests: a ChatModel driven by a queue of replies or by a function.

    model = ScriptedModel(["first reply", ScriptedReply(text="", reasoning="hm", finish_reason="length")])
    model = ScriptedModel(lambda messages, info: f"you said {messages[-1].content}")
    model.enqueue('{"sufficient": true}')
    ...
    assert model.requests[0].thinking is False

A queued reply may be a ``str`` (the answer text), a ``ScriptedReply``, a ``ChatResult``, or an exception instance,
which is raised (e.g. ``ContextExceeded(...)`` to simulate a provider's 400). ``context_window`` makes the model
raise ``ContextExceeded`` for any request whose estimate is over it, like a real server with a small window. No
network is involved; the same object serves ``complete`` and ``stream``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kbagent.errors import ContextExceeded
from kbagent.llm.budget import estimate_messages_tokens, estimate_request_tokens
from kbagent.llm.messages import (
    ChatRequest,
    ChatResult,
    FinishReason,
    Message,
    ReasoningDelta,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from kbagent.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    text: str = ""
    reasoning: str = ""
    finish_reason: FinishReason = "stop"
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What a reply function learns about the call besides the messages."""

    request: ChatRequest
    index: int
    streaming: bool


Reply = str | ScriptedReply | ChatResult | BaseException
ReplyFunction = Callable[[Sequence[Message], CallInfo], Reply]


class ScriptExhausted(AssertionError):
    """The test queued fewer replies than the code under test asked for.

    An AssertionError, not a ModelError, so product code that degrades on model failures cannot swallow it.
    """


@dataclass
class ScriptedModel:
    replies: Iterable[Reply] | ReplyFunction = ()
    name: str = "scripted"
    context_window: int | None = None
    stream_chunk_chars: int = 8
    requests: list[ChatRequest] = field(default_factory=list)
    streamed: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._fn: ReplyFunction | None = None
        self._queue: deque[Reply] = deque()
        if callable(self.replies):
            self._fn = self.replies
        else:
            self._queue.extend(self.replies)

    def enqueue(self, *replies: Reply) -> None:
        self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._queue)

    @property
    def calls(self) -> int:
        return len(self.requests)

    def _next_reply(self, request: ChatRequest, streaming: bool) -> ScriptedReply | ChatResult:
        index = len(self.requests)
        self.requests.append(request)
        self.streamed.append(streaming)
        if self.context_window is not None:
            estimate = estimate_request_tokens(request)
            if estimate > self.context_window:
                raise ContextExceeded(
                    f"This model's maximum context length is {self.context_window} tokens. "
                    f"However, you requested {estimate} tokens."
                )
        reply: Reply
        if self._fn is not None:
            reply = self._fn(request.messages, CallInfo(request=request, index=index, streaming=streaming))
        elif self._queue:
            reply = self._queue.popleft()
        else:
            raise ScriptExhausted(f"scripted model {self.name!r} has no reply queued for call {index + 1}")
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            return ScriptedReply(text=reply)
        return reply

    def _usage(self, request: ChatRequest, reply: ScriptedReply) -> Usage:
        if reply.usage is not None:
            return reply.usage
        return Usage(
            input_tokens=estimate_messages_tokens(request.messages),
            output_tokens=estimate_tokens(reply.text) + estimate_tokens(reply.reasoning),
        )

    async def complete(self, request: ChatRequest) -> ChatResult:
        reply = self._next_reply(request, streaming=False)
        if isinstance(reply, ChatResult):
            return reply
        return ChatResult(
            text=reply.text,
            reasoning=reply.reasoning,
            finish_reason=reply.finish_reason,
            usage=self._usage(request, reply),
            tool_calls=reply.tool_calls,
        )

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        reply = self._next_reply(request, streaming=True)
        if isinstance(reply, ChatResult):
            reply = ScriptedReply(
                text=reply.text,
                reasoning=reply.reasoning,
                finish_reason=reply.finish_reason or "stop",
                tool_calls=reply.tool_calls,
                usage=reply.usage,
            )
        for chunk in _chunks(reply.reasoning, self.stream_chunk_chars):
            yield ReasoningDelta(chunk)
        for chunk in _chunks(reply.text, self.stream_chunk_chars):
            yield TextDelta(chunk)
        yield StreamEnd(
            finish_reason=reply.finish_reason, usage=self._usage(request, reply), tool_calls=reply.tool_calls
        )


_WORD = re.compile(r"\S+\s*|\s+")


def _chunks(text: str, size: int) -> list[str]:
    """Word-ish chunks no longer than ``size`` characters, like a provider's deltas."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(word[i : i + size] for i in range(0, len(word), size))
    return out
