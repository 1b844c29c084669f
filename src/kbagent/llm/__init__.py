"""Language models: typed messages, the ChatModel protocol, the OpenAI-compatible client, the context guard.

Callers build one model at the entry point with ``build_chat_model(settings)`` (None means run offline) and use
``complete`` / ``stream``; auxiliary calls go through ``complete_auxiliary`` and ``complete_json``. Tests use
``ScriptedModel``.
"""

from kbagent.llm.budget import estimate_message_tokens, estimate_messages_tokens, estimate_request_tokens
from kbagent.llm.messages import (
    AssistantMessage,
    ChatRequest,
    ChatResult,
    FinishReason,
    ForceTool,
    JsonSchema,
    Message,
    ReasoningDelta,
    ResponseFormat,
    StreamEnd,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolChoice,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from kbagent.llm.model import ChatModel, ModelLimits, collect_stream
from kbagent.llm.scripted import CallInfo, ScriptedModel, ScriptedReply, ScriptExhausted

__all__ = [
    "AssistantMessage",
    "CallInfo",
    "ChatModel",
    "ChatRequest",
    "ChatResult",
    "FinishReason",
    "ForceTool",
    "JsonSchema",
    "Message",
    "ModelLimits",
    "ReasoningDelta",
    "ResponseFormat",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedReply",
    "StreamEnd",
    "StreamEvent",
    "SystemMessage",
    "TextDelta",
    "ToolCall",
    "ToolChoice",
    "ToolMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "collect_stream",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_request_tokens",
]
