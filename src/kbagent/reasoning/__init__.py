"""The agent's judgements: rewrite, assess, decide, answer, summarize.

One interface (``Reasoner``), two implementations: ``LLMReasoner`` (a ChatModel with prompts and JSON schemas) and
``OfflineReasoner`` (extractive, no model). ``build_reasoner(model)`` picks: offline when no model is configured.
"""

from kbagent.reasoning.base import AnswerSpec, Assessment, Decision, History, Reasoner
from kbagent.reasoning.evidence import Citation, Evidence
from kbagent.reasoning.llm_reasoner import LLMReasoner
from kbagent.reasoning.offline import OfflineReasoner
from kbagent.reasoning.usage import UsageMeter, metered

__all__ = [
    "AnswerSpec",
    "Assessment",
    "Citation",
    "Decision",
    "Evidence",
    "History",
    "LLMReasoner",
    "OfflineReasoner",
    "Reasoner",
    "UsageMeter",
    "build_reasoner",
    "metered",
]


def build_reasoner(model: object | None, max_queries: int = 2) -> Reasoner:
    """``LLMReasoner`` over ``model`` (a ChatModel), or the offline reasoner when ``model`` is None."""
    if model is None:
        return OfflineReasoner()
    from kbagent.llm.model import ChatModel

    assert isinstance(model, ChatModel), "build_reasoner takes a ChatModel or None"
    return LLMReasoner(model, max_queries=max_queries)
