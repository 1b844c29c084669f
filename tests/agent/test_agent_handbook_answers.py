"""The offline agent over the real KnowledgeBase and the sample handbook: the questions a user asked and what they
should see (the days of annual leave answered from the table, no jieba fragments searched, only real gaps listed)."""

from __future__ import annotations

from kbagent.agent import Agent, KnowledgeRetriever
from kbagent.knowledge.service import KnowledgeBase
from kbagent.reasoning import OfflineReasoner
from kbagent.reasoning.terms import query_key
from kbagent.settings import Settings


def _agent(handbook: KnowledgeBase, settings: Settings) -> Agent:
    return Agent(settings.agent, OfflineReasoner(), [KnowledgeRetriever(handbook, ["handbook"], mode="keyword")])


def _searched(result_trace: tuple[object, ...]) -> list[str]:
    return [query for round_ in result_trace for query in round_.queries]  # type: ignore[attr-defined]


async def test_how_many_days_of_annual_leave_is_answered_from_the_table(
    handbook: KnowledgeBase, settings: Settings
) -> None:
    result = await _agent(handbook, settings).ask("年假有几天？病假怎么请？")

    assert "知识库未能确认" not in result.answer, result.answer
    assert result.stop_reason == "sufficient"
    # The rows with the days, under the sentence that says what they are, cited to the table's paragraph.
    assert "| 满1年不满10年 | 5天 | 10天 |" in result.answer
    table_marker = next(c.marker for c in result.citations if c.title_path[-1] == "一、年假天数")
    rows = [line for line in result.answer.splitlines() if "| 满20年 |" in line]
    assert rows and rows[0].endswith(f"[{table_marker}]")
    assert "病假：每年12天全薪病假" in result.answer
    for query in _searched(result.trace):
        assert not any(fragment in query for fragment in ("天加", "天全", "天及"))


async def test_english_question_quotes_the_taxi_limit_and_lists_only_the_unanswered_part(
    handbook: KnowledgeBase, settings: Settings
) -> None:
    result = await _agent(handbook, settings).ask(
        "How many days of annual leave do I get and what is the taxi limit per day?"
    )
    assert "up to 200 CNY per day" in result.answer
    gaps = result.answer.split("Not confirmed by the knowledge base:")[1]
    # The English documents only point to the (Chinese) leave policy: the number of days stays unconfirmed ...
    assert "How many days of annual leave" in gaps
    # ... while the taxi limit, which they state, is not listed as a gap.
    assert "taxi" not in gaps
    searched = _searched(result.trace)
    keys = [query_key(q) for q in searched]
    assert len(keys) == len(set(keys)), searched  # no search is run twice
    assert not any(q.split()[0] in {"CNY", "get"} for q in searched[1:]), searched
