"""Our own seams for memory tests: a scripted Summarizer and a fake answerer (the agent's place)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from kbagent.memory import ChatService, ConversationContext, TurnResult
from kbagent.settings import Settings, load_settings
from kbagent.storage import Database

# "code=ORBIT-42", "deadline=2026-12-20" (a trailing full stop is not part of the value)
FACT = re.compile(r"([A-Za-z_][\w-]*)=([\w\-]+(?:\.[\w\-]+)*)")


def fact_summary(previous: str, turns: Sequence[tuple[str, str]]) -> str:
    """Incremental and extractive: the facts of the previous summary, updated by facts stated in the new
    questions (a later value replaces an earlier one), plus a running count of merged turns."""
    facts: dict[str, str] = {}
    merged = 0
    if previous:
        head, _, count = previous.partition(" | merged=")
        merged = int(count or 0)
        for part in head.removeprefix("facts: ").split("; "):
            if "=" in part:
                key, value = part.split("=", 1)
                facts[key] = value
    for question, _answer in turns:
        for key, value in FACT.findall(question):
            facts[key] = value
    body = "; ".join(f"{k}={v}" for k, v in facts.items())
    return f"facts: {body} | merged={merged + len(turns)}"


def parse_facts(summary: str) -> dict[str, str]:
    head = summary.partition(" | merged=")[0].removeprefix("facts: ")
    return dict(part.split("=", 1) for part in head.split("; ") if "=" in part)


def merged_count(summary: str) -> int:
    return int(summary.partition(" | merged=")[2] or 0)


class ScriptedSummarizer:
    """A Summarizer driven by a queue of replies (str or an exception to raise), then by ``fn``."""

    prompt_tokens = 50

    def __init__(self, fn: Callable[[str, Sequence[tuple[str, str]]], str] = fact_summary) -> None:
        self.fn = fn
        self.queue: deque[str | BaseException] = deque()
        self.calls: list[tuple[str, list[tuple[str, str]]]] = []

    def enqueue(self, *items: str | BaseException) -> None:
        self.queue.extend(items)

    async def summarize(self, previous_summary: str, turns: Sequence[tuple[str, str]]) -> str:
        self.calls.append((previous_summary, list(turns)))
        if self.queue:
            item = self.queue.popleft()
            if isinstance(item, BaseException):
                raise item
            return item
        return self.fn(previous_summary, turns)


class FakeAnswerer:
    """Stands where the agent will: records the history it was given and answers from a function."""

    def __init__(self, answer: Callable[[str, ConversationContext], str] | None = None) -> None:
        self.answer = answer or (lambda q, ctx: f"Answer to: {q}")
        self.contexts: list[ConversationContext] = []

    async def __call__(self, question: str, context: ConversationContext) -> AsyncIterator[Any]:
        self.contexts.append(context)
        yield ("retrieving", question)
        yield TurnResult(
            answer=self.answer(question, context),
            citations=[{"paragraph_id": 1, "document": "handbook.md"}],
            agent_trace=[{"round": 1, "queries": [question], "sufficient": True}],
            agent_stop_reason="sufficient",
            usage={"prompt_tokens": 10, "completion_tokens": 5},
        )


def chat_settings(tmp_path: Path, url: str, **context: Any) -> Settings:
    return load_settings(
        config_path=None,
        environ={},
        overrides={"data_dir": str(tmp_path / "data"), "database": {"url": url}, "context": context},
    )


async def run_turn(service: ChatService, session_id: str, question: str, answerer: FakeAnswerer) -> list[Any]:
    return [event async for event in service.ask(session_id, question, answerer)]


def make_service(db: Database, settings: Settings, summarizer: ScriptedSummarizer) -> ChatService:
    return ChatService(db, settings, summarizer)
