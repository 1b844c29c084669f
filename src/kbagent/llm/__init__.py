"""Language models: typed messages, the ChatModel protocol, the OpenAI-compatible client, the context guard.

Callers build one model at the entry point with ``build_chat_model(settings)`` (None means run offline) and use
``complete`` / ``stream``; auxiliary calls go through ``complete_auxiliary`` and ``complete_json``. Tests use
``ScriptedModel``.
"""

from kbagent.llm.budget import estimate_message_tokens, estimate_messages_tokens, estimate_request_tokens
from kbagent.llm.error_catalogue import CONTEXT_ERRORS, classify_error
from kbagent.llm.factory import build_chat_model, build_openai_client, provider_profile
from kbagent.llm.guard import GuardedModel
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
from kbagent.llm.model import ChatModel, ModelLimits, close_model, collect_stream
from kbagent.llm.openai_client import OpenAIChatModel
from kbagent.llm.resilience import CircuitBreaker, ResilientModel
from kbagent.llm.scripted import CallInfo, ScriptedModel, ScriptedReply, ScriptExhausted
from kbagent.llm.structured import complete_auxiliary, complete_json, extract_json_object
from kbagent.llm.switch import allow_model_requests

__all__ = [
    "AssistantMessage",
    "CONTEXT_ERRORS",
    "CallInfo",
    "ChatModel",
    "ChatRequest",
    "ChatResult",
    "CircuitBreaker",
    "FinishReason",
    "ForceTool",
    "GuardedModel",
    "JsonSchema",
    "Message",
    "ModelLimits",
    "OpenAIChatModel",
    "ReasoningDelta",
    "ResilientModel",
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
    "allow_model_requests",
    "build_chat_model",
    "build_openai_client",
    "classify_error",
    "close_model",
    "collect_stream",
    "complete_auxiliary",
    "complete_json",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_request_tokens",
    "extract_json_object",
    "provider_profile",
]
