"""The total time limit of one question (``agent.timeout_seconds``), applied to each await separately.

An ``asyncio.timeout`` around a whole async generator would fire inside whatever the consumer is doing between
events; instead every await the agent makes (a search, a judgement, the next answer chunk) runs against the same
absolute deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from kbagent.errors import RunTimeout

T = TypeVar("T")


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = asyncio.get_running_loop().time() + seconds

    def _expired(self) -> RunTimeout:
        return RunTimeout(
            f"agent.timeout_seconds: the question took longer than {self.seconds:g} s; "
            "raise the limit or ask a narrower question"
        )

    async def run(self, awaitable: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout_at(self.at):
                return await awaitable
        except TimeoutError as exc:
            raise self._expired() from exc

    async def iterate(self, stream: AsyncIterator[T]) -> AsyncIterator[T]:
        """``stream``'s items, each awaited against the deadline; the stream is closed on the way out."""
        try:
            while True:
                try:
                    async with asyncio.timeout_at(self.at):
                        item = await anext(stream)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    raise self._expired() from exc
                yield item
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
