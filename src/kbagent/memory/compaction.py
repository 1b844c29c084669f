"""Persistent compaction: a summary of older records plus recent raw turns (seeds 000 and 002).

The rules, in the order they are checked when a session's history is read:

* summary + uncompacted records at or under ``context.recent_tokens``: every uncompacted record is carried raw and
  no summarizer is called, however many turns that is;
* over it, but the last summary was itself still over the threshold (``wait_after`` is set) and the records since
  then add less than ``growth_fraction`` of the threshold: no summarizer; the summary plus the newest turns that fit
  are carried (seed 002's fix for "summarizes every turn");
* otherwise the oldest records, all but the newest ones that fit ``keep_fraction`` of the threshold (less if the
  summary would leave under ``growth_fraction`` of the threshold free; at least the latest turn), are merged into
  the summary in batches. Each batch is one summarizer call (previous summary + new turns; prompt and previous
  summary counted before the turns get their budget), and each result is written with its watermark and the next
  revision in one transaction. A failure, an empty summary or a cut-off output stops
  there: the old summary, watermark and raw records stay, and the next read tries again.

A merged record is never summarized again: the watermark only moves forward, after its summary is stored, and
a restart reads the persisted watermark.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from kbagent.errors import KbagentError
from kbagent.memory.history import ContextInfo, ConversationContext, Turn, fit_recent
from kbagent.memory.summary_input import batch_for_summary, summary_copy
from kbagent.memory.trimming import Weighted, trim_turns
from kbagent.settings import ContextSettings
from kbagent.storage import Database
from kbagent.storage import chat as store
from kbagent.tokens import estimate_tokens

log = logging.getLogger(__name__)

# Assumed cost of a summarizer's own instructions when it does not say (attribute ``prompt_tokens``).
DEFAULT_PROMPT_TOKENS = 600


@runtime_checkable
class Summarizer(Protocol):
    """Merges (question, answer) pairs into a new summary, given the previous one.

    Raises a ``kbagent.errors.ModelError`` subclass on failure (``IncompleteOutput`` for a cut-off reply).
    An implementation may expose ``prompt_tokens: int``, the cost of its instructions, so batches leave room
    for them."""

    async def summarize(self, previous_summary: str, turns: Sequence[tuple[str, str]]) -> str: ...


@dataclass(frozen=True)
class ContextStatus:
    """Progress while history is read: ``context`` when reading it, ``compacting`` right before each real
    summarizer call (never otherwise)."""

    phase: Literal["context", "compacting"]
    session_id: str
    detail: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CompactionPolicy:
    threshold: int
    keep_fraction: float = 0.5
    growth_fraction: float = 0.25
    batch_turns: int = 100
    input_tokens: int = 8000

    @classmethod
    def from_settings(cls, settings: ContextSettings) -> CompactionPolicy:
        return cls(
            threshold=settings.recent_tokens,
            keep_fraction=settings.keep_fraction,
            growth_fraction=settings.growth_fraction,
            batch_turns=settings.summary_batch_turns,
            input_tokens=settings.summary_input_tokens,
        )

    @property
    def keep_tokens(self) -> int:
        return int(self.threshold * self.keep_fraction)

    def decide(self, summary: str, turns: list[Turn], wait_after: int | None) -> Literal["raw", "wait", "compact"]:
        total = estimate_tokens(summary) + sum(t.tokens for t in turns)
        if total <= self.threshold:
            return "raw"
        if wait_after is not None:
            growth = sum(t.tokens for t in turns if t.id > wait_after)
            if growth < self.growth_fraction * self.threshold:
                return "wait"
        return "compact"

    def split(self, turns: list[Turn], summary: str = "") -> tuple[list[Turn], list[Turn]]:
        """(to merge, to keep raw): the newest turns within the keep budget are kept, at least the latest one.

        The keep budget is ``keep_tokens``, but never more than leaves ``growth_fraction`` of the threshold free
        beside the current summary: otherwise a large summary plus kept turns would sit just under the threshold
        and every new turn would trigger another summary that frees one turn's worth."""
        headroom = int(self.threshold * (1 - self.growth_fraction)) - estimate_tokens(summary)
        kept = fit_recent(turns, max(0, min(self.keep_tokens, headroom)))
        return turns[: len(turns) - len(kept)], turns[len(turns) - len(kept) :]

    def recent_budget(self, summary: str) -> int:
        """Tokens left for raw turns beside ``summary``; never below ``keep_tokens``, so an over-long summary
        does not starve the latest turns (the model's context guard cuts what is still too long)."""
        return max(self.threshold - estimate_tokens(summary), self.keep_tokens)


