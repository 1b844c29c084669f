"""The offline reasoner on questions that ask about something they only describe (a second hop is needed)."""

from __future__ import annotations

import pytest

from kbagent.reasoning import Evidence, OfflineReasoner
from kbagent.reasoning.entities import find_entities, sentences
from kbagent.reasoning.question import split_question
from kbagent.reasoning.terms import TermIndex, terms


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "Which country is the director of Titanic from?",
            ["the director of Titanic", "Which country is the director from"],
        ),
        ("When was the founder of Acme Robotics born?", ["the founder of Acme Robotics", "When was the founder born"]),
        (
            "Blue Train is an album by a saxophonist born in what city?",
            ["Blue Train is an album by a saxophonist", "a saxophonist born in what city"],
        ),
        ("《泰坦尼克号》的导演是哪国人？", ["《泰坦尼克号》的导演", "导演是哪国人"]),
        ("华为公司的创始人是哪一年出生的？", ["华为公司的创始人", "创始人是哪一年出生的"]),
        # Asking nothing beyond the description: one question about one thing.
        ("What is the capital of France?", ["What is the capital of France"]),
        ("What are the opening hours of the Shanghai office?", ["What are the opening hours of the Shanghai office"]),
        ("张三的经理是谁", ["张三的经理是谁"]),
        ("年假的天数是多少？", ["年假的天数是多少"]),
    ],
)
def test_a_described_entity_is_a_hop_of_its_own(question: str, parts: list[str]) -> None:
    split = split_question(question)
    assert [p.text for p in split] == parts
    if len(parts) > 1:
        # The part asking about the described entity is the bridge: its answer lies in another paragraph.
        assert [p.bridge for p in split] == [False, True]


def test_names_keep_initials_and_drop_leading_years_and_pairs() -> None:
    text = "It is the third album by singer-songwriter M. Ward. From 1945-1949 Dick Humbert played end."
    names = find_entities(text, quantities=False)
    assert "M. Ward" in names and "Dick Humbert" in names
    assert len(sentences(text)) == 2
    assert find_entities("Both Never Cry Wolf and Big Hero 6 were released", quantities=False) == [
        "Never Cry Wolf",
        "Big Hero 6",
    ]
    assert find_entities("Procter and Gamble sells soap", quantities=False) == ["Procter and Gamble"]


def test_agent_nouns_match_their_verbs_and_dashes_match_hyphens() -> None:
    index = TermIndex("Titanic is a 1997 film directed by James Cameron; he worked on it 1995–1997.")
    assert index.coverage(terms("director of Titanic")) == 1.0
    assert index.has(terms("1995-1997")[0])
    assert not TermIndex("a glass of water").has(terms("wat")[0])


TITANIC = Evidence(
    "1", "Titanic", "Titanic is a 1997 American film written and directed by James Cameron.", ("Titanic",)
)
CAMERON = Evidence(
    "2",
    "James Cameron",
    "James Cameron (born August 16, 1954) is a Canadian film director. He was born in Kapuskasing, Ontario.",
    ("James Cameron",),
)
# A paragraph that mentions a film and a birth date but is not about the director the Titanic paragraph names.
OTHER = Evidence(
    "3",
    "Avatar",
    "Avatar premiered in London. Its producer Jon Landau was born on July 23, 1960; the film's director was praised.",
    ("Avatar",),
)


async def test_the_director_question_takes_a_second_hop_on_the_named_director() -> None:
    question = "When was the director of Titanic born?"
    reasoner = OfflineReasoner()
    first = await reasoner.assess(question, [TITANIC], [question])
    assert first.sufficient is False
    assert "James Cameron" in first.next_queries[0]
    # A birth date in a paragraph that is not about James Cameron does not answer the question.
    assert (await reasoner.assess(question, [TITANIC, OTHER], [question])).sufficient is False
    second = await reasoner.assess(question, [TITANIC, OTHER, CAMERON], [question, first.next_queries[0]])
    assert second.sufficient is True


async def test_the_chinese_director_question_takes_a_second_hop() -> None:
    question = "电影《霸王别姬》的导演出生在哪一年？"
    film = Evidence("1", "霸王别姬", "《霸王别姬》是1993年上映的电影，导演为陈凯歌，张国荣主演。", ("霸王别姬",))
    director = Evidence("2", "陈凯歌", "陈凯歌，中国电影导演，1952年8月12日出生于北京。", ("陈凯歌",))
    reasoner = OfflineReasoner()
    first = await reasoner.assess(question, [film], [question])
    assert first.sufficient is False
    assert any("陈凯歌" in query for query in first.next_queries)
    assert (await reasoner.assess(question, [film, director], [question, *first.next_queries])).sufficient


