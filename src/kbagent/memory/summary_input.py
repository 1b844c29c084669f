"""The copies of stored turns that are sent to a summarizer.

Stored records are never changed; the copies lose what misleads fact extraction (seed 002, bugs 4 and 5):
a model's reasoning text, and pure acknowledgements such as "好的" or "ok", which carry no fact and, when a user
had asked for "just reply 'noted'", tempt a summarizer into following history as if it were an instruction.
"""

from __future__ import annotations

import re

from kbagent.memory.history import Turn, cut_turn

# Reasoning blocks some models put in the answer text itself.
_REASONING = re.compile(
    r"<(think|thinking|reasoning|reflection)>.*?</\1>|^.*?</(think|thinking)>", re.DOTALL | re.IGNORECASE
)

ACKNOWLEDGEMENTS = frozenset(
    {
        "好", "好的", "好滴", "嗯", "嗯嗯", "行", "可以", "收到", "明白", "明白了", "知道了", "了解", "了解了", "谢谢",
        "谢谢你", "多谢", "感谢", "好的谢谢", "好的，谢谢", "已记住", "记住了", "ok", "okay", "k", "kk", "sure",
        "thanks", "thank you", "thx", "got it", "noted", "understood", "roger", "cool", "great", "yes", "yep",
    }
)  # fmt: skip
_ACK_STRIP = re.compile(r"[\s\.,!?。，！？~～、…:：;；'\"“”‘’()（）\[\]【】👍🙏]+")


def strip_reasoning(text: str) -> str:
    """``text`` without ``<think>…</think>``-style reasoning blocks (also an unopened leading one)."""
    return _REASONING.sub("", text).strip()


def is_acknowledgement(text: str) -> bool:
    """True for a bare acknowledgement ("好的", "OK!", "thanks", "收到～"); False for anything with content,
    including confirmations that carry a decision ("我同意购买")."""
    parts = _ACK_STRIP.sub(" ", text.lower()).split()
    # "明白了，谢谢" is two acknowledgements; "ok thanks" too; "thank you" is one phrase of two words.
    core = " ".join(parts)
    return not parts or core in ACKNOWLEDGEMENTS or all(part in ACKNOWLEDGEMENTS for part in parts)


def summary_copy(turn: Turn) -> tuple[str, str] | None:
    """(question, answer) as the summarizer should see them, or None when the turn carries nothing."""
    question = turn.question.strip()
    answer = strip_reasoning(turn.answer)
    if is_acknowledgement(question):
        question = ""
    if is_acknowledgement(answer):
        answer = ""
    if not question and not answer:
        return None
    return question, answer


def batch_for_summary(turns: list[Turn], *, budget: int, max_turns: int) -> list[Turn]:
    """The oldest turns (at most ``max_turns``) whose cleaned copies fit ``budget`` tokens; always at least one,
    cut to the budget when it alone is over (the stored record stays whole)."""
    batch: list[Turn] = []
    used = 0
    for turn in turns[:max_turns]:
        copy = summary_copy(turn)
        cost = Turn(turn.id, *copy).tokens if copy else 0
        if batch and used + cost > budget:
            break
        if not batch and cost > budget:
            return [cut_turn(turn, budget)]
        batch.append(turn)
        used += cost
    return batch
