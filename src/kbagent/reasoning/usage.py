"""Token usage of the model calls made for one question, gathered without threading a counter through every call.

The agent opens a meter around a question (``metered()``); the LLM reasoner adds each call's usage to the meter
of the current context. Tasks started inside inherit the meter, so concurrent calls add to the same one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class UsageMeter:
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0

    def add(self, input_tokens: int, output_tokens: int) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.calls += 1

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "calls": self.calls}


_current: ContextVar[UsageMeter | None] = ContextVar("kbagent_usage_meter", default=None)


@contextmanager
def metered() -> Iterator[UsageMeter]:
    meter = UsageMeter()
    token = _current.set(meter)
    try:
        yield meter
    finally:
        try:
            _current.reset(token)
        except ValueError:
            # An abandoned answer stream is finalized by the event loop in another context; the meter there
            # was never set, so there is nothing to undo.
            pass


def record_usage(input_tokens: int, output_tokens: int) -> None:
    """Add one call's usage to the current meter (no meter open: nothing to do)."""
    meter = _current.get()
    if meter is not None:
        meter.add(input_tokens, output_tokens)