async def test_a_bridge_is_the_name_the_description_points_at_not_any_name_nearby() -> None:
    question = "Kate Ramsay is a character from an Australian soap opera created by whom?"
    kate = Evidence(
        "1",
        "Kate Ramsay",
        'Kate Ramsay is a fictional character from the Australian soap opera "Neighbours", played by Ashleigh Brewer.',
        ("Kate Ramsay",),
    )
    # About the actress: it has the words of the description, but it is not the soap opera.
    actress = Evidence(
        "2",
        "Ashleigh Brewer",
        "Ashleigh Brewer is an Australian actress, known for a soap opera created by Reg Watson.",
        ("Ashleigh Brewer",),
    )
    show = Evidence(
        "3", "Neighbours", "Neighbours is an Australian television soap opera created by Reg Watson.", ("Neighbours",)
    )
    reasoner = OfflineReasoner()
    first = await reasoner.assess(question, [kate, actress], [question])
    assert first.sufficient is False
    assert first.missing == "an Australian soap opera created by whom"
    assert first.next_queries[0].startswith("Neighbours")
    assert (await reasoner.assess(question, [kate, actress, show], [question, first.next_queries[0]])).sufficient


async def test_a_comparison_needs_a_paragraph_about_each_thing_compared() -> None:
    question = "Were Iain Banks and Irwin Shaw both novelists?"
    shaw = Evidence(
        "1",
        "Irwin Shaw",
        "Irwin Shaw was an American playwright, screenwriter and novelist.",
        ("Irwin Shaw",),
    )
    # Mentions Iain Banks and the word, but is about a novel, not about him.
    novel = Evidence("2", "The Wasp Factory", "The Wasp Factory is the first novel by Iain Banks, a Scottish novelist.")
    reasoner = OfflineReasoner()
    first = await reasoner.assess(question, [shaw, novel], [question])
    assert first.sufficient is False
    assert any("Iain Banks" in query for query in first.next_queries)
    banks = Evidence(
        "3",
        "Iain Banks",
        "Iain Banks was a Scottish novelist who also wrote science fiction.",
        ("Iain Banks",),
    )
    assert (await reasoner.assess(question, [shaw, novel, banks], [question, *first.next_queries])).sufficient


async def test_a_chinese_comparison_needs_a_paragraph_about_each_person() -> None:
    question = "张三和李四的工龄分别是多少年？"
    zhang = Evidence("1", "员工档案", "张三于2015年入职，工龄10年，曾与李四共事。", ("张三",))
    reasoner = OfflineReasoner()
    first = await reasoner.assess(question, [zhang], [question])
    assert first.sufficient is False
    assert any("李四" in query for query in first.next_queries)
    li = Evidence("2", "员工档案", "李四于2019年入职，工龄6年。", ("李四",))
    assert (await reasoner.assess(question, [zhang, li], [question, *first.next_queries])).sufficient


def test_a_possessive_role_is_a_hop_too() -> None:
    parts = split_question("When was Acme's founder born?")
    assert [p.text for p in parts] == ["Acme's founder", "When was the founder born"]
    assert parts[1].bridge and parts[1].slot == "time"
    assert find_entities("Which region is Corey Taylor's city of birth in?", quantities=False) == ["Corey Taylor"]


async def test_each_bridge_name_is_tried_before_one_is_repeated_for_another_part() -> None:
    question = "In which region is Corey Taylor's city of birth located?"
    label = Evidence(
        "1",
        "Great Big Mouth Records",
        "Great Big Mouth Records is a label founded by Corey Taylor, who was born in Des Moines and grew up in "
        "Waterloo.",
        ("Great Big Mouth Records",),
    )
    judged = await OfflineReasoner().assess(question, [label], [question])
    bridged = [q for q in judged.next_queries if q.startswith(("Des Moines", "Waterloo"))]
    # Both candidate cities are searched before Des Moines comes back with the words of the other part.
    assert [q.split()[0] for q in bridged[:2]] == ["Des", "Waterloo"]
