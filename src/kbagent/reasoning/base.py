"""The agent's judgements behind one interface, whatever makes them (a language model or the offline reasoner).

Every method gets the evidence gathered so far and returns a judgement; none of them searches. A judgement that
cannot be made raises a ``ModelError`` subclass (``StructuredOutputError`` when a reply is malformed): callers
decide what a failure means (the agent stops with ``assessment_error``; memory keeps its old summary). No method
ever returns an error message in place of a result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from kbagent.reasoning.evidence import Evidence


@dataclass(frozen=True, slots=True)
class History:
    """Conversation context handed to the agent: a persisted summary and recent (question, answer) turns.

    History is data about what was said; it never stands in for this turn's evidence.
    """

    summary: str = ""
    turns: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.turns, tuple):
            object.__setattr__(self, "turns", tuple((q, a) for q, a in self.turns))

    @property
    def empty(self) -> bool:
        return not self.summary.strip() and not self.turns


@dataclass(frozen=True, slots=True)
class Assessment:
    """Does the evidence cover every part of the question? ``missing`` says what is still uncovered (empty when
    sufficient); ``next_queries`` are searches aimed at that gap."""

    sufficient: bool
    missing: str = ""
    next_queries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.next_queries, tuple):
            object.__setattr__(self, "next_queries", tuple(self.next_queries))


@dataclass(frozen=True, slots=True)
class Decision:
    """Seed 001's per-round choice: search again with ``queries`` or stop (``FINAL``). ``answer`` is the model's
    draft conclusion when it stops; the agent still writes the cited answer from the evidence."""

    action: Literal["SEARCH", "FINAL"]
    queries: tuple[str, ...] = ()
    answer: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.queries, tuple):
            object.__setattr__(self, "queries", tuple(self.queries))


@dataclass(frozen=True, slots=True)
class AnswerSpec:
    """How the answer should look. ``max_chars`` caps its length (the /ask style); ``min_chars`` is the length
    under which an LLM answer is judged too short and completed once. ``missing`` lists what the retrieval loop
    could not find, so the answer can say so."""

    max_chars: int | None = None
    min_chars: int = 0
    missing: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class Reasoner(Protocol):
    """Rewrite, assess, decide, answer, summarize. Implementations: ``LLMReasoner`` and ``OfflineReasoner``."""

    @property
    def name(self) -> str:
        """``offline`` or the model's name, for records."""
        ...

    async def rewrite(self, question: str, history: History | None) -> str:
        """A standalone search query for ``question``, resolving references to the conversation in ``history``."""
        ...

    async def assess(self, question: str, evidence: Sequence[Evidence], asked: Sequence[str]) -> Assessment:
        """Judge ``evidence`` against ``question``. Empty evidence is never sufficient. ``asked`` are the queries
        already run; next queries should differ from them."""
        ...

    async def decide(
        self, question: str, evidence: Sequence[Evidence], asked: Sequence[str], round_no: int, max_rounds: int
    ) -> Decision:
        """Seed 001's mode: search again (with which queries) or stop."""
        ...

    def answer(
        self, question: str, evidence: Sequence[Evidence], spec: AnswerSpec, history: History | None = None
    ) -> AsyncIterator[str]:
        """Stream the answer (text deltas) from ``evidence`` only, in the question's language, citing paragraphs
        as ``[n]`` where n is the 1-based position in ``evidence``, and saying which parts stay unconfirmed."""
        ...

    async def summarize(self, previous_summary: str, turns: Sequence[tuple[str, str]]) -> str:
        """Merge (question, answer) ``turns`` into ``previous_summary``: keep goals, constraints, entities, numbers,
        dates, corrections and open questions. Raises a ``ModelError`` subclass on failure, never returns an
        error text."""
        ...
