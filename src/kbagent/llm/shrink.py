"""Shrinking a copy of a request to a token budget, for the context guard.

Rules (seed 002): the leading system prompt and the latest user message are always kept; an assistant message
with tool calls travels with all its tool results or not at all; the newest history is kept first and the original
order is restored; a message that alone is too long is cut inside itself, head and tail kept, with a visible marker;
the result is never an empty list; format, tools and tool choice are kept (``ChatRequest.with_messages``).
The caller's request is never modified: every function here builds new tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kbagent.llm.budget import MESSAGE_OVERHEAD, estimate_constraints_tokens, estimate_message_tokens
from kbagent.llm.messages import AssistantMessage, ChatRequest, Message, SystemMessage, ToolMessage, UserMessage
from kbagent.tokens import estimate_tokens, truncate_to_tokens

TRUNCATION_MARKER = "\n[… truncated to fit the model's context window …]\n"
MARKER_TOKENS = estimate_tokens(TRUNCATION_MARKER)
# Below this many content tokens a cut message says too little to be worth sending.
MIN_PIECE_TOKENS = 24


def truncate_inside(text: str, budget: int) -> str:
    """``text`` cut to ``budget`` estimated tokens: 60% head, marker, 40% tail (questions often end long pastes)."""
    if estimate_tokens(text) <= budget:
        return text
    room = budget - MARKER_TOKENS
    if room <= 0:
        return truncate_to_tokens(text, budget)
    head = truncate_to_tokens(text, room * 6 // 10)
    tail = _suffix_to_tokens(text[len(head) :], room - estimate_tokens(head))
    result = head + TRUNCATION_MARKER + tail
    # The estimate is not exactly additive across the cut points; give back from the tail until it fits.
    while tail and estimate_tokens(result) > budget:
        tail = tail[max(1, len(tail) // 10) :]
        result = head + TRUNCATION_MARKER + tail
    return result if estimate_tokens(result) <= budget else truncate_to_tokens(text, budget)


def _suffix_to_tokens(text: str, budget: int) -> str:
    """The longest suffix of ``text`` whose estimate fits ``budget`` (binary search on the start)."""
    if budget <= 0:
        return ""
    lo, hi = 0, len(text)  # answer: smallest start with estimate(text[start:]) <= budget
    while lo < hi:
        mid = (lo + hi) // 2
        if estimate_tokens(text[mid:]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return text[lo:]


def _with_content(message: Message, content: str) -> Message:
    return replace(message, content=content)


def _units(messages: Sequence[Message]) -> list[list[int]]:
    """Indices grouped into droppable units: an assistant tool-call message plus the results that answer it.

    Tool results whose call is not in the list (already dropped upstream) form no valid pair and are left out.
    """
    units: list[list[int]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if isinstance(message, AssistantMessage) and message.tool_calls:
            ids = {c.id for c in message.tool_calls}
            unit = [i]
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                tool = messages[j]
                assert isinstance(tool, ToolMessage)
                if tool.tool_call_id in ids:
                    unit.append(j)
                j += 1
            units.append(unit)
            i = j
        elif isinstance(message, ToolMessage):
            i += 1  # orphan result: sending it alone is a protocol error at most providers
        else:
            units.append([i])
            i += 1
    return units


def _pinned(messages: Sequence[Message]) -> tuple[list[int], int | None]:
    """Indices of the leading system messages and of the latest user message."""
    leading = []
    for i, message in enumerate(messages):
        if not isinstance(message, SystemMessage):
            break
        leading.append(i)
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], UserMessage)), None)
    return leading, last_user


def _fit_pinned(messages: Sequence[Message], indices: list[int], budget: int) -> dict[int, Message]:
    """The pinned messages, the longest cut first, until they fit ``budget`` (or reach their floor)."""
    kept = {i: messages[i] for i in indices}
    cost = {i: estimate_message_tokens(m) for i, m in kept.items()}
    while sum(cost.values()) > budget:
        i = max(cost, key=lambda k: cost[k])
        excess = sum(cost.values()) - budget
        content_budget = max(MIN_PIECE_TOKENS, cost[i] - MESSAGE_OVERHEAD - excess)
        if content_budget >= estimate_tokens(kept[i].content):
            break  # every pinned message is at its floor: this is the smallest request there is
        cut = _with_content(kept[i], truncate_inside(kept[i].content, content_budget))
        if estimate_message_tokens(cut) >= cost[i]:
            break  # no progress possible: stop rather than loop
        kept[i] = cut
        cost[i] = estimate_message_tokens(cut)
    return kept


def _fit_unit(messages: Sequence[Message], unit: list[int], budget: int) -> dict[int, Message] | None:
    """A unit cut inside its long contents to fit ``budget``, or None when even that cannot fit."""
    fixed = sum(MESSAGE_OVERHEAD for _ in unit)
    head = messages[unit[0]]
    if isinstance(head, AssistantMessage) and head.tool_calls:
        fixed += estimate_message_tokens(replace(head, content=""))
        fixed -= MESSAGE_OVERHEAD
    share = (budget - fixed) // len(unit)
    if share < MIN_PIECE_TOKENS:
        return None
    out = {i: _with_content(messages[i], truncate_inside(messages[i].content, share)) for i in unit}
    if sum(estimate_message_tokens(m) for m in out.values()) > budget:
        return None
    return out


def fit_messages(messages: Sequence[Message], budget: int) -> tuple[Message, ...]:
    """A new message list within ``budget`` estimated tokens where the rules above allow it.

    If the system prompt and latest user message cannot fit even when cut to their floor, that smallest list is
    returned (still never empty); the caller decides whether to send it.
    """
    if not messages:
        return ()
    leading, last_user = _pinned(messages)
    pinned = [*leading, *([last_user] if last_user is not None and last_user not in leading else [])]
    if not pinned:
        pinned = [len(messages) - 1]  # no system prompt and no user message: keep the newest message
    kept = _fit_pinned(messages, pinned, budget)
    remaining = budget - sum(estimate_message_tokens(m) for m in kept.values())
    # Newest units first: recent turns matter most to the question being asked.
    for unit in reversed(_units(messages)):
        if any(i in kept for i in unit):
            continue
        cost = sum(estimate_message_tokens(messages[i]) for i in unit)
        if cost <= remaining:
            kept.update({i: messages[i] for i in unit})
            remaining -= cost
            continue
        cut = _fit_unit(messages, unit, remaining)
        if cut is not None:
            kept.update(cut)
        break  # keep history contiguous: an older turn without the ones after it reads as a non sequitur
    return tuple(kept[i] for i in sorted(kept))


def minimal_messages(messages: Sequence[Message], budget: int) -> tuple[Message, ...]:
    """Only the system prompt and the latest user message, cut to ``budget``: the last recovery attempt."""
    if not messages:
        return ()
    leading, last_user = _pinned(messages)
    pinned = [*leading, *([last_user] if last_user is not None else [])] or [len(messages) - 1]
    kept = _fit_pinned(messages, pinned, budget)
    return tuple(kept[i] for i in sorted(kept))


def shrink_request(request: ChatRequest, budget: int, *, minimal: bool = False) -> ChatRequest:
    """A copy of ``request`` whose estimate fits ``budget`` where possible; constraints are kept as they are."""
    message_budget = max(0, budget - estimate_constraints_tokens(request))
    fit = minimal_messages if minimal else fit_messages
    return request.with_messages(fit(request.messages, message_budget))
