"""The answer phase: offline answers, the degraded fallback, the /ask length cap and the too-short retry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from agent_fakes import HANDBOOK, KeywordRetriever, agent_settings, ev

from kbagent.agent import Agent, History
from kbagent.agent.answering import cited
from kbagent.errors import ModelError, ProviderUnavailable
from kbagent.llm import ScriptedModel
from kbagent.llm.messages import ChatRequest, ChatResult, StreamEnd, StreamEvent, TextDelta, UserMessage
from kbagent.reasoning import LLMReasoner, OfflineReasoner

SUFFICIENT = json.dumps({"sufficient": True, "missing": "", "next_queries": []})


def offline_agent(**limits: object) -> tuple[Agent, KeywordRetriever]:
    retriever = KeywordRetriever(HANDBOOK)
    return Agent(agent_settings(**limits), OfflineReasoner(), [retriever]), retriever


async def test_offline_compound_chinese_question_gets_a_second_round_for_its_missing_part() -> None:
    agent, retriever = offline_agent(top_k=1)
    result = await agent.ask("年假和病假分别有多少天？")

    assert result.rounds_used == 2 and result.stop_reason == "sufficient"
    assert retriever.queries[0] == "年假和病假分别有多少天？"
    assert "病假" in retriever.queries[1]
    assert result.trace[0].missing == "病假有多少天"
    assert "- 正式员工每年享有带薪年假10天，工作满10年的员工享有15天。 [1]" in result.answer
    assert "- 员工因病就医可申请病假，每年带薪病假为12天，需提供医院证明。 [2]" in result.answer
    assert {c.paragraph_id for c in result.citations} == {"p1", "p2"}
    assert result.degraded is False and result.usage["calls"] == 0


async def test_offline_english_question() -> None:
    agent, _ = offline_agent(top_k=1)
    result = await agent.ask("Who must approve business travel, and which class is used for flights?")

    assert result.stop_reason == "sufficient"
    assert result.answer.startswith("From the knowledge base:")
    assert "department head" in result.answer and "Economy class" in result.answer
    assert {c.paragraph_id for c in result.citations} == {"p4", "p5"}
    assert all(c.document == "Travel Policy" for c in result.citations)


async def test_missing_information_is_stated_in_the_answer() -> None:
    agent, _ = offline_agent()
    result = await agent.ask("年假有多少天？产假有多少天？")

    assert result.stop_reason != "sufficient"
    assert "10天" in result.answer
    assert "知识库未能确认：" in result.answer and "产假" in result.answer.split("知识库未能确认：")[1]

    english, _ = offline_agent()
    result = await english.ask("Who approves business travel and what is the parking allowance?")
    assert "Not confirmed by the knowledge base:" in result.answer
    assert "parking allowance" in result.answer.split("Not confirmed by the knowledge base:")[1]


async def test_llm_answer_is_told_what_the_search_could_not_find() -> None:
    insufficient = json.dumps({"sufficient": False, "missing": "产假天数", "next_queries": []})
    model = ScriptedModel([insufficient, "年假10天 [1]；产假天数知识库未能确认。"])
    result = await Agent(agent_settings(), LLMReasoner(model), [KeywordRetriever(HANDBOOK)]).ask("年假和产假多少天")
    prompt = model.requests[-1].messages[-1].content
    assert "could not find: 产假天数" in prompt
    assert "[1] 员工手册 › 休假制度 › 年假" in prompt
    assert result.stop_reason == "no_followup_query"


@dataclass
class BreaksMidStream:
    """Streams a few words of an answer, then fails like a dropped provider connection."""

    name: str = "breaks"

    async def complete(self, request: ChatRequest) -> ChatResult:
        return ChatResult(text=SUFFICIENT)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        yield TextDelta("正式员工年假")
        raise ModelError("connection reset by the provider")


async def test_model_failure_mid_answer_gives_a_degraded_offline_answer() -> None:
    agent = Agent(agent_settings(), LLMReasoner(BreaksMidStream()), [KeywordRetriever(HANDBOOK)])
    result = await agent.ask("年假有多少天")

    assert result.degraded is True
    assert result.answer.startswith("正式员工年假\n\n（语言模型暂时不可用")
    assert "正式员工每年享有带薪年假10天" in result.answer and "[1]" in result.answer
    assert [c.paragraph_id for c in result.citations] == ["p1"]


async def test_model_down_from_the_start_still_answers_offline() -> None:
    down = ProviderUnavailable("circuit open for provider qwen")
    model = ScriptedModel([down, down, down])
    history = History(turns=(("年假有多少天？", "10天"),))
    result = await Agent(agent_settings(), LLMReasoner(model), [KeywordRetriever(HANDBOOK)]).ask(
        "那病假呢？", history=history
    )
    # rewrite failed -> offline rewrite; assessment failed -> assessment_error; answer failed -> offline answer
    assert result.standalone_question == "病假有多少天"
    assert result.stop_reason == "assessment_error"
    assert result.degraded is True
    assert "12天" in result.answer


async def test_ask_style_caps_the_answer_length() -> None:
    long_answer = "年假为10天 [1]。" + "补充说明。" * 400
    model = ScriptedModel([SUFFICIENT, long_answer])
    agent = Agent(agent_settings(max_answer_chars=100), LLMReasoner(model), [KeywordRetriever(HANDBOOK)])
    result = await agent.ask("年假有多少天", style="ask")
    assert len(result.answer) == 100 and result.answer.startswith("年假为10天 [1]。")
    assert "100 characters" in model.requests[-1].messages[0].content

    chat = await Agent(
        agent_settings(max_answer_chars=100),
        LLMReasoner(ScriptedModel([SUFFICIENT, long_answer])),
        [KeywordRetriever(HANDBOOK)],
    ).ask("年假有多少天")
    assert chat.answer == long_answer  # the cap is for the /ask style only


async def test_too_short_answer_is_completed_once() -> None:
    model = ScriptedModel([SUFFICIENT, "10天", "。正式员工每年带薪年假10天 [1]，满10年15天 [1]。"])
    agent = Agent(agent_settings(), LLMReasoner(model), [KeywordRetriever(HANDBOOK)])
    result = await agent.ask("年假有多少天", style="ask")

    assert result.answer == "10天。正式员工每年带薪年假10天 [1]，满10年15天 [1]。"
    follow_up = model.requests[-1].messages
    assert follow_up[-2].content == "10天" and isinstance(follow_up[-1], UserMessage)
    assert "too short" in follow_up[-1].content
    assert model.calls == 3  # once, never more, even if the completion were short too


async def test_rewrite_uses_history_and_history_is_marked_as_data() -> None:
    model = ScriptedModel(['{"query": "病假有多少天"}', SUFFICIENT, "病假12天 [1]。"])
    retriever = KeywordRetriever(HANDBOOK)
    history = History(summary="用户在了解休假制度。", turns=(("年假有多少天？", "正式员工10天。"),))
    result = await Agent(agent_settings(), LLMReasoner(model), [retriever]).ask("那病假呢？", history=history)

    assert retriever.queries[0] == "病假有多少天"
    assert result.standalone_question == "病假有多少天"
    rewrite_messages = model.requests[0].messages
    assert "<history>" in rewrite_messages[1].content and "年假有多少天" in rewrite_messages[1].content
    assert "never instructions" in rewrite_messages[0].content
    assert model.requests[0].thinking is False


async def test_stream_end_usage_is_counted() -> None:
    @dataclass
    class Counting:
        name: str = "counting"

        async def complete(self, request: ChatRequest) -> ChatResult:
            from kbagent.llm import Usage

            return ChatResult(text=SUFFICIENT, usage=Usage(100, 10))

        async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
            from kbagent.llm import Usage

            yield TextDelta("年假10天 [1]。")
            yield StreamEnd("stop", Usage(200, 20))

    result = await Agent(agent_settings(), LLMReasoner(Counting()), [KeywordRetriever(HANDBOOK)]).ask("年假有多少天")
    assert result.usage == {"input_tokens": 300, "output_tokens": 30, "calls": 2}


async def test_a_consumer_may_stop_reading_mid_answer() -> None:
    import gc

    model = ScriptedModel([SUFFICIENT, "年假10天 [1]。" * 50])
    agent = Agent(agent_settings(), LLMReasoner(model), [KeywordRetriever(HANDBOOK)])
    stream = agent.run("年假有多少天")
    async for event in stream:
        if event.kind == "answer_delta":
            break  # a client that disconnects after the first chunk
    await stream.aclose()
    del stream
    gc.collect()
    # the agent keeps working for the next question
    assert (await Agent(agent_settings(), OfflineReasoner(), [KeywordRetriever(HANDBOOK)]).ask("年假")).answer


def test_citations_are_listed_by_marker_whatever_order_the_answer_uses() -> None:
    evidence = [ev(f"p{n}", f"Paragraph {n}.", document=f"doc{n}") for n in range(1, 6)]
    citations = cited("Leave is 15 days [3]. Apply in OA [5][1]; see also [3, 2] and [9].", evidence)
    assert [c.marker for c in citations] == [1, 2, 3, 5]  # [9] points past the evidence: dropped
    assert [c.document for c in citations] == ["doc1", "doc2", "doc3", "doc5"]
