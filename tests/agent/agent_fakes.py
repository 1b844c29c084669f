"""Fakes at our own seams for the agent tests: a keyword Retriever over a few paragraphs, a slow model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbagent.llm.messages import ChatRequest, ChatResult, StreamEvent, TextDelta
from kbagent.reasoning.evidence import Evidence
from kbagent.reasoning.terms import TermIndex, terms
from kbagent.settings import AgentSettings


def ev(pid: str, content: str, document: str = "员工手册", title: tuple[str, ...] = ()) -> Evidence:
    return Evidence(paragraph_id=pid, document=document, content=content, title_path=title, source="fake")


@dataclass
class KeywordRetriever:
    """Ranks its paragraphs by how many of the query's content terms they contain (ties: corpus order).
    ``fixed`` maps a query to exactly what to return instead. ``queries`` records every search."""

    corpus: Sequence[Evidence] = ()
    fixed: dict[str, list[Evidence]] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)
    name: str = "fake"

    async def search(self, query: str, top_k: int) -> list[Evidence]:
        self.queries.append(query)
        if query in self.fixed:
            return self.fixed[query][:top_k]
        wanted = terms(query)
        scored = []
        for position, item in enumerate(self.corpus):
            index = TermIndex(f"{item.heading()} {item.content}")
            hits = sum(1 for t in wanted if index.has(t))
            if hits:
                scored.append((-hits, position, item))
        scored.sort(key=lambda row: (row[0], row[1]))
        return [item for _, _, item in scored[:top_k]]


@dataclass
class FnRetriever:
    """Returns ``fn(query, call_number)``: for loops that must keep finding new paragraphs."""

    fn: Callable[[str, int], list[Evidence]]
    queries: list[str] = field(default_factory=list)
    name: str = "fn"

    async def search(self, query: str, top_k: int) -> list[Evidence]:
        self.queries.append(query)
        return self.fn(query, len(self.queries))[:top_k]


@dataclass
class SlowModel:
    """A ChatModel that takes ``delay`` seconds per call (for the time limit)."""

    delay: float
    reply: str = '{"action": "SEARCH", "queries": ["x"], "answer": "", "reason": "more"}'
    name: str = "slow"

    async def complete(self, request: ChatRequest) -> ChatResult:
        await asyncio.sleep(self.delay)
        return ChatResult(text=self.reply)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(self.delay)
        yield TextDelta(self.reply)


def agent_settings(**values: Any) -> AgentSettings:
    return AgentSettings(**values)


HANDBOOK = [
    ev("p1", "正式员工每年享有带薪年假10天，工作满10年的员工享有15天。", title=("休假制度", "年假")),
    ev("p2", "员工因病就医可申请病假，每年带薪病假为12天，需提供医院证明。", title=("休假制度", "病假")),
    ev("p3", "出差住宿标准为一线城市每晚600元，其他城市每晚400元。", document="差旅制度", title=("住宿",)),
    ev("p4", "Business travel must be approved by the department head at least 3 days in advance.", "Travel Policy"),
    ev(
        "p5",
        "Economy class is the default for flights under 6 hours; longer flights may use premium economy.",
        "Travel Policy",
        ("Flights",),
    ),
]
