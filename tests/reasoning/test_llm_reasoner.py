"""The LLM reasoner over a scripted model: auxiliary calls, validation, summaries that fail loudly."""

from __future__ import annotations

import pytest

from kbagent.errors import IncompleteOutput, ModelError, ProviderUnavailable, StructuredOutputError
from kbagent.llm import ScriptedModel, ScriptedReply
from kbagent.reasoning import Evidence, LLMReasoner

EVIDENCE = [Evidence("7", "员工手册", "正式员工每年享有带薪年假10天。", ("休假制度",))]


async def test_assessment_prompt_forbids_own_knowledge_and_lists_queries_run() -> None:
    model = ScriptedModel(['{"sufficient": false, "missing": "病假", "next_queries": ["病假天数", " "]}'])
    judged = await LLMReasoner(model, max_queries=2).assess("年假和病假多少天", EVIDENCE, ["年假和病假多少天"])
    assert judged.next_queries == ("病假天数",)  # blank proposals dropped
    system, user = model.requests[0].messages
    assert "never use your own knowledge as evidence" in system.content and "at most 2" in system.content
    assert "Queries already run: 年假和病假多少天" in user.content and "[1] 员工手册 › 休假制度" in user.content
    assert model.requests[0].thinking is False and model.requests[0].response_format is not None


async def test_self_contradicting_assessment_is_an_error_not_sufficient() -> None:
    model = ScriptedModel(['{"sufficient": true, "missing": "病假天数", "next_queries": ["病假"]}'])
    with pytest.raises(StructuredOutputError):
        await LLMReasoner(model).assess("年假和病假多少天", EVIDENCE, [])


async def test_cut_off_assessment_is_an_error() -> None:
    model = ScriptedModel([ScriptedReply('{"sufficient": tr', finish_reason="length")])
    with pytest.raises(IncompleteOutput):
        await LLMReasoner(model).assess("年假多少天", EVIDENCE, [])


async def test_decide_search_without_queries_is_malformed() -> None:
    model = ScriptedModel(['{"action": "SEARCH", "queries": [], "answer": "", "reason": "x"}'])
    with pytest.raises(StructuredOutputError):
        await LLMReasoner(model).decide("年假多少天", EVIDENCE, [], 1, 3)
    model = ScriptedModel(['{"action": "FINAL", "queries": ["ignored"], "answer": "10天 [1]", "reason": "ok"}'])
    decision = await LLMReasoner(model).decide("年假多少天", EVIDENCE, [], 2, 3)
    assert decision.action == "FINAL" and decision.queries == () and decision.answer == "10天 [1]"
    assert "round 2 of at most 3" in model.requests[0].messages[0].content


async def test_summarize_merges_and_fails_loudly() -> None:
    model = ScriptedModel(["- 目标：了解ORBIT-42预算（已更正为48万元）"])
    summary = await LLMReasoner(model).summarize("- 预算35万元", [("预算改为48万元", "好的，48万元")])
    assert summary == "- 目标：了解ORBIT-42预算（已更正为48万元）"
    prompt = model.requests[0].messages[1].content
    assert "Previous summary:\n- 预算35万元" in prompt and "<turns>" in prompt
    assert model.requests[0].thinking is False

    for failure, error in [
        (ScriptedReply("- 目标：了解ORB", finish_reason="length"), IncompleteOutput),
        (ScriptedReply("   "), IncompleteOutput),
        (ScriptedReply("", reasoning="thinking only"), IncompleteOutput),
        (ProviderUnavailable("quota exhausted"), ModelError),
    ]:
        with pytest.raises(error):
            await LLMReasoner(ScriptedModel([failure])).summarize("old", [("q", "a")])
