"""Seed 000's list for the loop, with the LLM reasoner over a scripted model and a fake retriever of ours."""

from __future__ import annotations

import json

import pytest
from agent_fakes import HANDBOOK, FnRetriever, KeywordRetriever, SlowModel, agent_settings, ev

from kbagent.agent import Agent, DoneEvent, StatusEvent
from kbagent.errors import InvalidInput, ProviderUnavailable, RunTimeout
from kbagent.llm import ScriptedModel
from kbagent.reasoning import LLMReasoner

ANSWER = "正式员工年假10天 [1]。"


def assess(sufficient: bool, missing: str = "", next_queries: list[str] | None = None) -> str:
    return json.dumps({"sufficient": sufficient, "missing": missing, "next_queries": next_queries or []})


def decide(action: str, queries: list[str] | None = None, reason: str = "") -> str:
    return json.dumps({"action": action, "queries": queries or [], "answer": "", "reason": reason})


def make_agent(model: ScriptedModel, retriever: object, **limits: object) -> Agent:
    return Agent(agent_settings(**limits), LLMReasoner(model), [retriever])  # type: ignore[list-item]


async def test_insufficient_evidence_triggers_a_second_retrieval() -> None:
    retriever = KeywordRetriever(HANDBOOK)
    model = ScriptedModel([assess(False, "病假天数", ["病假 天数"]), assess(True), ANSWER])
    result = await make_agent(model, retriever, top_k=1).ask("年假和病假分别有多少天？")

    assert retriever.queries == ["年假和病假分别有多少天？", "病假 天数"]
    assert result.stop_reason == "sufficient"
    assert result.rounds_used == 2
    first, second = result.trace
    assert (first.sufficient, first.missing, first.next_queries) == (False, "病假天数", ("病假 天数",))
    assert second.queries == ("病假 天数",) and second.new_paragraph_ids == ("p2",)
    assert second.total_evidence == 2 and second.sufficient
    # The assessor saw both paragraphs in the second round.
    assert "病假为12天" in model.requests[1].messages[-1].content
    assert all(request.thinking is False for request in model.requests[:2])


async def test_repeated_query_stops_with_duplicate_query() -> None:
    retriever = KeywordRetriever(HANDBOOK)
    # The assessor proposes the question again, reworded only in punctuation and case: same search.
    model = ScriptedModel([assess(False, "病假", ["年假和病假 分别有多少天"]), ANSWER])
    result = await make_agent(model, retriever, top_k=1).ask("年假和病假分别有多少天？")

    assert result.stop_reason == "duplicate_query"
    assert retriever.queries == ["年假和病假分别有多少天？"]
    assert result.rounds_used == 1


async def test_no_new_evidence_stops() -> None:
    same = [ev("p1", "正式员工每年享有带薪年假10天。")]
    retriever = KeywordRetriever(fixed={"年假多少天": same, "带薪年假 天数": same})
    model = ScriptedModel([assess(False, "工龄加成", ["带薪年假 天数"]), ANSWER])
    result = await make_agent(model, retriever).ask("年假多少天")

    assert result.stop_reason == "no_new_evidence"
    assert [r.new_paragraph_ids for r in result.trace] == [("p1",), ()]
    assert model.calls == 2  # one assessment, then the answer: nothing new was worth judging again


async def test_round_cap_stops_at_max_rounds() -> None:
    retriever = FnRetriever(lambda query, n: [ev(f"r{n}", f"第{n}轮找到的资料：{query}")])
    model = ScriptedModel(
        lambda messages, info: assess(False, "还缺", [f"查询 {info.index}"]) if not info.streaming else ANSWER
    )
    result = await make_agent(model, retriever, max_rounds=3).ask("一个永远查不全的问题")

    assert result.stop_reason == "max_rounds"
    assert result.rounds_used == 3
    assert len(retriever.queries) == 3

    capped = await make_agent(model, FnRetriever(lambda q, n: [ev(f"s{n}", "资料")])).ask("问题", max_rounds=1)
    assert capped.rounds_used == 1 and capped.stop_reason == "max_rounds"


async def test_no_followup_query_stops() -> None:
    model = ScriptedModel([assess(False, "病假", []), ANSWER])
    result = await make_agent(model, KeywordRetriever(HANDBOOK)).ask("年假有多少天")
    assert result.stop_reason == "no_followup_query"


async def test_empty_evidence_is_never_sufficient() -> None:
    model = ScriptedModel([])  # no reply queued: any model call would fail the test
    reasoner = LLMReasoner(model)
    judged = await reasoner.assess("年假有多少天", [], [])
    assert judged.sufficient is False and model.calls == 0

    result = await Agent(agent_settings(), reasoner, [KeywordRetriever([])]).ask("年假有多少天")
    assert result.stop_reason == "no_new_evidence"
    assert result.trace[0].sufficient is False and result.trace[0].total_evidence == 0
    assert "没有找到" in result.answer and result.citations == ()
    assert model.calls == 0


