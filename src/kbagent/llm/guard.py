"""The context-window guard (seed 002): pre-trim where the window is known, recover from explicit overflow errors.

``GuardedModel`` wraps a ChatModel and is one. For each call:

1. Pre-trim: only when ``max_input_tokens`` is configured. No default window is ever invented; without one the first
   request goes out as the caller built it.
2. On ``ContextExceeded`` (the provider said so explicitly; see ``error_catalogue``): shrink a copy of the request
   and retry. At most four recoveries after the first call; each aims at ~35% of the failed request's estimate;
   the last one sends only the system prompt and the latest user message. No new recovery starts once
   ``recovery_seconds`` have passed since the first call (each call keeps its own HTTP timeout). The caller's
   request and history are never changed, and nothing outside this call (summaries, retrieval) is re-run.
3. The output budget is kept as asked: reasoning models given a smaller cap spend it thinking and return no text.
   Only a cap above half of a known window is lowered to half, so a prompt still has room.
4. After a recovery, a reply with no text (only reasoning, or blank) becomes a short request for clarification on
   the answer path, and ``StructuredOutputError`` on structured calls: never an invented JSON.

A stream can only be recovered before its first event reached the caller; the OpenAI client turns llama.cpp's empty
200 stream into the provider's explicit error first (see ``openai_client``), so that case is recoverable.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from kbagent.errors import ContextExceeded, InvalidInput, StructuredOutputError
from kbagent.llm.budget import estimate_request_tokens
from kbagent.llm.messages import (
    ChatRequest,
    ChatResult,
    ReasoningDelta,
    StreamEnd,
    StreamEvent,
    TextDelta,
    UserMessage,
)
from kbagent.llm.model import ChatModel, ModelLimits, close_model
from kbagent.llm.shrink import shrink_request
from kbagent.settings import LLMSettings

MAX_RECOVERIES = 4
RECOVERY_FACTOR = 0.35

CLARIFY_EN = (
    "The conversation and material were too long for the model, and even a shortened version produced no answer. "
    "Could you ask the question more briefly, or split it into smaller questions?"
)
CLARIFY_ZH = "对话和资料超出了模型能处理的长度，缩短后仍没有得到回答。能否把问题说得更简短一些，或者拆成几个小问题？"


def clarification_for(request: ChatRequest) -> str:
    """The clarification text, in Chinese when the latest user message is mostly Chinese."""
    last = next((m for m in reversed(request.messages) if isinstance(m, UserMessage)), None)
    text = last.content if last else ""
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return CLARIFY_ZH if cjk and cjk * 2 >= len(text.split()) else CLARIFY_EN


class GuardedModel:
    def __init__(
        self,
        inner: ChatModel,
        limits: ModelLimits,
        settings: LLMSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        self.limits = limits
        self.recovery_seconds = settings.recovery_seconds
        self._clock = clock

    @property
    def name(self) -> str:
        return self._inner.name

    async def aclose(self) -> None:
        await close_model(self._inner)

    # ------------------------------------------------------------------------------------------ planning

    def _output_tokens(self, request: ChatRequest) -> int:
        wanted = request.max_output_tokens or self.limits.max_output_tokens
        window = self.limits.max_input_tokens
        if window is not None and wanted > window // 2:
            return max(1, window // 2)
        return wanted

    def prepare(self, request: ChatRequest) -> ChatRequest:
        """The first request to send: the caller's own, pre-trimmed only if the window is known."""
        if not request.messages:
            raise InvalidInput("messages", "a model request needs at least one message; none were given")
        output = self._output_tokens(request)
        if output != (request.max_output_tokens or self.limits.max_output_tokens):
            request = replace(request, max_output_tokens=output)
        window = self.limits.max_input_tokens
        if window is None:
            return request
        budget = window - output
        if estimate_request_tokens(request) <= budget:
            return request
        return shrink_request(request, max(budget, 1))

    def _next_attempt(self, original: ChatRequest, failed: ChatRequest, recovery: int, started: float) -> ChatRequest:
        """The request for recovery number ``recovery`` (1-based) or the ContextExceeded that ends the call."""
        elapsed = self._clock() - started
        if elapsed >= self.recovery_seconds:
            raise ContextExceeded(
                f"the prompt is over the model's context window; no further shortening after {elapsed:.0f} s "
                f"(limit {self.recovery_seconds:g} s, {recovery - 1} recoveries tried)"
            )
        failed_estimate = estimate_request_tokens(failed)
        budget = max(1, int(failed_estimate * RECOVERY_FACTOR))
        base = replace(original, max_output_tokens=failed.max_output_tokens)
        last = recovery == MAX_RECOVERIES
        attempt = shrink_request(base, budget, minimal=last)
        if not last and estimate_request_tokens(attempt) >= failed_estimate:
            attempt = shrink_request(base, budget, minimal=True)
        if estimate_request_tokens(attempt) >= failed_estimate:
            raise ContextExceeded(
                "the prompt is over the model's context window even with only the system prompt and the latest "
                "question (cut to their minimum); shorten the question or the system prompt"
            )
        return attempt

    # ------------------------------------------------------------------------------------------ calls

    async def complete(self, request: ChatRequest) -> ChatResult:
        attempt = self.prepare(request)
        started = self._clock()
        recovery = 0
        while True:
            try:
                result = await self._inner.complete(attempt)
                break
            except ContextExceeded as exc:
                if recovery >= MAX_RECOVERIES:
                    raise _still_over(recovery, exc) from exc
                recovery += 1
                attempt = self._next_attempt(request, attempt, recovery, started)
        if recovery == 0:
            return result
        if not result.text.strip() and not result.tool_calls:
            if request.is_structured:
                raise StructuredOutputError(
                    f"after shortening the prompt {recovery} times to fit the context window, the model returned "
                    "no usable output for a structured call"
                )
            result = replace(result, text=clarification_for(request))
        return replace(result, recoveries=recovery)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        attempt = self.prepare(request)
        started = self._clock()
        recovery = 0
        while True:
            events = self._inner.stream(attempt)
            try:
                first = await anext(events)
            except StopAsyncIteration:
                return
            except ContextExceeded as exc:
                await _close(events)
                if recovery >= MAX_RECOVERIES:
                    raise _still_over(recovery, exc) from exc
                recovery += 1
                attempt = self._next_attempt(request, attempt, recovery, started)
                continue
            try:
                async for event in self._finish(request, first, events, recovery):
                    yield event
            finally:
                await _close(events)
            return

    async def _finish(
        self, request: ChatRequest, first: StreamEvent, events: AsyncIterator[StreamEvent], recovery: int
    ) -> AsyncIterator[StreamEvent]:
        """Pass events through; after a recovery, hold blank text until it is known whether any text comes."""
        held: list[TextDelta] = []
        seen_text = recovery == 0

        async def chained() -> AsyncIterator[StreamEvent]:
            yield first
            async for event in events:
                yield event

        async for event in chained():
            match event:
                case TextDelta() if not seen_text:
                    held.append(event)
                    if event.text.strip():
                        seen_text = True
                        for delta in held:
                            yield delta
                        held.clear()
                case ReasoningDelta() | TextDelta():
                    yield event
                case StreamEnd():
                    if not seen_text and not event.tool_calls:
                        if request.is_structured:
                            raise StructuredOutputError(
                                f"after shortening the prompt {recovery} times to fit the context window, the model "
                                "returned no usable output for a structured call"
                            )
                        yield TextDelta(clarification_for(request))
                    yield replace(event, recoveries=recovery)


async def _close(events: AsyncIterator[StreamEvent]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _still_over(recovery: int, exc: ContextExceeded) -> ContextExceeded:
    """The error once the shortened retries are used up (the same for plain and streamed calls)."""
    return ContextExceeded(
        f"the prompt is still over the context window after {recovery} shortened retries: {exc.message}"
    )
