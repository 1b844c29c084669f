"""Question words are answer-type slots, follow-up queries are made of real words, answers quote what answers.

Hand-made evidence modelled on the sample handbook's leave policy; the end-to-end check over the real knowledge
base is in tests/agent/test_agent_handbook_answers.py.
"""

from __future__ import annotations

import pytest

from kbagent.reasoning import AnswerSpec, Evidence, OfflineReasoner
from kbagent.reasoning.answer_slots import DAYS, MONEY, NUMBER, TIME, slot_satisfied
from kbagent.reasoning.entities import find_entities
from kbagent.reasoning.offline import compose_answer
from kbagent.reasoning.question import split_question
from kbagent.reasoning.terms import query_key, terms

QUESTION = "年假有几天？病假怎么请？"
HALF_DAY = Evidence(
    "33", "leave.md", "年假以半天为最小单位。当年未休完的年假可以结转到次年，逾期作废。", ("二、年假的使用与结转",)
)
SICK = Evidence(
    "35", "leave.md", "1. 病假：每年12天全薪病假；连续病假2天及以上须提供医院的诊断证明。", ("四、其他假期",)
)
TABLE = Evidence(
    "31",
    "leave.md",
    "年假天数按员工的累计工作年限确定：\n\n| 累计工作年限 | 公司年假（合计） |\n|---|---|\n| 不满1年 | 5天 |\n"
    "| 满1年不满10年 | 10天 |\n| 满10年不满20年 | 15天 |\n\n"
    "例如：累计工作年限12年、司龄6年的员工，年假为15天加2天司龄假，共17天。",
    ("一、年假天数",),
)
# jieba reads "15天加2天" as 15 / 天加 (a place name) / 2 / 天: the fragments the brief's user saw as queries.
FRAGMENTS = Evidence("40", "leave.md", "司龄每满3年增加1天：15天加2天，10天全额发放，2天及以上另计。", ("司龄假",))


# --- defect 1: question words are slots, not required words --------------------------------------------------


def test_question_words_are_not_required_terms_but_slots() -> None:
    annual, sick = split_question(QUESTION)
    assert [t.surface for t in annual.terms] == ["年假"] and annual.slot == DAYS
    assert [t.surface for t in sick.terms] == ["病假"] and sick.slot == ""
    english = split_question("How many days of annual leave do I get and what is the taxi limit per day?")
    assert [t.key for t in english[0].terms] == [t.key for t in terms("annual leave")] and english[0].slot == DAYS
    assert {t.surface for t in english[1].terms} == {"taxi", "day"} and english[1].slot == NUMBER
    assert split_question("报销金额是多少？")[0].slot == MONEY
    assert split_question("工资什么时候发放？")[0].slot == TIME
    assert split_question("When is salary paid?")[0].slot == TIME


@pytest.mark.parametrize(
    ("slot", "answers", "does_not"),
    [
        (DAYS, "满1年不满10年 | 10天", "年假以半天为最小单位，结转到次年3月31日"),
        (DAYS, "Employees get 15 days of annual leave.", "see the Leave Policy for how many days you get"),
        (MONEY, "up to 200 CNY per day", "taxis are allowed every day"),
        (MONEY, "住宿标准每晚650元", "住宿须选择协议酒店"),
        (TIME, "工资每月10日发放", "工资由财务部发放"),
        (TIME, "Salary is paid on the 10th of each month", "Salary is paid by the finance team"),
    ],
)
def test_a_slot_is_filled_only_by_a_value_of_its_type(slot: str, answers: str, does_not: str) -> None:
    assert slot_satisfied(slot, answers)
    assert not slot_satisfied(slot, does_not)


async def test_a_part_is_covered_only_where_its_words_and_its_value_meet() -> None:
    reasoner = OfflineReasoner()
    # "年假" and "半天" are there, but no number of days: the user's "年假有几天" is not answered yet.
    first = await reasoner.assess(QUESTION, [SICK, HALF_DAY], [QUESTION])
    assert first.sufficient is False
    assert first.missing == "年假有几天"
    assert first.next_queries[0] == "年假 天数"
    second = await reasoner.assess(QUESTION, [SICK, HALF_DAY, TABLE], [QUESTION, *first.next_queries])
    assert second.sufficient is True


