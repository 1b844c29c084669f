"""The retrieval agent: per-question rounds of search and judgement, stop reasons, trace, domain events.

agent = Agent(settings.agent, build_reasoner(model), [KnowledgeRetriever(kb, ["handbook"])])
async for event in agent.run("年假和病假分别有多少天？", history=History(...)):
    ...   # StatusEvent, AnswerDelta, CitationsEvent, then DoneEvent(result)
"""

from kbagent.agent.events import (
    STOP_REASONS,
    AgentEvent,
    AgentResult,
    AnswerDelta,
    CitationsEvent,
    DoneEvent,
    Phase,
    RoundTrace,
    StatusEvent,
    StopReason,
    Strategy,
)
from kbagent.agent.loop import Agent, AnswerStyle, Gathered
from kbagent.agent.retrieval import KnowledgeRetriever, Retriever
from kbagent.reasoning.base import History
from kbagent.reasoning.evidence import Citation, Evidence

__all__ = [
    "STOP_REASONS",
    "Agent",
    "AgentEvent",
    "AgentResult",
    "AnswerDelta",
    "AnswerStyle",
    "Citation",
    "CitationsEvent",
    "DoneEvent",
    "Evidence",
    "Gathered",
    "History",
    "KnowledgeRetriever",
    "Phase",
    "Retriever",
    "RoundTrace",
    "StatusEvent",
    "StopReason",
    "Strategy",
]
