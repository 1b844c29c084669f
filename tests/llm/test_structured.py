"""Auxiliary calls and JSON output: thinking off, cut-off replies refused, JSON parsed robustly and validated."""

from __future__ import annotations

import pytest

from kbagent.errors import IncompleteOutput, StructuredOutputError
from kbagent.llm import (
    ChatRequest,
    JsonSchema,
    ScriptedModel,
    ScriptedReply,
    SystemMessage,
    UserMessage,
    complete_auxiliary,
    complete_json,
    extract_json_object,
)

REQUEST = ChatRequest(messages=(SystemMessage("Assess the evidence."), UserMessage("Is it enough?")))
SCHEMA = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}, "missing": {"type": "array", "items": {"type": "string"}}},
    "required": ["sufficient", "missing"],
}


async def test_auxiliary_call_switches_thinking_off() -> None:
    model = ScriptedModel(["rewritten query"])
    result = await complete_auxiliary(model, REQUEST)
    assert result.text == "rewritten query"
    assert model.requests[0].thinking is False and model.streamed == [False]


async def test_finish_reason_length_is_incomplete_never_a_result() -> None:
    model = ScriptedModel([ScriptedReply(text="The summary of the first ten tur", finish_reason="length")])
    with pytest.raises(IncompleteOutput, match="max_output_tokens=50"):
        await complete_auxiliary(model, ChatRequest(messages=REQUEST.messages, max_output_tokens=50))


async def test_reasoning_only_reply_is_incomplete() -> None:
    model = ScriptedModel([ScriptedReply(text="", reasoning="let me think")])
    with pytest.raises(IncompleteOutput, match="only reasoning"):
        await complete_auxiliary(model, REQUEST)


@pytest.mark.parametrize(
    "reply",
    [
        '{"sufficient": false, "missing": ["dates"]}',
        '```json\n{"sufficient": false, "missing": ["dates"]}\n```',
        'Here is my verdict:\n{"sufficient": false, "missing": ["dates"]}\nHope this helps {smile}.',
    ],
)
async def test_json_is_found_in_fences_and_prose(reply: str) -> None:
    model = ScriptedModel([reply])
    value = await complete_json(model, REQUEST, SCHEMA, name="assessment")
    assert value == {"sufficient": False, "missing": ["dates"]}
    sent = model.requests[0]
    assert sent.response_format == JsonSchema("assessment", SCHEMA) and sent.thinking is False


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I think the evidence is sufficient.", "no JSON object"),
        ('{"sufficient": "yes", "missing": []}', "at sufficient"),
        ('{"sufficient": true}', "'missing' is a required property"),
        ("[1, 2, 3]", "no JSON object"),
    ],
)
async def test_invalid_json_is_a_marked_failure_never_invented(reply: str, message: str) -> None:
    with pytest.raises(StructuredOutputError, match=message):
        await complete_json(ScriptedModel([reply]), REQUEST, SCHEMA)


async def test_json_object_mode_without_schema() -> None:
    model = ScriptedModel(['{"anything": 1}'])
    assert await complete_json(model, REQUEST) == {"anything": 1}
    assert model.requests[0].response_format == "json_object"


def test_extract_prefers_the_whole_reply_and_handles_nested_objects() -> None:
    assert extract_json_object('noise {"a": {"b": [1, {"c": 2}]}} tail') == {"a": {"b": [1, {"c": 2}]}}
