"""End to end over the real KnowledgeBase (SQLite and PostgreSQL) with the sample handbook: offline agent, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.agent import Agent, KnowledgeRetriever
from kbagent.cli.app import app
from kbagent.knowledge.service import KnowledgeBase
from kbagent.reasoning import OfflineReasoner
from kbagent.settings import Settings


async def test_offline_agent_answers_from_the_handbook_with_real_paragraph_ids(
    handbook: KnowledgeBase, settings: Settings
) -> None:
    agent = Agent(settings.agent, OfflineReasoner(), [KnowledgeRetriever(handbook, ["handbook"], mode="keyword")])
    result = await agent.ask("年假和病假分别有多少天？")

    assert result.citations, result.answer
    assert "12天全薪病假" in result.answer and "满1年不满10年" in result.answer
    cited = handbook.paragraphs([int(c.paragraph_id) for c in result.citations])
    assert len(cited) == len(result.citations)
    by_marker = {c.marker: c for c in result.citations}
    for record, citation in zip(cited, result.citations, strict=True):
        assert citation.document == "leave-policy-zh.md"
        # what the answer quotes next to [n] is in paragraph n
        quoted = [line for line in result.answer.splitlines() if line.endswith(f"[{citation.marker}]")]
        assert quoted and any(line[2:].split(" [")[0].strip()[:8] in record.content for line in quoted)
    assert set(by_marker) <= set(range(1, len(result.evidence) + 1))


async def test_unknown_parts_are_listed_against_the_real_knowledge_base(
    handbook: KnowledgeBase, settings: Settings
) -> None:
    agent = Agent(settings.agent, OfflineReasoner(), [KnowledgeRetriever(handbook, ["handbook"], mode="keyword")])
    result = await agent.ask("What is the hotel limit in Shanghai and what is the parking allowance?")
    assert "650 CNY" in result.answer
    assert "Not confirmed by the knowledge base:" in result.answer
    assert "parking allowance" in result.answer.split("Not confirmed by the knowledge base:")[1]
    assert result.rounds_used >= 2  # the uncovered part was searched for again before giving up


def test_ask_cli_offline_json_and_stream(
    handbook: KnowledgeBase, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no kbagent.toml of the developer's
    env = {
        "KBAGENT_DATABASE_URL": settings.database.url,
        "KBAGENT_DATA_DIR": str(tmp_path / "data"),
        "KBAGENT_SEARCH_MODE": "keyword",
        "KBAGENT_LLM_PROVIDER": "",
    }
    runner = CliRunner()
    done = runner.invoke(app, ["ask", "病假有多少天？", "--dataset", "handbook", "--json"], env=env)
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert set(data) >= {"answer", "citations", "agent_trace", "agent_stop_reason", "rounds_used", "degraded"}
    assert "12天" in data["answer"] and data["degraded"] is False
    assert data["citations"][0]["document"] == "leave-policy-zh.md"

    streamed = runner.invoke(app, ["ask", "病假有多少天？", "-d", "handbook", "--trace"], env=env)
    assert streamed.exit_code == 0, streamed.output
    assert "12天" in streamed.stdout and "leave-policy-zh.md" in streamed.stdout
    assert "round 1: searching" in streamed.stderr and "stop: " in streamed.stderr
    assert "round 1" not in streamed.stdout  # progress never mixes into the answer

    missing = runner.invoke(app, ["ask", "x", "-d", "nope"], env=env)
    assert missing.exit_code != 0 and "nope" in str(missing.exception)


async def test_a_long_question_is_searched_by_its_head(handbook: KnowledgeBase, settings: Settings) -> None:
    question = (
        "病假有多少天？" + "请详细说明相关规定和例外情况。" * 150
    )  # within agent.question_tokens, over 2000 chars
    assert len(question) > settings.search.max_query_chars
    agent = Agent(settings.agent, OfflineReasoner(), [KnowledgeRetriever(handbook, ["handbook"], mode="keyword")])
    result = await agent.ask(question, max_rounds=1)
    assert result.rounds_used == 1 and result.trace[0].new_paragraph_ids
