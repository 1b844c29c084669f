"""Evidence: one retrieved paragraph as the agent and its judgements see it, whatever retriever found it.

Defined here (below ``agent``) because the reasoners read evidence and ``reasoning`` may not import ``agent``;
``kbagent.agent.retrieval`` re-exports it next to the ``Retriever`` protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbagent.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class Evidence:
    """A paragraph found by a retriever.

    ``paragraph_id`` is a string so paragraphs from other sources (an MCP knowledge base) fit beside ours; it is
    the key the agent dedupes on, so a retriever must keep it stable. ``source`` names the retriever
    (``kb:handbook``, ``mcp:ragflow``).
    """

    paragraph_id: str
    document: str
    content: str
    title_path: tuple[str, ...] = ()
    page: int | None = None
    score: float = 0.0
    source: str = ""
    document_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.content)

    def heading(self) -> str:
        """``document › title › subtitle``, for prompts and citations."""
        return " › ".join([self.document, *self.title_path]) if self.title_path else self.document


@dataclass(frozen=True, slots=True)
class Citation:
    """What an answer's marker ``[n]`` points to."""

    marker: int
    paragraph_id: str
    document: str
    title_path: tuple[str, ...]
    page: int | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "marker": self.marker,
            "paragraph_id": self.paragraph_id,
            "document": self.document,
            "title_path": list(self.title_path),
            "page": self.page,
            "source": self.source,
        }


def citation_for(marker: int, evidence: Evidence) -> Citation:
    return Citation(
        marker=marker,
        paragraph_id=evidence.paragraph_id,
        document=evidence.document,
        title_path=evidence.title_path,
        page=evidence.page,
        source=evidence.source,
    )


def numbered(evidence: Sequence[Evidence]) -> list[tuple[int, Evidence]]:
    """Evidence with its citation marker: ``[1]`` is the first paragraph given to the answerer."""
    return list(enumerate(evidence, start=1))
