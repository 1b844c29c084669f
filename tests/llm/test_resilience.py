"""Retries, the circuit breaker (with its half-open probe) and the concurrency limit, with an injected clock."""

from __future__ import annotations

import asyncio

import pytest

from kbagent.errors import ContextExceeded, ProviderBusy, ProviderUnavailable
from kbagent.llm import ChatRequest, ChatResult, ScriptedModel, TextDelta, UserMessage, collect_stream
from kbagent.llm.resilience import CircuitBreaker, ResilientModel

REQUEST = ChatRequest(messages=(UserMessage("hi"),))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _no_sleep(seconds: float) -> None:
    return None


def _resilient(inner: ScriptedModel, clock: Clock, retries: int = 2, concurrency: int = 4) -> ResilientModel:
    breaker = CircuitBreaker("test", failures=3, reset_seconds=30, clock=clock)
    return ResilientModel(inner, max_retries=retries, max_concurrency=concurrency, breaker=breaker, sleep=_no_sleep)


async def test_transient_errors_are_retried_then_succeed() -> None:
    inner = ScriptedModel([ProviderBusy("503"), ProviderBusy("timeout"), "ok"])
    assert (await _resilient(inner, Clock()).complete(REQUEST)).text == "ok"
    assert inner.calls == 3


@pytest.mark.parametrize(
    "error", [ContextExceeded("maximum context length"), ProviderUnavailable("quota"), ProviderUnavailable("auth")]
)
async def test_context_auth_and_quota_errors_are_never_retried(error: Exception) -> None:
    inner = ScriptedModel([error, "never"])
    with pytest.raises(type(error)):
        await _resilient(inner, Clock()).complete(REQUEST)
    assert inner.calls == 1


async def test_stream_retried_only_before_its_first_event() -> None:
    inner = ScriptedModel([ProviderBusy("connection reset"), "streamed"])
    result = await collect_stream(_resilient(inner, Clock()).stream(REQUEST))
    assert result.text == "streamed" and inner.calls == 2


async def test_breaker_opens_fails_fast_then_lets_one_probe_in() -> None:
    clock = Clock()
    inner = ScriptedModel([ProviderBusy("down")] * 3 + ["recovered", "again"])
    model = _resilient(inner, clock, retries=0)
    for _ in range(3):
        with pytest.raises(ProviderBusy):
            await model.complete(REQUEST)
    assert model.breaker.state == "open"
    with pytest.raises(ProviderUnavailable, match="circuit open"):
        await model.complete(REQUEST)
    assert inner.calls == 3, "an open circuit does not call the provider"
    clock.now = 31
    assert model.breaker.state == "half_open"
    assert (await model.complete(REQUEST)).text == "recovered"
    assert model.breaker.state == "closed"
    assert (await model.complete(REQUEST)).text == "again"


async def test_failed_probe_opens_the_circuit_again() -> None:
    clock = Clock()
    inner = ScriptedModel([ProviderBusy("down")] * 4)
    model = _resilient(inner, clock, retries=0)
    for _ in range(3):
        with pytest.raises(ProviderBusy):
            await model.complete(REQUEST)
    clock.now = 31
    with pytest.raises(ProviderBusy):
        await model.complete(REQUEST)
    assert model.breaker.state == "open"


async def test_only_one_probe_at_a_time_and_a_cancelled_probe_releases_the_slot() -> None:
    clock = Clock()
    gate = asyncio.Event()
    entered = asyncio.Event()

    class Hanging(ScriptedModel):
        async def complete(self, request: ChatRequest) -> ChatResult:
            if self.calls >= 3 and not gate.is_set():
                self.requests.append(request)
                entered.set()
                await asyncio.Event().wait()  # hangs until cancelled
            return await super().complete(request)

    inner = Hanging([ProviderBusy("down")] * 3 + ["after probe"])
    model = _resilient(inner, clock, retries=0)
    for _ in range(3):
        with pytest.raises(ProviderBusy):
            await model.complete(REQUEST)
    clock.now = 31
    probe = asyncio.create_task(model.complete(REQUEST))
    await entered.wait()
    with pytest.raises(ProviderUnavailable, match="probe call is in progress"):
        await model.complete(REQUEST)
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    gate.set()
    assert model.breaker.state == "half_open"
    assert (await model.complete(REQUEST)).text == "after probe", "the cancelled probe released the half-open slot"
    assert model.breaker.state == "closed"


async def test_concurrency_limit_per_provider() -> None:
    running = 0
    peak = 0

    class Counting(ScriptedModel):
        async def complete(self, request: ChatRequest) -> ChatResult:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1
            return ChatResult(text="ok")

    model = _resilient(Counting(), Clock(), concurrency=2)
    await asyncio.gather(*(model.complete(REQUEST) for _ in range(8)))
    assert peak == 2


async def test_stream_holds_its_slot_until_closed() -> None:
    model = _resilient(ScriptedModel(["one two three"] * 2, stream_chunk_chars=3), Clock(), concurrency=1)
    events = model.stream(REQUEST)
    first = await anext(events)
    assert isinstance(first, TextDelta)
    second = asyncio.create_task(model.complete(REQUEST))
    await asyncio.sleep(0.01)
    assert not second.done(), "the slot is busy while the stream is open"
    await events.aclose()  # type: ignore[attr-defined]
    assert (await second).text == "one two three"