@pytest.mark.parametrize(
    "failure",
    [
        "the evidence looks fine to me",  # no JSON at all
        '{"sufficient": "yes"}',  # wrong type, fields missing
        ProviderUnavailable("provider down"),
    ],
)
async def test_assessment_failure_stops_with_assessment_error(failure: object) -> None:
    model = ScriptedModel([failure, ANSWER])  # type: ignore[list-item]
    result = await make_agent(model, KeywordRetriever(HANDBOOK)).ask("年假有多少天")

    assert result.stop_reason == "assessment_error"
    assert result.trace[0].sufficient is False
    assert result.answer == ANSWER  # the answer is still written from what was found


async def test_assessment_in_a_code_fence_with_prose_is_accepted() -> None:
    fenced = "Here is my judgement:\n```json\n" + assess(True) + "\n```\nHope this helps."
    model = ScriptedModel([fenced, ANSWER])
    result = await make_agent(model, KeywordRetriever(HANDBOOK)).ask("年假有多少天")
    assert result.stop_reason == "sufficient"


async def test_evidence_budget_and_paragraph_cap() -> None:
    long_text = "年假规定。" + "员工休假需要提前申请并经主管批准。" * 8  # about 190 estimated tokens each
    many = [ev(f"b{i}", long_text + str(i)) for i in range(5)]
    retriever = KeywordRetriever(fixed={"年假有多少天": many})
    model = ScriptedModel([assess(False, "工龄加成", ["工龄"]), ANSWER])
    result = await make_agent(model, retriever, evidence_tokens=500).ask("年假有多少天")
    assert result.stop_reason == "evidence_budget"
    assert 180 < many[0].tokens < 250
    assert sum(e.tokens for e in result.evidence) <= 500
    assert [e.paragraph_id for e in result.evidence] == ["b0", "b1"]

    short = [ev(f"c{i}", f"年假第{i}条") for i in range(5)]
    model = ScriptedModel([assess(False, "更多", ["别的"]), ANSWER])
    result = await make_agent(model, KeywordRetriever(fixed={"年假有多少天": short}), max_paragraphs=3).ask(
        "年假有多少天"
    )
    assert result.stop_reason == "evidence_budget"
    assert [e.paragraph_id for e in result.evidence] == ["c0", "c1", "c2"]


async def test_queries_per_round_are_capped_and_run_together() -> None:
    retriever = KeywordRetriever(HANDBOOK)
    model = ScriptedModel([assess(False, "病假、住宿", ["病假", "住宿标准", "差旅"]), assess(True), ANSWER])
    result = await make_agent(model, retriever, queries_per_round=2, top_k=1).ask("年假有多少天")
    assert result.trace[1].queries == ("病假", "住宿标准")
    assert set(result.trace[1].new_paragraph_ids) == {"p2", "p3"}


async def test_question_over_the_token_limit_is_refused() -> None:
    agent = make_agent(ScriptedModel([]), KeywordRetriever(HANDBOOK), question_tokens=10)
    with pytest.raises(InvalidInput) as info:
        await agent.ask("请问" * 20)
    assert "agent.question_tokens" in str(info.value) and "10" in str(info.value)
    with pytest.raises(InvalidInput, match="question"):
        await agent.ask("   ")


async def test_no_datasets_stops_before_searching() -> None:
    model = ScriptedModel([])
    result = await Agent(agent_settings(), LLMReasoner(model), []).ask("年假有多少天")
    assert result.stop_reason == "no_datasets"
    assert result.rounds_used == 0 and "没有选择任何知识库" in result.answer
    assert model.calls == 0


async def test_decide_mode_rounds() -> None:
    retriever = KeywordRetriever(HANDBOOK)
    model = ScriptedModel(
        [
            decide("SEARCH", ["年假"], "需要查询知识库"),
            decide("SEARCH", ["病假"], "缺少病假天数"),
            decide("FINAL", reason="已覆盖"),
            ANSWER,
        ]
    )
    result = await make_agent(model, retriever, top_k=1).ask("年假和病假分别有多少天？", strategy="decide")

    assert retriever.queries == ["年假", "病假"]
    assert result.stop_reason == "sufficient" and result.rounds_used == 2
    assert result.trace[0].next_queries == ("病假",) and result.trace[0].missing == "缺少病假天数"
    assert result.trace[1].sufficient is True
    assert result.strategy == "decide"


