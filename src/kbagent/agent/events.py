"""Typed domain events the agent yields while it answers one question.

The CLI prints them, the API encodes them as SSE (``event: agent_status`` for ``StatusEvent``); nothing here knows
either. Progress never enters the answer text: only ``AnswerDelta`` carries answer text. The last event of a
successful run is ``DoneEvent`` with the whole result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kbagent.reasoning.evidence import Citation, Evidence

Phase = Literal["context", "compacting", "retrieving", "assessed", "generating"]
StopReason = Literal[
    "sufficient",
    "max_rounds",
    "duplicate_query",
    "no_new_evidence",
    "evidence_budget",
    "no_followup_query",
    "no_datasets",
    "assessment_error",
]
STOP_REASONS: tuple[str, ...] = StopReason.__args__  # type: ignore[attr-defined]
Strategy = Literal["verify", "decide"]


@dataclass(frozen=True, slots=True)
class StatusEvent:
    """Progress. ``retrieving`` carries the round's queries; ``assessed`` the judgement after it."""

    phase: Phase
    round: int | None = None
    queries: tuple[str, ...] = ()
    new_evidence: int | None = None
    total_evidence: int | None = None
    sufficient: bool | None = None
    missing: str = ""
    message: str = ""
    kind: Literal["status"] = field(default="status", init=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"phase": self.phase}
        if self.round is not None:
            data["round"] = self.round
        if self.queries:
            data["queries"] = list(self.queries)
        for name in ("new_evidence", "total_evidence", "sufficient"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.missing:
            data["missing"] = self.missing
        if self.message:
            data["message"] = self.message
        return data


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    text: str
    kind: Literal["answer_delta"] = field(default="answer_delta", init=False)


@dataclass(frozen=True, slots=True)
class CitationsEvent:
    """The paragraphs the answer's ``[n]`` markers point to, in marker order."""

    citations: tuple[Citation, ...]
    kind: Literal["citations"] = field(default="citations", init=False)


@dataclass(frozen=True, slots=True)
class RoundTrace:
    """One retrieval round, as the record detail stores it (never a model's private reasoning)."""

    round: int
    queries: tuple[str, ...]
    new_paragraph_ids: tuple[str, ...]
    total_evidence: int
    sufficient: bool
    missing: str
    next_queries: tuple[str, ...]
    retrieve_ms: float = 0.0
    assess_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "queries": list(self.queries),
            "new_paragraph_ids": list(self.new_paragraph_ids),
            "total_evidence": self.total_evidence,
            "sufficient": self.sufficient,
            "missing": self.missing,
            "next_queries": list(self.next_queries),
            "timings": {"retrieve_ms": round(self.retrieve_ms, 2), "assess_ms": round(self.assess_ms, 2)},
        }


@dataclass(frozen=True, slots=True)
class AgentResult:
    """Everything about one answered question. ``evidence`` is every paragraph gathered, in the order found
    (``[n]`` markers index it from 1); ``degraded`` means a model failed and the offline reasoner stood in."""

    question: str
    standalone_question: str
    answer: str
    citations: tuple[Citation, ...]
    trace: tuple[RoundTrace, ...]
    stop_reason: StopReason
    rounds_used: int
    degraded: bool
    duration_ms: float
    usage: dict[str, int]
    strategy: Strategy
    reasoner: str
    evidence: tuple[Evidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The record/CLI JSON shape: answer, citations, agent_trace, agent_stop_reason, rounds_used, degraded,
        duration_ms, usage."""
        return {
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "agent_trace": [r.to_dict() for r in self.trace],
            "agent_stop_reason": self.stop_reason,
            "rounds_used": self.rounds_used,
            "degraded": self.degraded,
            "duration_ms": round(self.duration_ms, 1),
            "usage": dict(self.usage),
        }


@dataclass(frozen=True, slots=True)
class DoneEvent:
    result: AgentResult
    kind: Literal["done"] = field(default="done", init=False)


AgentEvent = StatusEvent | AnswerDelta | CitationsEvent | DoneEvent
