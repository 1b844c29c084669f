"""The scripted model other areas test against must behave like a real ChatModel."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kbagent.errors import ContextExceeded, ModelError
from kbagent.llm import (
    CallInfo,
    ChatModel,
    ChatRequest,
    Message,
    ReasoningDelta,
    ScriptedModel,
    ScriptedReply,
    ScriptExhausted,
    StreamEnd,
    SystemMessage,
    TextDelta,
    UserMessage,
    collect_stream,
)


def _request(text: str = "hi") -> ChatRequest:
    return ChatRequest(messages=(SystemMessage("be brief"), UserMessage(text)))


async def test_queue_replies_in_order_and_records_requests() -> None:
    model = ScriptedModel(["one", ScriptedReply(text="two", reasoning="thinking", finish_reason="length")])
    assert isinstance(model, ChatModel)
    first = await model.complete(_request("a"))
    second = await model.complete(_request("b"))
    assert (first.text, first.finish_reason) == ("one", "stop")
    assert (second.text, second.reasoning, second.finish_reason) == ("two", "thinking", "length")
    assert [r.messages[-1].content for r in model.requests] == ["a", "b"]
    with pytest.raises(ScriptExhausted, match="call 3"):
        await model.complete(_request())


async def test_function_driven_model_sees_messages_and_call_info() -> None:
    seen: list[CallInfo] = []

    def reply(messages: Sequence[Message], info: CallInfo) -> str:
        seen.append(info)
        return f"echo {messages[-1].content}"

    model = ScriptedModel(reply)
    result = await collect_stream(model.stream(_request("你好 world")))
    assert result.text == "echo 你好 world"
    assert seen[0].streaming is True and seen[0].index == 0


async def test_stream_keeps_reasoning_apart_and_ends_once() -> None:
    model = ScriptedModel([ScriptedReply(text="The answer is 42.", reasoning="let me think")])
    events = [e async for e in model.stream(_request())]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The answer is 42."
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "let me think"
    assert isinstance(events[-1], StreamEnd) and sum(isinstance(e, StreamEnd) for e in events) == 1


async def test_queued_exception_is_raised_and_context_window_enforced() -> None:
    model = ScriptedModel([ModelError("boom")], context_window=50)
    with pytest.raises(ModelError, match="boom"):
        await model.complete(_request())
    with pytest.raises(ContextExceeded):
        await model.complete(_request("word " * 200))
