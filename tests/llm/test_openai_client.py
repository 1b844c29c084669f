"""The OpenAI-compatible client through the real SDK, with HTTP answered by httpx.MockTransport."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from llm_fakes import chunk, completion, mock_client, profile, sse

from kbagent.errors import ContextExceeded, IncompleteOutput, StructuredOutputError
from kbagent.llm import (
    AssistantMessage,
    ChatRequest,
    ForceTool,
    JsonSchema,
    ReasoningDelta,
    StreamEnd,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
    collect_stream,
)
from kbagent.llm.error_catalogue import CONTEXT_ERRORS
from kbagent.llm.openai_client import OpenAIChatModel
from kbagent.llm.switch import ModelRequestsBlocked
from kbagent.llm.thinking import ThinkSplitter, split_think

REQUEST = ChatRequest(messages=(SystemMessage("You answer briefly."), UserMessage("What is 2+2?")))


class Recorder:
    """A MockTransport handler that answers from a list and keeps every JSON body it was sent."""

    def __init__(self, *responses: httpx.Response) -> None:
        self.responses = list(responses)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return self.responses.pop(0)


def _model(recorder: Recorder, **profile_fields: Any) -> OpenAIChatModel:
    return OpenAIChatModel(mock_client(recorder), profile(**profile_fields), "test")


async def test_requests_are_blocked_unless_a_test_opts_in() -> None:
    recorder = Recorder(completion("4"))
    with pytest.raises(ModelRequestsBlocked):
        await _model(recorder).complete(REQUEST)
    assert recorder.bodies == []


async def test_completion_keeps_reasoning_out_of_the_text(allow_model_requests: None) -> None:
    recorder = Recorder(completion("<think>2 and 2 make 4</think>The answer is 4.", reasoning="first, add"))
    result = await _model(recorder).complete(REQUEST)
    assert result.text == "The answer is 4."
    assert "2 and 2 make 4" in result.reasoning and "first, add" in result.reasoning
    assert (result.finish_reason, result.usage.input_tokens, result.usage.output_tokens) == ("stop", 11, 7)
    body = recorder.bodies[0]
    assert body["model"] == "test-model" and body["max_tokens"] == 64
    assert body["messages"][1] == {"role": "user", "content": "What is 2+2?"}


@pytest.mark.parametrize(
    ("switch", "expected"),
    [
        ("thinking_type", {"thinking": {"type": "disabled"}}),
        ("enable_thinking", {"enable_thinking": False}),
        ("chat_template", {"chat_template_kwargs": {"enable_thinking": False}}),
        ("reasoning_effort", {"reasoning_effort": "low"}),
        ("none", {}),
    ],
)
async def test_thinking_is_switched_off_the_providers_way(
    allow_model_requests: None, switch: str, expected: dict[str, Any]
) -> None:
    recorder = Recorder(completion("ok"), completion("ok"))
    model = _model(recorder, thinking=switch)
    await model.complete(ChatRequest(messages=REQUEST.messages, thinking=False))
    await model.complete(REQUEST)  # thinking left on: nothing extra is sent
    off, on = recorder.bodies
    for key, value in expected.items():
        assert off[key] == value
    assert not set(expected) & set(on)


SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.mark.parametrize(
    ("mode", "wire_format", "schema_in_prompt"),
    [("json_schema", "json_schema", False), ("json_object", "json_object", True), ("prompt", None, True)],
)
async def test_structured_output_is_enforced_or_carried_in_the_prompt(
    allow_model_requests: None, mode: str, wire_format: str | None, schema_in_prompt: bool
) -> None:
    recorder = Recorder(completion('{"ok": true}'))
    request = ChatRequest(messages=REQUEST.messages, response_format=JsonSchema("verdict", SCHEMA))
    await _model(recorder, structured_output=mode).complete(request)
    body = recorder.bodies[0]
    assert (body.get("response_format") or {}).get("type") == wire_format
    system = body["messages"][0]["content"]
    assert system.startswith("You answer briefly.")
    assert ('"required": ["ok"]' in system) is schema_in_prompt


async def test_tools_and_forced_choice_go_out_and_a_missing_call_is_a_marked_failure(
    allow_model_requests: None,
) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
    recorder = Recorder(completion(None, finish="tool_calls", tool_calls=[call]), completion("no tool, sorry"))
    model = _model(recorder)
    request = ChatRequest(
        messages=(
            UserMessage("find x"),
            AssistantMessage("", (ToolCall("call_0", "search", "{}"),)),
            ToolMessage("call_0", "nothing"),
        ),
        tools=(ToolSpec("search", "Search the knowledge base", {"type": "object"}),),
        tool_choice=ForceTool("search"),
    )
    result = await model.complete(request)
    assert result.tool_calls == (ToolCall("call_1", "search", '{"q": "x"}'),)
    body = recorder.bodies[0]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "search"}}
    assert body["messages"][1]["tool_calls"][0]["id"] == "call_0"
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_0", "content": "nothing"}
    with pytest.raises(StructuredOutputError, match="did not call the required tool 'search'"):
        await model.complete(request)


async def test_stream_separates_think_tags_split_across_chunks(allow_model_requests: None) -> None:
    recorder = Recorder(
        sse(
            chunk("<thi"),
            chunk("nk>hidden "),
            chunk("plan</th"),
            chunk("ink>Visible"),
            chunk(" answer", reasoning=None),
            chunk(finish="stop"),
        )
    )
    events = [e async for e in _model(recorder).stream(REQUEST)]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert text == "Visible answer"
    assert reasoning == "hidden plan"
    assert isinstance(events[-1], StreamEnd) and events[-1].finish_reason == "stop"
    assert recorder.bodies[0]["stream"] is True


async def test_stream_reasoning_content_field_is_kept_apart(allow_model_requests: None) -> None:
    recorder = Recorder(sse(chunk(reasoning="thinking..."), chunk("42"), chunk(finish="stop")))
    result = await collect_stream(_model(recorder).stream(REQUEST))
    assert (result.text, result.reasoning) == ("42", "thinking...")


async def test_stream_cut_without_finish_reason_is_an_error(allow_model_requests: None) -> None:
    recorder = Recorder(sse(chunk("The answer is"), done=False))
    with pytest.raises(IncompleteOutput, match="without a finish reason"):
        await collect_stream(_model(recorder).stream(REQUEST))


async def test_empty_stream_is_diagnosed_by_one_plain_call(allow_model_requests: None) -> None:
    # llama.cpp: a prompt over the context gives an empty 200 stream; the plain call returns the explicit 400.
    recorder = Recorder(sse(done=False), httpx.Response(400, content=CONTEXT_ERRORS[2].example.encode()))
    with pytest.raises(ContextExceeded):
        await collect_stream(_model(recorder).stream(REQUEST))
    assert [b.get("stream", False) for b in recorder.bodies] == [True, False]


async def test_empty_stream_followed_by_a_good_plain_reply_is_delivered(allow_model_requests: None) -> None:
    recorder = Recorder(sse(done=False), completion("4"))
    result = await collect_stream(_model(recorder).stream(REQUEST))
    assert (result.text, result.finish_reason) == ("4", "stop")


async def test_error_inside_a_stream_is_classified(allow_model_requests: None) -> None:
    body = {"error": {"message": "Prompt exceeds max length", "code": "1261"}}
    recorder = Recorder(sse(body, done=False))
    with pytest.raises(ContextExceeded):
        await collect_stream(_model(recorder).stream(REQUEST))


@pytest.mark.parametrize(
    ("content", "text", "reasoning"),
    [
        ("<think>a</think>b", "b", "a"),
        ("plain", "plain", ""),
        ("<think>cut off by length", "", "cut off by length"),
        ("x</think>y", "xy", ""),  # a stray closing tag is never shown
        ("a <b>bold</b> <thinker>", "a <b>bold</b> <thinker>", ""),
    ],
)
def test_split_think(content: str, text: str, reasoning: str) -> None:
    assert split_think(content) == (text, reasoning)


def test_think_splitter_any_chunking_gives_the_same_split() -> None:
    content = "<think>step 1\nstep 2</think>答案是 4。<think>again</think> done"
    for size in range(1, 12):
        splitter = ThinkSplitter()
        pieces = []
        for i in range(0, len(content), size):
            pieces += splitter.feed(content[i : i + size])
        pieces += splitter.flush()
        assert "".join(p for k, p in pieces if k == "text") == "答案是 4。 done"
        assert "".join(p for k, p in pieces if k == "reasoning") == "step 1\nstep 2again"
