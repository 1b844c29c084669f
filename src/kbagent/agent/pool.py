"""The evidence gathered for one question: deduplicated by paragraph id, within the token and paragraph budgets."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kbagent.reasoning.evidence import Evidence


class EvidencePool:
    """Paragraphs in the order they were found. ``full`` turns true once a paragraph had to be left out for the
    budget (``agent.evidence_tokens``) or the paragraph cap (``agent.max_paragraphs``) is reached: another round
    could add nothing, so the agent stops with ``evidence_budget``."""

    def __init__(self, max_tokens: int, max_paragraphs: int) -> None:
        self.max_tokens = max_tokens
        self.max_paragraphs = max_paragraphs
        self.items: list[Evidence] = []
        self.tokens = 0
        self.full = False
        self._seen: set[str] = set()
        self._rounds: list[list[Evidence]] = []

    def __len__(self) -> int:
        return len(self.items)

    def add(self, found: Iterable[Evidence]) -> list[str]:
        """Add what is new and fits (one call per round); returns the ids of the paragraphs added."""
        added: list[str] = []
        this_round: list[Evidence] = []
        self._rounds.append(this_round)
        for item in found:
            if item.paragraph_id in self._seen:
                continue
            if len(self.items) >= self.max_paragraphs or self.tokens + item.tokens > self.max_tokens:
                self.full = True
                continue
            self._seen.add(item.paragraph_id)
            self.items.append(item)
            this_round.append(item)
            self.tokens += item.tokens
            added.append(item.paragraph_id)
        if len(self.items) >= self.max_paragraphs:
            self.full = True
        return added

    def ranked(self, lead: int = 2) -> list[Evidence]:
        """The evidence best first, for the answer and for scoring: the first ``lead`` paragraphs of the first
        round (the question's own best matches), then round by round interleaved by position, so the best
        paragraph a follow-up search found is not buried under the first round's weak tail."""
        if not self._rounds:
            return []
        first = self._rounds[0]
        rest = [first[lead:], *self._rounds[1:]]
        return first[:lead] + interleave(rest)


def interleave(results: Sequence[Sequence[Evidence]]) -> list[Evidence]:
    """Merge ranked lists rank by rank (first of each, then second of each, ...), keeping each id once, so no
    single query's tail crowds out another query's best paragraphs when the budget is tight."""
    merged: list[Evidence] = []
    seen: set[str] = set()
    depth = max((len(r) for r in results), default=0)
    for rank in range(depth):
        for ranked in results:
            if rank < len(ranked) and ranked[rank].paragraph_id not in seen:
                seen.add(ranked[rank].paragraph_id)
                merged.append(ranked[rank])
    return merged
