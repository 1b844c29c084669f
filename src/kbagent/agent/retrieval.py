"""Where the agent's evidence comes from: a ``Retriever`` protocol and the knowledge-base retriever.

The agent only ever calls ``await retriever.search(query, top_k)``; the knowledge base is one retriever, an MCP
knowledge base can be another. Paragraph ids are strings so retrievers of different kinds dedupe side by side.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kbagent.reasoning.evidence import Citation, Evidence

if TYPE_CHECKING:
    from kbagent.knowledge.records import SearchHit
    from kbagent.knowledge.service import KnowledgeBase

__all__ = ["Citation", "Evidence", "KnowledgeRetriever", "Retriever", "evidence_from_hit"]


@runtime_checkable
class Retriever(Protocol):
    """A source of evidence. ``search`` returns at most ``top_k`` paragraphs, best first; it raises a
    ``KbagentError`` on failure (``NotFound`` for an unknown dataset, ``RunError`` subclasses for outages)."""

    @property
    def name(self) -> str:
        """Shown in citations as the evidence's source."""
        ...

    async def search(self, query: str, top_k: int) -> list[Evidence]: ...


def evidence_from_hit(hit: SearchHit) -> Evidence:
    return Evidence(
        paragraph_id=str(hit.paragraph_id),
        document=hit.document_name,
        content=hit.content,
        title_path=tuple(hit.title_path),
        page=hit.page,
        score=float(hit.score),
        source=f"kb:{hit.dataset}",
        document_id=str(hit.document_id),
        extra={"ocr": hit.ocr, "keyword_score": hit.keyword_score, "vector_score": hit.vector_score},
    )


class KnowledgeRetriever:
    """``KnowledgeBase.search`` over one or more datasets. The search is synchronous (database and numpy work),
    so it runs in a worker thread to keep the event loop free for streaming."""

    def __init__(self, kb: KnowledgeBase, datasets: Sequence[str], mode: str | None = None) -> None:
        self.kb = kb
        self.datasets = list(dict.fromkeys(datasets))
        self.mode = mode

    @property
    def name(self) -> str:
        return "kb:" + ",".join(self.datasets)

    async def search(self, query: str, top_k: int) -> list[Evidence]:
        # A question may be longer than a search query is allowed to be (agent.question_tokens vs
        # search.max_query_chars); its head carries the words that matter for the search.
        query = query[: self.kb.settings.search.max_query_chars]
        hits = await asyncio.to_thread(self.kb.search, self.datasets, query, top_k, self.mode)
        return [evidence_from_hit(hit) for hit in hits]