async def test_decide_mode_code_enforces_round_cap_and_dedupe() -> None:
    retriever = FnRetriever(lambda q, n: [ev(f"d{n}", f"资料{n}")])
    always_search = ScriptedModel(
        lambda messages, info: decide("SEARCH", [f"q{info.index}"]) if not info.streaming else ANSWER
    )
    result = await make_agent(always_search, retriever, max_rounds=2).ask("问题", strategy="decide")
    assert result.stop_reason == "max_rounds" and result.rounds_used == 2

    repeat = ScriptedModel([decide("SEARCH", ["同一个"]), decide("SEARCH", ["同一个"]), ANSWER])
    result = await make_agent(repeat, FnRetriever(lambda q, n: [ev(f"e{n}", "资料")])).ask("问题", strategy="decide")
    assert result.stop_reason == "duplicate_query" and result.rounds_used == 1

    broken = ScriptedModel(['{"action": "MAYBE"}', ANSWER])
    result = await make_agent(broken, KeywordRetriever(HANDBOOK)).ask("年假", strategy="decide")
    assert result.stop_reason == "assessment_error" and result.rounds_used == 0


async def test_decide_mode_timeout() -> None:
    agent = Agent(agent_settings(timeout_seconds=0.2), LLMReasoner(SlowModel(delay=5)), [KeywordRetriever(HANDBOOK)])
    with pytest.raises(RunTimeout, match="agent.timeout_seconds"):
        await agent.ask("年假有多少天", strategy="decide")


async def test_events_in_order_and_progress_stays_out_of_the_answer() -> None:
    model = ScriptedModel([assess(False, "病假", ["病假"]), assess(True), ANSWER])
    agent = make_agent(model, KeywordRetriever(HANDBOOK), top_k=1)
    events = [e async for e in agent.run("年假和病假分别有多少天？")]
    kinds = [e.phase if isinstance(e, StatusEvent) else e.kind for e in events]
    assert kinds[:5] == ["retrieving", "assessed", "retrieving", "assessed", "generating"]
    assert kinds[-2:] == ["citations", "done"]
    assert set(kinds[5:-2]) == {"answer_delta"}
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.answer == ANSWER  # no status text leaked into it
    assert [c.paragraph_id for c in done.result.citations] == ["p1"]


async def test_trace_has_the_record_shape_and_no_private_reasoning() -> None:
    from kbagent.llm import ScriptedReply

    model = ScriptedModel(
        [ScriptedReply(text=assess(True), reasoning="SECRET-CHAIN-OF-THOUGHT"), ScriptedReply(ANSWER, "SECRET-2")]
    )
    result = await make_agent(model, KeywordRetriever(HANDBOOK)).ask("年假有多少天")
    data = result.to_dict()
    assert set(data) == {
        "answer",
        "citations",
        "agent_trace",
        "agent_stop_reason",
        "rounds_used",
        "degraded",
        "duration_ms",
        "usage",
    }
    entry = data["agent_trace"][0]
    assert {"round", "queries", "new_paragraph_ids", "total_evidence", "sufficient", "missing", "next_queries"} <= set(
        entry
    )
    assert set(entry["timings"]) == {"retrieve_ms", "assess_ms"}
    assert "SECRET" not in json.dumps(data, ensure_ascii=False)
    assert data["usage"]["calls"] == 2 and data["usage"]["output_tokens"] > 0


async def test_evidence_is_ranked_round_by_round() -> None:
    # Round 1 finds five weak paragraphs; round 2's best paragraph must not end up behind all of them.
    first = [ev(f"a{i}", f"第一轮资料{i}") for i in range(5)]
    second = [ev("b0", "第二轮最相关的资料"), ev("b1", "第二轮次要资料")]
    retriever = KeywordRetriever(fixed={"问题": first, "追问": second})
    model = ScriptedModel([assess(False, "缺", ["追问"]), assess(True), ANSWER])
    result = await make_agent(model, retriever).ask("问题")
    order = [e.paragraph_id for e in result.evidence]
    assert order[:2] == ["a0", "a1"]  # the question's own best matches lead
    # then position by position across rounds: round 1's third, round 2's first, round 1's fourth, ...
    assert order == ["a0", "a1", "a2", "b0", "a3", "b1", "a4"]


async def test_decide_final_before_any_search_is_not_sufficient() -> None:
    model = ScriptedModel([decide("FINAL", reason="I already know this")])
    result = await make_agent(model, KeywordRetriever(HANDBOOK)).ask("年假有多少天", strategy="decide")
    assert result.stop_reason == "no_followup_query" and result.rounds_used == 0
    assert "没有找到" in result.answer  # own knowledge is not evidence: nothing was found, so nothing is claimed
    assert model.calls == 1  # no model answer without evidence
