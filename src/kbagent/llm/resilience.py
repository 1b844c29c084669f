"""Retries with backoff, a per-provider circuit breaker, and a limit on concurrent calls.

``ResilientModel`` wraps a ChatModel. Only ``ProviderBusy`` (rate limit, 408/409/425/5xx, timeout, connection
error) is retried; a context error, an auth or quota failure, or a rejected request is never retried here. A stream
is retried only while it has not yet yielded anything: once text reached the caller, a retry would repeat it.

The breaker opens after ``failures`` consecutive failed calls (each after its retries) and then fails fast with
``ProviderUnavailable`` until ``reset_seconds`` have passed; then exactly one probe call goes through (half-open).
Success closes it, failure opens it again, and a probe that is cancelled or ends without a verdict releases the
half-open slot so the next call can probe.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Literal

from kbagent.errors import ModelError, ProviderBusy, ProviderUnavailable
from kbagent.llm.messages import ChatRequest, ChatResult, StreamEvent
from kbagent.llm.model import ChatModel, close_model

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(self, name: str, failures: int, reset_seconds: float, clock: Clock = time.monotonic) -> None:
        self.name = name
        self.threshold = failures
        self.reset_seconds = reset_seconds
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._probe_in_flight = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.reset_seconds:
            return "half_open"
        return "open"

    def acquire(self) -> bool:
        """Let a call through or raise ProviderUnavailable. Returns True when this call is the half-open probe."""
        state = self.state
        if state == "closed":
            return False
        if state == "half_open" and not self._probe_in_flight:
            self._probe_in_flight = True
            return True
        assert self._opened_at is not None
        wait = max(0.0, self.reset_seconds - (self._clock() - self._opened_at))
        raise ProviderUnavailable(
            f"{self.name}: circuit open after {self._failures} consecutive failures; "
            + (f"next probe in {wait:.0f} s" if state == "open" else "a probe call is in progress")
        )

    def success(self, probe: bool) -> None:
        self._failures = 0
        self._opened_at = None
        if probe:
            self._probe_in_flight = False

    def failure(self, probe: bool) -> None:
        self._failures += 1
        if probe or self._failures >= self.threshold:
            self._opened_at = self._clock()
        if probe:
            self._probe_in_flight = False

    def release(self, probe: bool) -> None:
        """The call ended without telling anything about the provider (cancelled, or a caller's mistake)."""
        if probe:
            self._probe_in_flight = False


class ResilientModel:
    def __init__(
        self,
        inner: ChatModel,
        *,
        max_retries: int,
        max_concurrency: int,
        breaker: CircuitBreaker,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 8.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._inner = inner
        self.max_retries = max_retries
        self.breaker = breaker
        self._limit = asyncio.Semaphore(max_concurrency)
        self._backoff = backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._sleep = sleep

    @property
    def name(self) -> str:
        return self._inner.name

    async def aclose(self) -> None:
        await close_model(self._inner)

    def _delay(self, attempt: int) -> float:
        # Full jitter: spreads retries of many concurrent callers instead of hitting the provider in lockstep.
        return random.uniform(0, min(self._max_backoff, self._backoff * 2**attempt))

    @asynccontextmanager
    async def _guarded(self) -> AsyncIterator[None]:
        probe = self.breaker.acquire()
        verdict: Literal["success", "failure", "none"] = "none"
        try:
            async with self._limit:
                yield
            verdict = "success"
        except ProviderBusy:
            verdict = "failure"
            raise
        except ModelError:
            verdict = "success"  # the provider answered (context, auth, bad request): it is reachable
            raise
        finally:
            if verdict == "success":
                self.breaker.success(probe)
            elif verdict == "failure":
                self.breaker.failure(probe)
            else:
                self.breaker.release(probe)

    async def complete(self, request: ChatRequest) -> ChatResult:
        async with self._guarded():
            attempt = 0
            while True:
                try:
                    return await self._inner.complete(request)
                except ProviderBusy:
                    if attempt >= self.max_retries:
                        raise
                await self._sleep(self._delay(attempt))
                attempt += 1

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        async with self._guarded():
            attempt = 0
            while True:
                events = self._inner.stream(request)
                try:
                    first = await anext(events)
                except StopAsyncIteration:
                    return
                except ProviderBusy:
                    await _close(events)
                    if attempt >= self.max_retries:
                        raise
                    await self._sleep(self._delay(attempt))
                    attempt += 1
                    continue
                try:
                    yield first
                    async for event in events:
                        yield event
                finally:
                    await _close(events)
                return


async def _close(events: AsyncIterator[StreamEvent]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()