class Compactor:
    """Reads a session's history and compacts it when the rules above say so."""

    def __init__(
        self,
        db: Database,
        summarizer: Summarizer,
        policy: CompactionPolicy,
        *,
        scorers: Sequence[Weighted] | None = None,
    ) -> None:
        self.db = db
        self.summarizer = summarizer
        self.policy = policy
        # Used when uncompacted turns must be cut without a new summary (waiting for growth, or the summary
        # failed) and the question is known: keep what matters to it and the pinned key events, not just the newest.
        self.scorers = scorers

    @property
    def prompt_tokens(self) -> int:
        value = getattr(self.summarizer, "prompt_tokens", DEFAULT_PROMPT_TOKENS)
        return value if isinstance(value, int) and value >= 0 else DEFAULT_PROMPT_TOKENS

    async def prepare(
        self, session_id: str, *, force: bool = False, question: str | None = None
    ) -> AsyncIterator[ContextStatus | ConversationContext]:
        """Yield ``ContextStatus`` events, then exactly one ``ConversationContext`` (the last item).

        ``force`` is manual compaction: merge every uncompacted record but the latest, whatever the threshold.
        ``question``, when given, lets smart trimming choose the raw turns carried when no new summary makes room."""
        yield ContextStatus("context", session_id)
        with self.db.read() as s:
            row = store.get_context(s, session_id)
            summary, watermark, revision = row.summary, row.watermark, row.revision
            compacted, wait_after = row.compacted_rounds, row.wait_after
            turns = [Turn(i, q, a) for i, q, a in store.record_turns(s, session_id, after_id=watermark)]

        decision = "compact" if force else self.policy.decide(summary, turns, wait_after)
        calls = 0
        error: str | None = None
        if decision == "compact":
            to_merge, _kept = ([*turns[:-1]], turns[-1:]) if force else self.policy.split(turns, summary)
            while to_merge:
                room = self.policy.input_tokens - self.prompt_tokens - estimate_tokens(summary)
                # An over-long previous summary must not shut every turn out: give turns a floor.
                room = max(room, self.policy.input_tokens // 4)
                batch = batch_for_summary(to_merge, budget=room, max_turns=self.policy.batch_turns)
                copies = [c for c in (summary_copy(t) for t in batch) if c is not None]
                new_summary = summary
                if copies:
                    calls += 1
                    yield ContextStatus(
                        "compacting", session_id, {"turns": len(batch), "remaining": len(to_merge) - len(batch)}
                    )
                    try:
                        new_summary = (await self.summarizer.summarize(summary, copies)).strip()
                    except (KbagentError, TimeoutError) as exc:
                        error = f"{type(exc).__name__}: {exc}"
                        log.warning("summary of session %s failed; keeping the old one: %s", session_id, error)
                        break
                    if not new_summary:
                        error = "IncompleteOutput: the summarizer returned an empty summary"
                        log.warning("summary of session %s was empty; keeping the old one", session_id)
                        break
                merged_to = batch[-1].id
                remaining = [t for t in turns if t.id > merged_to]
                over = estimate_tokens(new_summary) + sum(t.tokens for t in remaining) > self.policy.threshold
                with self.db.write() as s:
                    revision = store.store_summary(
                        s,
                        session_id,
                        summary=new_summary,
                        watermark=merged_to,
                        expected_revision=revision,
                        merged_rounds=len(batch),
                        wait_after=turns[-1].id if over else None,
                    )
                summary, watermark, compacted = new_summary, merged_to, compacted + len(batch)
                to_merge = to_merge[len(batch) :]

        pending = [t for t in turns if t.id > watermark]
        budget = self.policy.recent_budget(summary)
        if decision == "raw" or sum(t.tokens for t in pending) <= budget:
            recent = pending
        elif question and (decision == "wait" or error is not None):
            recent = trim_turns(pending, question, budget_tokens=budget, scorers=self.scorers)
        else:
            recent = fit_recent(pending, budget)
        yield ConversationContext(
            summary=summary,
            recent_turns=tuple(recent),
            context_info=ContextInfo(compacted_rounds=compacted, recent_rounds=len(recent), revision=revision),
            summarizer_calls=calls,
            compaction_error=error,
        )

    async def context(
        self, session_id: str, *, force: bool = False, question: str | None = None
    ) -> ConversationContext:
        """``prepare`` without the events."""
        result: ConversationContext | None = None
        async for item in self.prepare(session_id, force=force, question=question):
            if isinstance(item, ConversationContext):
                result = item
        assert result is not None
        return result
