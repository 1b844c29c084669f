"""The answer phase: stream the reasoner's answer, fall back to the offline reasoner if its model fails, cap the
length for the /ask style, and resolve the ``[n]`` markers into citations."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from kbagent.agent.deadline import Deadline
from kbagent.agent.events import AnswerDelta, CitationsEvent
from kbagent.errors import ModelError
from kbagent.reasoning.base import AnswerSpec, History, Reasoner
from kbagent.reasoning.evidence import Citation, Evidence, citation_for
from kbagent.reasoning.offline import text_for

if TYPE_CHECKING:
    from kbagent.agent.loop import Gathered

_MARKERS = re.compile(r"\[(\d+(?:\s*[,，、]\s*\d+)*)\]")


def cited(answer: str, evidence: Sequence[Evidence]) -> tuple[Citation, ...]:
    """Citations for the markers that occur in ``answer``, in marker order (a reader looks ``[3]`` up by its
    number, so the list reads [1], [2], [3] whatever order the answer cites them in); out-of-range markers
    are ignored (a model may invent ``[9]`` with five paragraphs; it points nowhere)."""
    out: list[Citation] = []
    used: set[int] = set()
    for match in _MARKERS.finditer(answer):
        for number in re.split(r"\s*[,，、]\s*", match.group(1)):
            marker = int(number)
            if 1 <= marker <= len(evidence) and marker not in used:
                used.add(marker)
                out.append(citation_for(marker, evidence[marker - 1]))
    return tuple(sorted(out, key=lambda citation: citation.marker))


class _Capped:
    """Cuts the streamed text at ``max_chars``; the model's call is closed once the cap is reached."""

    def __init__(self, max_chars: int | None) -> None:
        self.max_chars = max_chars
        self.parts: list[str] = []
        self.length = 0

    @property
    def full(self) -> bool:
        return self.max_chars is not None and self.length >= self.max_chars

    def take(self, text: str) -> str:
        if self.max_chars is not None:
            text = text[: max(self.max_chars - self.length, 0)]
        self.parts.append(text)
        self.length += len(text)
        return text

    @property
    def text(self) -> str:
        return "".join(self.parts)


async def answer_events(
    gathered: Gathered,
    reasoner: Reasoner,
    fallback: Reasoner,
    history: History | None,
    deadline: Deadline,
    *,
    max_chars: int | None,
    min_chars: int,
    no_datasets: bool,
) -> AsyncIterator[AnswerDelta | CitationsEvent]:
    question = gathered.standalone
    if no_datasets:
        yield AnswerDelta(text_for(gathered.question, "no_datasets"))
        yield CitationsEvent(())
        return
    missing = () if gathered.sufficient or not gathered.missing else (gathered.missing,)
    spec = AnswerSpec(max_chars=max_chars, min_chars=min_chars, missing=missing)
    evidence = gathered.evidence
    out = _Capped(max_chars)
    before_fallback = ""
    try:
        async for delta in deadline.iterate(reasoner.answer(question, evidence, spec, history)):
            piece = out.take(delta)
            if piece:
                yield AnswerDelta(piece)
            if out.full:
                break
    except ModelError:
        if reasoner is fallback:
            raise
        gathered.degraded = True
        notice = ("\n\n" if out.length else "") + text_for(gathered.question, "degraded") + "\n"
        before_fallback = out.text + notice
        out = _Capped(max_chars)  # the fallback gets the whole cap; what streamed before stays as it was
        yield AnswerDelta(notice)
        async for delta in deadline.iterate(fallback.answer(question, evidence, spec, history)):
            piece = out.take(delta)
            if piece:
                yield AnswerDelta(piece)
            if out.full:
                break
    yield CitationsEvent(cited(before_fallback + out.text, evidence))
