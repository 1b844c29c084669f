"""Token estimates of messages and whole requests, built on ``kbagent.tokens.estimate_tokens``.

Chat templates add a few tokens per message (role markers, separators); tool calls and tool schemas are sent as
JSON. The constants below are deliberately generous: an estimate that is low sends requests over the window.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from kbagent.llm.messages import AssistantMessage, ChatRequest, JsonSchema, Message
from kbagent.tokens import estimate_tokens

# Role markers and separators of common chat templates (ChatML: "<|im_start|>user\n...<|im_end|>\n" = 4-5).
MESSAGE_OVERHEAD = 6
REQUEST_OVERHEAD = 8
TOOL_CALL_OVERHEAD = 12


def estimate_message_tokens(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD + estimate_tokens(message.content)
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            tokens += TOOL_CALL_OVERHEAD + estimate_tokens(call.name) + estimate_tokens(call.arguments)
    return tokens


def estimate_messages_tokens(messages: Iterable[Message]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def estimate_constraints_tokens(request: ChatRequest) -> int:
    """Tokens of what travels besides the messages: tool schemas and a JSON schema response format."""
    tokens = REQUEST_OVERHEAD
    for tool in request.tools:
        tokens += TOOL_CALL_OVERHEAD + estimate_tokens(
            json.dumps({"name": tool.name, "description": tool.description, "parameters": tool.parameters})
        )
    if isinstance(request.response_format, JsonSchema):
        tokens += estimate_tokens(json.dumps(request.response_format.schema, ensure_ascii=False))
    return tokens


def estimate_request_tokens(request: ChatRequest) -> int:
    """Estimated input tokens of the whole request (messages, tool schemas, response schema)."""
    return estimate_messages_tokens(request.messages) + estimate_constraints_tokens(request)
