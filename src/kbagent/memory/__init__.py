"""Conversation memory: persisted summary + watermark compaction, smart trimming, session locks.

Public face:

* ``ChatService`` (conversation.py): sessions, ``ask`` (lock, history, answerer, record), ``compact``.
* ``ConversationContext`` / ``history_messages`` (history.py): what the agent gets and how to render it.
* ``Compactor`` / ``Summarizer`` / ``ContextStatus`` (compaction.py): the compaction rules.
* ``trim`` and its scorers (trimming.py): fit evidence or history to a budget by relevance.
* ``session_locks`` (locks.py): one generation or compaction per session, across processes on PostgreSQL.
"""

from kbagent.memory.compaction import CompactionPolicy, Compactor, ContextStatus, Summarizer
from kbagent.memory.conversation import Answerer, ChatService, SessionView, SummaryState, TurnResult, TurnStored
from kbagent.memory.history import (
    ContextInfo,
    ConversationContext,
    HistoryMessage,
    Turn,
    history_messages,
    history_text,
)
from kbagent.memory.locks import SessionLocks, session_locks

__all__ = [
    "Answerer",
    "ChatService",
    "CompactionPolicy",
    "Compactor",
    "ContextInfo",
    "ContextStatus",
    "ConversationContext",
    "HistoryMessage",
    "SessionLocks",
    "SessionView",
    "Summarizer",
    "SummaryState",
    "Turn",
    "TurnResult",
    "TurnStored",
    "history_messages",
    "history_text",
    "session_locks",
]
