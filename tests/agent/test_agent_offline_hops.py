"""The offline agent takes the second hop a question needs: from the film to its director, then the director."""

from __future__ import annotations

from agent_fakes import KeywordRetriever, agent_settings, ev

from kbagent.agent import Agent
from kbagent.reasoning import OfflineReasoner

FILMS = [
    ev("f1", "Titanic is a 1997 American film written and directed by James Cameron.", "films", ("Titanic",)),
    ev(
        "f2",
        "James Cameron (born August 16, 1954) is a Canadian film director known for science fiction.",
        "films",
        ("James Cameron",),
    ),
    ev("f3", "Avatar is a 2009 science fiction film; its producer Jon Landau was born in 1960.", "films", ("Avatar",)),
]

FILMS_ZH = [
    ev("z1", "《泰坦尼克号》是1997年上映的美国电影，导演为詹姆斯·卡梅隆。", "电影资料", ("泰坦尼克号",)),
    ev("z3", "《泰坦尼克号》在中国内地上映时票房超过9亿元。", "电影资料", ("泰坦尼克号",)),
    ev("z2", "詹姆斯·卡梅隆，加拿大电影导演，1954年8月16日出生于安大略省。", "电影资料", ("詹姆斯·卡梅隆",)),
]


async def test_the_director_question_searches_the_director_named_in_the_first_paragraph() -> None:
    retriever = KeywordRetriever(FILMS)
    agent = Agent(agent_settings(top_k=1), OfflineReasoner(), [retriever])
    gathered = await agent.gather("When was the director of Titanic born?")

    first, second = gathered.trace
    assert first.new_paragraph_ids == ("f1",) and not first.sufficient
    assert "When was the director born" in first.missing
    assert any("James Cameron" in query for query in second.queries)
    assert "f2" in second.new_paragraph_ids and second.sufficient
    assert gathered.stop_reason == "sufficient"
    assert [item.paragraph_id for item in gathered.evidence][:2] == ["f1", "f2"]


async def test_the_chinese_director_question_takes_the_second_hop() -> None:
    retriever = KeywordRetriever(FILMS_ZH)
    agent = Agent(agent_settings(top_k=2), OfflineReasoner(), [retriever])
    result = await agent.ask("《泰坦尼克号》的导演是哪国人？")

    assert result.rounds_used == 2 and result.stop_reason == "sufficient"
    assert any("詹姆斯·卡梅隆" in query for query in result.trace[1].queries)
    assert result.trace[0].new_paragraph_ids == ("z1", "z3")
    # The answer quotes the director's own paragraph, which says where he is from.
    assert "加拿大" in result.answer
