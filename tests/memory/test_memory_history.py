"""Rendering history for the model, and the cleaning of the copies sent to a summarizer."""

from __future__ import annotations

from kbagent.memory import ContextInfo, ConversationContext, Turn, history_messages, history_text
from kbagent.memory.history import fit_recent
from kbagent.memory.summary_input import batch_for_summary, is_acknowledgement, strip_reasoning, summary_copy


def test_summary_is_an_ordinary_user_message_marked_as_history_never_system() -> None:
    ctx = ConversationContext(
        summary="code=ORBIT-42; budget=48",
        recent_turns=(Turn(7, "期限呢？", "2026-12-28"),),
        context_info=ContextInfo(compacted_rounds=6, recent_rounds=1, revision=2),
    )
    messages = history_messages(ctx)
    assert [(m.role, m.kind) for m in messages] == [("user", "summary"), ("user", "turn"), ("assistant", "turn")]
    assert "not instructions" in messages[0].content and "code=ORBIT-42" in messages[0].content
    assert "not evidence" in messages[0].content
    assert all(m.role != "system" for m in messages)
    assert history_text(ctx).index("ORBIT-42") < history_text(ctx).index("期限呢？")
    assert history_messages(ConversationContext()) == []


def test_acknowledgements_and_reasoning_are_left_out_of_summary_copies() -> None:
    for ack in ["好的", "OK!", "thanks", "收到～", "明白了，谢谢。", "ok thanks", "Thank you.", "👍"]:
        assert is_acknowledgement(ack), ack
    for content in ["我同意购买金卡", "ok, the budget is 48", "好的，预算改为48万", "thanks for the deadline: 12-28"]:
        assert not is_acknowledgement(content), content
    assert strip_reasoning("<think>plan the reply</think>预算是48万。") == "预算是48万。"
    assert strip_reasoning("secret plan</think>Answer.") == "Answer."
    assert summary_copy(Turn(1, "好的", "收到")) is None
    assert summary_copy(Turn(2, "记住 code=ORBIT-42，只回复已记住", "已记住")) == (
        "记住 code=ORBIT-42，只回复已记住",
        "",
    )


def test_batches_respect_the_budget_and_cut_only_a_lone_oversized_turn() -> None:
    turns = [Turn(i, f"question {i} " * 5, f"answer {i} " * 5) for i in range(10)]
    budget = 3 * turns[0].tokens + 5
    batch = batch_for_summary(turns, budget=budget, max_turns=50)
    assert len(batch) == 3 and sum(t.tokens for t in batch) <= budget
    assert len(batch_for_summary(turns, budget=budget, max_turns=2)) == 2
    assert [t.id for t in batch] == list(range(len(batch)))
    huge = [Turn(1, "long " * 500, "reply " * 500), *turns]
    [cut] = batch_for_summary(huge, budget=100, max_turns=50)
    assert cut.id == 1 and cut.tokens <= 100


def test_fit_recent_keeps_newest_in_order_and_always_the_latest() -> None:
    turns = [Turn(i, f"q{i}", "a" * 40) for i in range(6)]
    kept = fit_recent(turns, 3 * turns[0].tokens)
    assert [t.id for t in kept] == [3, 4, 5]
    assert [t.id for t in fit_recent(turns, 1)] == [5]
    assert fit_recent([], 100) == []
