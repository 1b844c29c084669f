"""Which parts of a question the evidence covers, and what to search next: the offline assessor's core.

A part counts as covered when every one of its content terms occurs somewhere in the evidence and one paragraph
holds at least three quarters of them (so scattered words from unrelated paragraphs do not pass). The check is
lexical, never knowledge: the offline reasoner cannot know an answer it has not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbagent.reasoning.entities import bridge_entities
from kbagent.reasoning.evidence import Evidence
from kbagent.reasoning.question import QuestionPart
from kbagent.reasoning.terms import Term, TermIndex, query_key, terms

BEST_PARAGRAPH_SHARE = 0.75


@dataclass(frozen=True, slots=True)
class PartCoverage:
    part: QuestionPart
    best_share: float
    best_index: int | None
    missing_terms: tuple[Term, ...]

    @property
    def covered(self) -> bool:
        return not self.missing_terms and self.best_share >= BEST_PARAGRAPH_SHARE


def evidence_text(item: Evidence) -> str:
    """What a paragraph says, with its document and headings (titles often carry the entity a hop needs)."""
    return f"{item.heading()}\n{item.content}"


def index_evidence(evidence: Sequence[Evidence]) -> list[TermIndex]:
    return [TermIndex(evidence_text(item)) for item in evidence]


def cover(parts: Sequence[QuestionPart], indexes: Sequence[TermIndex]) -> list[PartCoverage]:
    out: list[PartCoverage] = []
    for part in parts:
        best_share, best_index = 0.0, None
        for i, index in enumerate(indexes):
            share = index.coverage(part.terms)
            if share > best_share:
                best_share, best_index = share, i
        missing = tuple(t for t in part.terms if not any(index.has(t) for index in indexes))
        out.append(PartCoverage(part, best_share, best_index, missing))
    return out


def _query(words: Sequence[str], extra: str = "") -> str:
    text = " ".join(w for w in words if w)
    return f"{text} {extra}".strip() if extra else text


def follow_up_queries(
    question: str, coverage: Sequence[PartCoverage], evidence: Sequence[Evidence], asked: Sequence[str], limit: int = 4
) -> list[str]:
    """Searches aimed at the uncovered parts: each part's terms, joined with a bridge entity found in the evidence.

    Queries already asked (same content terms) go last, so a caller that drops them still sees whether every
    proposal was a repeat (the agent's ``duplicate_query``).
    """
    uncovered = [c for c in coverage if not c.covered]
    if not uncovered:
        return []
    # Entities come from the paragraphs that matched the question best: the ones covering its other parts first.
    order: list[int] = []
    for c in coverage:
        if c.covered and c.best_index is not None and c.best_index not in order:
            order.append(c.best_index)
    for c in uncovered:
        if c.best_index is not None and c.best_index not in order:
            order.append(c.best_index)
    order.extend(i for i in range(min(len(evidence), 5)) if i not in order)
    passages = [evidence_text(evidence[i]) for i in order]
    entities = bridge_entities(question, passages, limit=3)

    candidates: list[str] = []
    for rank in range(max(1, len(entities))):
        for c in uncovered:
            words = [t.surface for t in c.part.terms]
            entity = entities[rank] if rank < len(entities) else ""
            if entity and all(t.key in {w.key for w in c.part.terms} for t in terms(entity)):
                continue
            candidates.append(_query(words, entity))
    for c in uncovered:
        candidates.append(_query([t.surface for t in c.part.terms]))

    asked_keys = {query_key(q) for q in asked} | {query_key(question)}
    fresh: list[str] = []
    repeats: list[str] = []
    seen: set[str] = set()
    for candidate in candidates:
        key = query_key(candidate)
        if not candidate or key in seen:
            continue
        seen.add(key)
        (repeats if key in asked_keys else fresh).append(candidate)
    return (fresh + repeats)[:limit] if fresh else repeats[:limit]
