"""The context-window guard against scripted models: pre-trim, recovery, limits, blank replies, cancellation."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence

import pytest

from kbagent.errors import ContextExceeded, InvalidInput, ModelError, StructuredOutputError
from kbagent.llm import (
    AssistantMessage,
    CallInfo,
    ChatRequest,
    ForceTool,
    GuardedModel,
    JsonSchema,
    Message,
    ModelLimits,
    ReasoningDelta,
    ScriptedModel,
    ScriptedReply,
    StreamEnd,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
    collect_stream,
    estimate_request_tokens,
)
from kbagent.llm.guard import CLARIFY_EN, CLARIFY_ZH, MAX_RECOVERIES
from kbagent.llm.shrink import TRUNCATION_MARKER
from kbagent.settings import LLMSettings

SETTINGS = LLMSettings()


def _history(turns: int, words: int = 200) -> tuple[Message, ...]:
    messages: list[Message] = [SystemMessage("You are the handbook assistant. Cite sources.")]
    for i in range(turns):
        messages.append(UserMessage(f"question {i} " + "lorem ipsum " * words))
        messages.append(AssistantMessage(f"answer {i} " + "dolor sit " * words))
    messages.append(UserMessage("What is the leave policy?"))
    return tuple(messages)


def _guard(inner: ScriptedModel, window: int | None = None, clock: object = None) -> GuardedModel:
    kwargs = {"clock": clock} if clock is not None else {}
    return GuardedModel(inner, ModelLimits(max_input_tokens=window, max_output_tokens=256), SETTINGS, **kwargs)  # type: ignore[arg-type]


async def test_no_window_configured_means_no_pre_trim() -> None:
    inner = ScriptedModel(["ok"])
    request = ChatRequest(messages=_history(30))
    await _guard(inner, window=None).complete(request)
    assert inner.requests[0].messages == request.messages


async def test_known_window_pre_trims_a_copy_and_keeps_system_and_question() -> None:
    inner = ScriptedModel(["ok"])
    request = ChatRequest(messages=_history(30))
    before = copy.deepcopy(request)
    await _guard(inner, window=2000).complete(request)
    sent = inner.requests[0]
    assert estimate_request_tokens(sent) <= 2000 - 256
    assert sent.messages[0] == request.messages[0] and sent.messages[-1] == request.messages[-1]
    assert request == before


async def test_recovers_from_an_explicit_context_error_on_a_copy() -> None:
    inner = ScriptedModel(["The policy allows 20 days."], context_window=1500)
    request = ChatRequest(messages=_history(30))
    before = copy.deepcopy(request)
    result = await _guard(inner).complete(request)
    assert result.text == "The policy allows 20 days." and result.recoveries >= 1
    estimates = [estimate_request_tokens(r) for r in inner.requests]
    # Each recovery aims at about 35% of the failed request's estimate.
    for failed, retry in zip(estimates, estimates[1:], strict=False):
        assert retry <= failed * 0.35 + 1
    assert request == before, "the caller's history is never changed"
    assert inner.requests[-1].messages[-1] == request.messages[-1]


async def test_gives_up_after_first_call_plus_four_recoveries_the_last_minimal() -> None:
    # The system prompt alone is far over this window: nothing can help, and the guard must stop.
    inner = ScriptedModel(lambda messages, info: "never", context_window=10)
    request = ChatRequest(messages=(SystemMessage("rules " * 3000), *_history(5)[1:]))
    with pytest.raises(ContextExceeded):
        await _guard(inner).complete(request)
    assert 2 <= inner.calls <= 1 + MAX_RECOVERIES
    last = inner.requests[-1].messages
    assert [type(m) for m in last] == [SystemMessage, UserMessage]


async def test_exactly_four_recoveries_when_every_call_fails() -> None:
    inner = ScriptedModel([ContextExceeded("maximum context length")] * 10)
    request = ChatRequest(messages=_history(40))
    with pytest.raises(ContextExceeded, match="after 4 shortened retries"):
        await _guard(inner).complete(request)
    assert inner.calls == 1 + MAX_RECOVERIES
    assert [type(m) for m in inner.requests[-1].messages] == [SystemMessage, UserMessage]


async def test_no_new_recovery_after_the_time_limit() -> None:
    now = [0.0]
    inner = ScriptedModel(lambda messages, info: _advance(now, 31.0))
    request = ChatRequest(messages=_history(40))
    with pytest.raises(ContextExceeded, match="no further shortening after 31 s"):
        await _guard(inner, clock=lambda: now[0]).complete(request)
    assert inner.calls == 1


def _advance(now: list[float], seconds: float) -> ContextExceeded:
    now[0] += seconds
    return ContextExceeded("context window exceeds limit (2013)")


async def test_other_errors_are_not_recovered() -> None:
    inner = ScriptedModel([ModelError("boom")])
    with pytest.raises(ModelError, match="boom"):
        await _guard(inner).complete(ChatRequest(messages=_history(3)))
    assert inner.calls == 1


async def test_output_budget_is_not_cut_and_constraints_are_kept() -> None:
    inner = ScriptedModel(['{"ok": true}'], context_window=1500)
    request = ChatRequest(
        messages=_history(30),
        max_output_tokens=300,
        response_format=JsonSchema("v", {"type": "object"}),
        tools=(ToolSpec("search", "search", {"type": "object"}),),
        tool_choice=ForceTool("search"),
    )
    await _guard(inner).complete(request)
    for sent in inner.requests:
        assert sent.max_output_tokens == 300
        assert (sent.response_format, sent.tools, sent.tool_choice) == (
            request.response_format,
            request.tools,
            request.tool_choice,
        )


async def test_huge_output_cap_is_lowered_only_to_half_a_known_window() -> None:
    inner = ScriptedModel(["ok"])
    await _guard(inner, window=4000).complete(ChatRequest(messages=_history(1), max_output_tokens=8000))
    assert inner.requests[0].max_output_tokens == 2000


async def test_single_over_long_question_is_cut_inside_with_a_marker() -> None:
    inner = ScriptedModel(["ok"], context_window=800)
    question = "开头的问题：" + "很长的材料。" * 2000 + "最后：请总结。"
    request = ChatRequest(messages=(SystemMessage("助手"), UserMessage(question)))
    await _guard(inner).complete(request)
    sent = inner.requests[-1].messages[-1].content
    assert TRUNCATION_MARKER in sent and sent.startswith("开头的问题") and sent.endswith("最后：请总结。")


async def test_blank_reply_after_recovery_becomes_a_clarification_on_the_answer_path() -> None:
    inner = ScriptedModel([ScriptedReply(text="  ", reasoning="I ran out of room")], context_window=1500)
    result = await _guard(inner).complete(ChatRequest(messages=_history(30)))
    assert result.text == CLARIFY_EN and result.reasoning == "I ran out of room"
    inner_zh = ScriptedModel([ScriptedReply(text="")], context_window=1500)
    zh = ChatRequest(messages=(*_history(30)[:-1], UserMessage("请假制度是什么？")))
    assert (await _guard(inner_zh).complete(zh)).text == CLARIFY_ZH


async def test_blank_reply_after_recovery_is_a_marked_failure_for_structured_calls() -> None:
    inner = ScriptedModel([ScriptedReply(text="", reasoning="thinking only")], context_window=1500)
    request = ChatRequest(messages=_history(30), response_format="json_object")
    with pytest.raises(StructuredOutputError):
        await _guard(inner).complete(request)


async def test_blank_reply_without_recovery_is_passed_through() -> None:
    inner = ScriptedModel([ScriptedReply(text="")])
    result = await _guard(inner).complete(ChatRequest(messages=_history(1)))
    assert result.text == "" and result.recoveries == 0


async def test_stream_recovers_before_the_first_event() -> None:
    inner = ScriptedModel(["Twenty days a year."], context_window=1500)
    events = [e async for e in _guard(inner).stream(ChatRequest(messages=_history(30)))]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Twenty days a year."
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.recoveries >= 1 and inner.streamed == [True] * inner.calls


async def test_stream_blank_after_recovery_yields_clarification_and_keeps_reasoning_apart() -> None:
    inner = ScriptedModel([ScriptedReply(text=" \n", reasoning="hmm")], context_window=1500)
    events = [e async for e in _guard(inner).stream(ChatRequest(messages=_history(30)))]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == CLARIFY_EN
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "hmm"


async def test_tool_pairs_survive_recovery_whole() -> None:
    messages: list[Message] = [SystemMessage("agent")]
    for i in range(12):
        messages.append(UserMessage(f"q{i} " + "text " * 150))
        messages.append(AssistantMessage("", (ToolCall(f"c{i}a", "search", "{}"), ToolCall(f"c{i}b", "search", "{}"))))
        messages.append(ToolMessage(f"c{i}a", "result " * 150))
        messages.append(ToolMessage(f"c{i}b", "result " * 150))
        messages.append(AssistantMessage(f"a{i}"))
    messages.append(UserMessage("final question"))
    inner = ScriptedModel(["done"], context_window=1200)
    await _guard(inner).complete(ChatRequest(messages=tuple(messages)))
    _assert_pairs_whole(inner.requests[-1].messages)


def _assert_pairs_whole(messages: Sequence[Message]) -> None:
    calls = {c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert calls == results, f"unpaired: calls {calls - results}, results {results - calls}"


async def test_cancellation_during_recovery_stops_further_calls() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    class Slow(ScriptedModel):
        async def complete(self, request: ChatRequest):  # type: ignore[no-untyped-def]
            self.requests.append(request)
            if len(self.requests) == 1:
                raise ContextExceeded("maximum context length")
            started.set()
            await release.wait()
            return await super().complete(request)

    inner = Slow(["late"])
    request = ChatRequest(messages=_history(20))
    before = copy.deepcopy(request)
    task = asyncio.create_task(_guard(inner).complete(request))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(inner.requests) == 2 and request == before


def test_sync_callers_can_drive_the_guard_with_asyncio_run() -> None:
    # The product is async; a synchronous caller (a script, a CLI command) runs one call to completion.
    inner = ScriptedModel(["ok"], context_window=1500)
    result = asyncio.run(_guard(inner).complete(ChatRequest(messages=_history(30))))
    assert result.text == "ok" and result.recoveries >= 1


async def test_function_model_sees_the_shrunk_messages_not_the_original() -> None:
    seen: list[int] = []

    def reply(messages: Sequence[Message], info: CallInfo) -> str:
        seen.append(len(messages))
        return "ok"

    inner = ScriptedModel(reply, context_window=1500)
    request = ChatRequest(messages=_history(30))
    await _guard(inner).complete(request)
    assert seen and seen[-1] < len(request.messages)


async def test_collect_stream_of_guarded_model_equals_complete() -> None:
    a = ScriptedModel(["same answer"], context_window=1500)
    b = ScriptedModel(["same answer"], context_window=1500)
    request = ChatRequest(messages=_history(30))
    streamed = await collect_stream(_guard(a).stream(request))
    completed = await _guard(b).complete(request)
    assert (streamed.text, streamed.recoveries) == (completed.text, completed.recoveries)


async def test_an_empty_message_list_is_refused_before_any_call() -> None:
    inner = ScriptedModel(["never"])
    with pytest.raises(InvalidInput, match="messages"):
        await _guard(inner).complete(ChatRequest(messages=()))
    with pytest.raises(InvalidInput, match="messages"):
        await collect_stream(_guard(inner).stream(ChatRequest(messages=())))
    assert inner.calls == 0
