"""The per-question retrieval loop: rounds of search and judgement until a named stop reason, then the answer.

Two strategies share retrievers, limits and trace. ``verify`` (seed 000, the default): rewrite the question,
search, dedupe by paragraph id, let the reasoner assess coverage, and search again for what is missing.
``decide`` (seed 001): each round the reasoner chooses SEARCH (with queries) or FINAL; the code alone enforces the
round cap, dedupe and the time limit. Either way the answer is written from the gathered evidence only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kbagent.agent.answering import answer_events
from kbagent.agent.deadline import Deadline
from kbagent.agent.events import (
    AgentEvent,
    AgentResult,
    AnswerDelta,
    CitationsEvent,
    DoneEvent,
    RoundTrace,
    StatusEvent,
    StopReason,
    Strategy,
)
from kbagent.agent.pool import EvidencePool, interleave
from kbagent.agent.retrieval import Retriever
from kbagent.errors import InvalidInput, ModelError
from kbagent.reasoning.base import Assessment, History, Reasoner
from kbagent.reasoning.evidence import Citation, Evidence
from kbagent.reasoning.offline import OfflineReasoner, rewrite_offline
from kbagent.reasoning.terms import query_key
from kbagent.reasoning.usage import metered
from kbagent.settings import AgentSettings
from kbagent.tokens import estimate_tokens

AnswerStyle = Literal["chat", "ask"]
# Under this many characters an /ask-style answer is judged too short and the model is asked to complete it once.
ASK_MIN_ANSWER_CHARS = 20


@dataclass
class Gathered:
    """The outcome of the retrieval loop alone (what ``Agent.gather`` returns; the evaluation scores it)."""

    question: str
    standalone: str
    strategy: Strategy
    evidence: list[Evidence] = field(default_factory=list)
    trace: list[RoundTrace] = field(default_factory=list)
    stop_reason: StopReason = "max_rounds"
    missing: str = ""
    sufficient: bool = False
    degraded: bool = False


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


class Agent:
    """Answers one question at a time over ``retrievers`` with ``reasoner``'s judgements.

    ``fallback`` (default: the offline reasoner) stands in when the reasoner's model fails mid-request; the
    result is then marked ``degraded``. An agent holds no per-question state and may serve concurrent questions.
    """

    def __init__(
        self,
        settings: AgentSettings,
        reasoner: Reasoner,
        retrievers: Sequence[Retriever],
        fallback: Reasoner | None = None,
    ) -> None:
        self.settings = settings
        self.reasoner = reasoner
        self.retrievers = list(retrievers)
        self.fallback = fallback if fallback is not None else OfflineReasoner()

    # -- public entry points ------------------------------------------------------------------------

    async def run(
        self,
        question: str,
        *,
        history: History | None = None,
        strategy: Strategy | None = None,
        max_rounds: int | None = None,
        top_k: int | None = None,
        style: AnswerStyle = "chat",
    ) -> AsyncIterator[AgentEvent]:
        """Events for one question: status (``retrieving``, ``assessed``, ``generating``), answer deltas,
        citations, and finally ``DoneEvent`` with the result.

        Raises ``InvalidInput`` for an empty question, one over ``agent.question_tokens``, or limits out of range;
        ``RunTimeout`` past ``agent.timeout_seconds``; retriever errors as they come.
        """
        started = time.perf_counter()
        question, rounds, k, chosen = self._check(question, strategy, max_rounds, top_k)
        deadline = Deadline(self.settings.timeout_seconds)
        with metered() as usage:
            gathered = Gathered(question=question, standalone=question, strategy=chosen)
            async for status in self._gather(gathered, history, rounds, k, deadline):
                yield status
            yield StatusEvent("generating", total_evidence=len(gathered.evidence))
            answer_parts: list[str] = []
            citations: tuple[Citation, ...] = ()
            async for event in answer_events(
                gathered,
                self.reasoner,
                self.fallback,
                history,
                deadline,
                max_chars=self.settings.max_answer_chars if style == "ask" else None,
                min_chars=ASK_MIN_ANSWER_CHARS if style == "ask" else 0,
                no_datasets=not self.retrievers,
            ):
                if isinstance(event, AnswerDelta):
                    answer_parts.append(event.text)
                elif isinstance(event, CitationsEvent):
                    citations = event.citations
                yield event
            result = AgentResult(
                question=question,
                standalone_question=gathered.standalone,
                answer="".join(answer_parts),
                citations=citations,
                trace=tuple(gathered.trace),
                stop_reason=gathered.stop_reason,
                rounds_used=len(gathered.trace),
                degraded=gathered.degraded,
                duration_ms=_ms(started),
                usage=usage.to_dict(),
                strategy=chosen,
                reasoner=self.reasoner.name,
                evidence=tuple(gathered.evidence),
            )
        yield DoneEvent(result)

    async def ask(self, question: str, **options: object) -> AgentResult:
        """``run`` drained: the final result only (options as for ``run``)."""
        async for event in self.run(question, **options):  # type: ignore[arg-type]
            if isinstance(event, DoneEvent):
                return event.result
        raise AssertionError("run() always ends with a DoneEvent")

    async def gather(
        self,
        question: str,
        *,
        history: History | None = None,
        strategy: Strategy | None = None,
        max_rounds: int | None = None,
        top_k: int | None = None,
    ) -> Gathered:
        """The retrieval loop without the answer (the multi-hop evaluation scores the evidence it gathers)."""
        question, rounds, k, chosen = self._check(question, strategy, max_rounds, top_k)
        gathered = Gathered(question=question, standalone=question, strategy=chosen)
        async for _ in self._gather(gathered, history, rounds, k, Deadline(self.settings.timeout_seconds)):
            pass
        return gathered

    # -- checks -------------------------------------------------------------------------------------

    def _check(
        self, question: str, strategy: Strategy | None, max_rounds: int | None, top_k: int | None
    ) -> tuple[str, int, int, Strategy]:
        question = (question or "").strip()
        if not question:
            raise InvalidInput("question", "must not be empty")
        tokens = estimate_tokens(question)
        limit = self.settings.question_tokens
        if tokens > limit:
            raise InvalidInput("question", f"is about {tokens} tokens; the limit is {limit} (agent.question_tokens)")
        rounds = self.settings.max_rounds if max_rounds is None else max_rounds
        if not 1 <= rounds <= 10:
            raise InvalidInput("max_rounds", f"must be between 1 and 10, got {rounds}")
        k = self.settings.top_k if top_k is None else top_k
        if not 1 <= k <= 50:
            raise InvalidInput("top_k", f"must be between 1 and 50, got {k}")
        chosen: Strategy = strategy or self.settings.strategy
        if chosen not in ("verify", "decide"):
            raise InvalidInput("strategy", f"must be verify or decide, got {chosen!r}")
        return question, rounds, k, chosen

    # -- the loop -----------------------------------------------------------------------------------

    async def _gather(
        self, state: Gathered, history: History | None, max_rounds: int, top_k: int, deadline: Deadline
    ) -> AsyncIterator[StatusEvent]:
        if not self.retrievers:
            state.stop_reason = "no_datasets"
            return
        state.standalone = await self._rewrite(state, history, deadline)
        pool = EvidencePool(self.settings.evidence_tokens, self.settings.max_paragraphs)
        if state.strategy == "decide":
            async for event in self._decide_rounds(state, pool, max_rounds, top_k, deadline):
                yield event
        else:
            async for event in self._verify_rounds(state, pool, max_rounds, top_k, deadline):
                yield event
        state.evidence = pool.ranked()
        if not state.evidence and not state.missing:
            state.missing = state.standalone

    async def _rewrite(self, state: Gathered, history: History | None, deadline: Deadline) -> str:
        if history is None or history.empty:
            return state.question
        try:
            rewritten = await deadline.run(self.reasoner.rewrite(state.question, history))
        except ModelError:
            state.degraded = True
            rewritten = rewrite_offline(state.question, history)
        return rewritten.strip() or state.question

    def _fresh(self, queries: Sequence[str], asked: Sequence[str]) -> list[str]:
        """Queries not run yet (same content terms = same query), at most ``agent.queries_per_round``."""
        seen = {query_key(q) for q in asked}
        fresh: list[str] = []
        for query in queries:
            key = query_key(query)
            if query.strip() and key not in seen:
                seen.add(key)
                fresh.append(query.strip())
        return fresh[: self.settings.queries_per_round]

    async def _search(self, queries: Sequence[str], top_k: int, deadline: Deadline) -> list[Evidence]:
        calls = [r.search(q, top_k) for q in queries for r in self.retrievers]
        results = await deadline.run(asyncio.gather(*calls))
        return interleave(results)

    async def _verify_rounds(
        self, state: Gathered, pool: EvidencePool, max_rounds: int, top_k: int, deadline: Deadline
    ) -> AsyncIterator[StatusEvent]:
        asked: list[str] = []
        queries = [state.standalone]
        for round_no in range(1, max_rounds + 1):
            fresh = self._fresh(queries, asked)
            yield StatusEvent("retrieving", round=round_no, queries=tuple(fresh))
            started = time.perf_counter()
            found = await self._search(fresh, top_k, deadline)
            retrieve_ms = _ms(started)
            asked.extend(fresh)
            new_ids = pool.add(found)
            if not new_ids:
                state.trace.append(
                    RoundTrace(round_no, tuple(fresh), (), len(pool), False, state.missing, (), retrieve_ms, 0.0)
                )
                state.stop_reason = "no_new_evidence"
                return
            started = time.perf_counter()
            try:
                assessment = await deadline.run(self.reasoner.assess(state.standalone, pool.items, asked))
            except ModelError as exc:
                state.trace.append(
                    RoundTrace(
                        round_no, tuple(fresh), tuple(new_ids), len(pool), False, "", (), retrieve_ms, _ms(started)
                    )
                )
                state.stop_reason = "assessment_error"
                yield StatusEvent("assessed", round=round_no, sufficient=False, message=f"assessment failed: {exc}")
                return
            assess_ms = _ms(started)
            state.sufficient, state.missing = assessment.sufficient, assessment.missing
            state.trace.append(
                RoundTrace(
                    round_no,
                    tuple(fresh),
                    tuple(new_ids),
                    len(pool),
                    assessment.sufficient,
                    assessment.missing,
                    assessment.next_queries,
                    retrieve_ms,
                    assess_ms,
                )
            )
            yield self._assessed(round_no, new_ids, pool, assessment)
            stop = self._stop_after(assessment, pool, round_no, max_rounds, asked)
            if stop is not None:
                state.stop_reason = stop
                return
            queries = list(assessment.next_queries)

    def _stop_after(
        self, assessment: Assessment, pool: EvidencePool, round_no: int, max_rounds: int, asked: Sequence[str]
    ) -> StopReason | None:
        if assessment.sufficient:
            return "sufficient"
        if pool.full:
            return "evidence_budget"
        if round_no >= max_rounds:
            return "max_rounds"
        if not any(q.strip() for q in assessment.next_queries):
            return "no_followup_query"
        if not self._fresh(assessment.next_queries, asked):
            return "duplicate_query"
        return None

    @staticmethod
    def _assessed(round_no: int, new_ids: Sequence[str], pool: EvidencePool, assessment: Assessment) -> StatusEvent:
        return StatusEvent(
            "assessed",
            round=round_no,
            new_evidence=len(new_ids),
            total_evidence=len(pool),
            sufficient=assessment.sufficient,
            missing=assessment.missing,
            queries=assessment.next_queries,
        )

    async def _decide_rounds(
        self, state: Gathered, pool: EvidencePool, max_rounds: int, top_k: int, deadline: Deadline
    ) -> AsyncIterator[StatusEvent]:
        asked: list[str] = []
        for round_no in range(1, max_rounds + 1):
            started = time.perf_counter()
            try:
                decision = await deadline.run(
                    self.reasoner.decide(state.standalone, pool.items, asked, round_no, max_rounds)
                )
            except ModelError as exc:
                state.stop_reason = "assessment_error"
                yield StatusEvent("assessed", round=round_no - 1 or None, sufficient=False, message=str(exc))
                return
            decide_ms = _ms(started)
            final = decision.action == "FINAL" and bool(pool.items)
            missing = "" if final else decision.reason
            if state.trace:
                # The decision judges the evidence of the round before it: record it there, as verify does.
                last = state.trace[-1]
                state.trace[-1] = dataclasses.replace(
                    last, sufficient=final, missing=missing, next_queries=decision.queries, assess_ms=decide_ms
                )
                yield self._assessed(
                    last.round, last.new_paragraph_ids, pool, Assessment(final, missing, decision.queries)
                )
            state.sufficient, state.missing = final, missing
            if decision.action == "FINAL":
                state.stop_reason = "sufficient" if pool.items else "no_followup_query"
                return
            if not any(q.strip() for q in decision.queries):
                state.stop_reason = "no_followup_query"
                return
            fresh = self._fresh(decision.queries, asked)
            if not fresh:
                state.stop_reason = "duplicate_query"
                return
            yield StatusEvent("retrieving", round=round_no, queries=tuple(fresh))
            started = time.perf_counter()
            found = await self._search(fresh, top_k, deadline)
            retrieve_ms = _ms(started)
            asked.extend(fresh)
            new_ids = pool.add(found)
            state.trace.append(
                RoundTrace(round_no, tuple(fresh), tuple(new_ids), len(pool), False, "", (), retrieve_ms, 0.0)
            )
            if not new_ids:
                state.stop_reason = "no_new_evidence"
                return
            if pool.full:
                state.stop_reason = "evidence_budget"
                return
        state.stop_reason = "max_rounds"