async def test_english_how_many_days_needs_a_number_of_days_and_a_limit_needs_an_amount() -> None:
    question = "How many days of annual leave do I get and what is the taxi limit per day?"
    onboarding = Evidence(
        "1",
        "onboarding-guide.txt",
        "Annual leave accrues from your first day but can only be taken once you have been with Qinglan Tech for "
        "3 months; see the Leave Policy for how many days you get.",
        ("Probation",),
    )
    taxi = Evidence(
        "2", "travel-policy.html", "Taxis and ride-hailing at the destination: up to 200 CNY per day.", ("Transport",)
    )
    judged = await OfflineReasoner().assess(question, [onboarding, taxi], [question])
    assert judged.sufficient is False
    assert judged.missing == "How many days of annual leave do I get"
    leave = Evidence("3", "leave.md", "Employees get 15 days of annual leave a year.", ("Annual leave",))
    assert (await OfflineReasoner().assess(question, [onboarding, taxi, leave], [question])).sufficient


# --- defect 2: follow-up queries are made of meaningful words -------------------------------------------------


def test_jieba_fragments_next_to_numbers_are_not_entities() -> None:
    found = find_entities(FRAGMENTS.content + TABLE.content, quantities=False)
    assert not any(name in found for name in ["天加", "天全", "天及", "年不"])
    assert "北京市" in find_entities("张三在北京市工作满1年，可享受5天年假。", quantities=False)


async def test_follow_up_queries_are_meaningful_distinct_and_new() -> None:
    asked = [QUESTION]
    evidence = [SICK, HALF_DAY, FRAGMENTS]
    proposals: list[str] = []
    for _ in range(3):
        judged = await OfflineReasoner().assess(QUESTION, evidence, asked)
        assert judged.sufficient is False
        fresh = [q for q in judged.next_queries if query_key(q) not in {query_key(a) for a in asked}]
        proposals.extend(fresh)
        asked.extend(fresh[:2])
    assert proposals, "an uncovered part must lead to at least one new search"
    for query in proposals:
        words = query.split()
        assert all(len(w) >= 2 and not w[0].isdigit() and w not in {"天加", "天全", "天及", "几天"} for w in words)
        assert "年假" in words  # every search names what the uncovered part is about
    keys = [query_key(q) for q in proposals]
    assert len(keys) == len(set(keys)), proposals


# --- defect 3: the answer quotes what answers each part -------------------------------------------------------


def test_answer_quotes_the_table_rows_for_the_days_and_the_sick_leave_line() -> None:
    answer = compose_answer(QUESTION, [SICK, HALF_DAY, TABLE], AnswerSpec())
    lines = answer.splitlines()
    assert "未能确认" not in answer
    assert "| 满1年不满10年 | 10天 |" in answer and "|---|" not in answer
    assert any("病假：每年12天全薪病假" in line for line in lines)
    # The table (the days) is quoted before the half-day rule, which answers nothing about how many.
    table_at = next(i for i, line in enumerate(lines) if "年假天数按员工的累计工作年限确定" in line)
    assert lines[table_at].endswith("：") and lines[table_at + 1].strip().startswith("| 累计工作年限")
    half_day = [i for i, line in enumerate(lines) if "半天" in line]
    assert not half_day or half_day[0] > table_at
    table_line = next(i for i, line in enumerate(lines) if "满10年不满20年" in line)
    assert lines[table_line].endswith("[3]")  # the marker of the table paragraph


def test_only_the_parts_really_uncovered_are_listed_as_unconfirmed() -> None:
    question = "年假有几天？产假怎么请？"
    # The assessor's stale "missing" (from before the table was found) must not reappear in the answer.
    answer = compose_answer(question, [HALF_DAY, TABLE], AnswerSpec(missing=("年假有几天；产假怎么请",)))
    assert "10天" in answer
    unconfirmed = answer.split("知识库未能确认：")[1]
    assert "产假怎么请" in unconfirmed and "年假" not in unconfirmed
    half_only = compose_answer(QUESTION, [HALF_DAY, SICK], AnswerSpec())
    assert "年假有几天" in half_only.split("知识库未能确认：")[1]


def test_each_part_gets_its_own_answer_before_a_look_alike_with_more_numbers() -> None:
    other = Evidence(
        "36",
        "leave.md",
        "2. 婚假：依法登记结婚的员工享受婚假13天。\n3. 产假：女员工享受产假158天；\n"
        "4. 陪产假：男员工在配偶生育时享受陪产假15天，须在婴儿出生后60天内休完。",
        ("四、其他假期",),
    )
    lines = compose_answer("婚假和产假分别有多少天？", [other], AnswerSpec()).splitlines()
    maternity = next(i for i, line in enumerate(lines) if "产假158天" in line)
    paternity = [i for i, line in enumerate(lines) if "陪产假15天" in line]
    assert maternity <= 2 and (not paternity or paternity[0] > maternity)
