"""One test per catalogue entry, from real error bodies; and the look-alikes that must not count as context errors."""

from __future__ import annotations

import httpx
import pytest
from llm_fakes import mock_client, profile

from kbagent.errors import ContextExceeded, ModelError, ProviderBusy, ProviderUnavailable
from kbagent.llm import ChatRequest, UserMessage
from kbagent.llm.error_catalogue import CONTEXT_ERRORS, classify_error, context_error_provider
from kbagent.llm.openai_client import OpenAIChatModel

# Real bodies as providers sent them (from public issue reports and, for llama-cpp-python, from this machine).
REAL_CONTEXT_BODIES = {
    "openai": (400, CONTEXT_ERRORS[0].example),
    "vllm": (400, CONTEXT_ERRORS[1].example),
    "llama-cpp-python": (400, CONTEXT_ERRORS[2].example),
    "llama.cpp": (400, CONTEXT_ERRORS[3].example),
    "minimax": (200, CONTEXT_ERRORS[4].example),
    "anthropic": (400, CONTEXT_ERRORS[5].example),
    "dashscope": (400, CONTEXT_ERRORS[6].example),
    "zhipu": (400, CONTEXT_ERRORS[7].example),
    "moonshot": (400, CONTEXT_ERRORS[8].example),
    "deepseek": (400, CONTEXT_ERRORS[9].example),
    "siliconflow": (400, CONTEXT_ERRORS[10].example),
    "gemini": (400, CONTEXT_ERRORS[11].example),
    "openrouter": (400, CONTEXT_ERRORS[12].example),
    "volcengine": (400, CONTEXT_ERRORS[13].example),
}


def test_every_catalogue_entry_has_a_test_case() -> None:
    assert {e.provider for e in CONTEXT_ERRORS} == set(REAL_CONTEXT_BODIES)
    assert all(REAL_CONTEXT_BODIES[e.provider][1] == e.example for e in CONTEXT_ERRORS)


@pytest.mark.parametrize("provider", sorted(REAL_CONTEXT_BODIES))
def test_real_context_error_body_is_recognised(provider: str) -> None:
    status, body = REAL_CONTEXT_BODIES[provider]
    assert classify_error(status if status != 200 else 400, body) == "context"
    entry = next(e for e in CONTEXT_ERRORS if e.provider == provider)
    assert entry.pattern.search(body), f"{provider}'s own pattern must match its own body"


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        # OpenAI per-minute token limit: mentions tokens and "Requested", is a rate limit.
        (
            429,
            '{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): '
            'Limit 30000, Used 25000, Requested 8000. Please try again in 6s.","type":"tokens",'
            '"code":"rate_limit_exceeded"}}',
            "rate_limit",
        ),
        (429, '{"error":{"message":"too many tokens, please slow down","code":"1302"}}', "rate_limit"),
        # Groq-style TPM error with 413: "Request too large" but about the per-minute budget.
        (
            413,
            '{"error":{"message":"Request too large for model llama3 on tokens per minute (TPM): Limit 6000, '
            'Requested 9000","type":"tokens","code":"rate_limit_exceeded"}}',
            "rate_limit",
        ),
        (
            429,
            '{"error":{"message":"You exceeded your current quota, please check your plan and billing details.",'
            '"type":"insufficient_quota","code":"insufficient_quota"}}',
            "quota",
        ),
        (402, '{"error":{"message":"Insufficient Balance","type":"unknown_error"}}', "quota"),
        (
            400,
            '{"code":"Arrearage","message":"Access denied, please make sure your account is in good standing."}',
            "quota",
        ),
        (403, '{"error":{"message":"余额不足，请充值后重试","code":"1113"}}', "quota"),
        (
            401,
            '{"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at '
            'https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}',
            "auth",
        ),
        (503, '{"error":{"message":"The server is overloaded"}}', "transient"),
        (400, '{"error":{"message":"temperature must be between 0 and 2"}}', "other"),
    ],
)
def test_look_alikes_are_not_context_errors(status: int, body: str, kind: str) -> None:
    assert context_error_provider(body) is None or kind != "context"
    assert classify_error(status, body) == kind


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (400, CONTEXT_ERRORS[2].example, ContextExceeded),
        (400, CONTEXT_ERRORS[7].example, ContextExceeded),
        (429, '{"error":{"message":"Rate limit reached ... tokens per min (TPM)"}}', ProviderBusy),
        (402, '{"error":{"message":"Insufficient Balance"}}', ProviderUnavailable),
        (401, '{"error":{"message":"Incorrect API key provided"}}', ProviderUnavailable),
        (400, '{"error":{"message":"unknown field foo"}}', ModelError),
    ],
)
async def test_client_maps_http_errors_through_the_real_sdk(
    allow_model_requests: None, status: int, body: str, error: type[ModelError]
) -> None:
    model = OpenAIChatModel(
        mock_client(lambda request: httpx.Response(status, content=body.encode())), profile(), "test"
    )
    with pytest.raises(error) as caught:
        await model.complete(ChatRequest(messages=(UserMessage("hi"),)))
    assert type(caught.value) is error
    if error is ProviderUnavailable and status == 401:
        assert "authentication failed" in caught.value.message
