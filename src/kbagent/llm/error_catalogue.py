"""Recognising a provider's errors: which ones mean "the prompt is over the context window".

Only an explicit context-exceeded error lets the guard shrink and retry a request, so recognition must be exact in
both directions: a missed context error leaves the user in a 400 loop; a rate-limit or quota error taken for one
would make the guard throw away conversation for nothing. Each entry of ``CONTEXT_ERRORS`` carries a real error
body from its provider (tests check every one); ``NOT_CONTEXT`` vetoes per-minute token limits, quota and billing
messages that also talk about "tokens".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ErrorKind = Literal["context", "rate_limit", "quota", "auth", "transient", "other"]


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    provider: str
    pattern: re.Pattern[str]
    example: str  # a real error body from this provider (kept for tests and for whoever extends the list)


def _entry(provider: str, pattern: str, example: str) -> CatalogueEntry:
    return CatalogueEntry(provider, re.compile(pattern, re.IGNORECASE), example)


CONTEXT_ERRORS: tuple[CatalogueEntry, ...] = (
    _entry(
        "openai",
        r"context_length_exceeded|maximum context length",
        '{"error":{"message":"This model\'s maximum context length is 4097 tokens. However, your messages resulted '
        'in 6988 tokens. Please reduce the length of the messages.","type":"invalid_request_error",'
        '"param":"messages","code":"context_length_exceeded"}}',
    ),
    _entry(
        "vllm",
        r"maximum context length|is too long and exceeds limit|longer than the maximum model length",
        '{"object":"error","message":"This model\'s maximum context length is 16000 tokens. However, you requested '
        "17165 tokens (13069 in the messages, 4096 in the completion). Please reduce the length of the messages or "
        'completion.","type":"BadRequestError","param":null,"code":400}',
    ),
    _entry(
        "llama-cpp-python",
        r"context_length_exceeded",
        '{"error":{"message":"This model\'s maximum context length is 512 tokens. However, you requested 1254 tokens '
        '(1238 in the messages, 16 in the completion). Please reduce the length of the messages or completion.",'
        '"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
    ),
    _entry(
        "llama.cpp",
        r"exceed_context_size_error|exceeds the available context size",
        '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
        '"type":"exceed_context_size_error","n_prompt_tokens":1254,"n_ctx":512}}',
    ),
    _entry(
        "minimax",
        r"context window exceeds limit|\"status_code\"\s*:\s*2013\b|\(2013\)",
        '{"id":"","choices":null,"base_resp":{"status_code":2013,'
        '"status_msg":"invalid params, context window exceeds limit (2013)"}}',
    ),
    _entry(
        "anthropic",
        r"prompt is too long",
        '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208923 tokens > '
        '200000 maximum"}}',
    ),
    _entry(
        "dashscope",
        r"range of input length should be",
        '{"error":{"code":"invalid_parameter_error","message":"<400> InternalError.Algo.InvalidParameter: Range of '
        'input length should be [1, 983616]","param":null,"type":"invalid_request_error"},'
        '"request_id":"81a373d6-28bd-9968-8335-e22a2127c41b"}',
    ),
    _entry(
        "zhipu",
        r"prompt exceeds max length|prompt\s*超长|\"code\"\s*:\s*\"?1261\b",
        '{"error":{"code":"1261","message":"Prompt exceeds max length"}}',
    ),
    _entry(
        "moonshot",
        r"exceeded model token limit",
        '{"error":{"message":"Invalid request: Your request exceeded model token limit: 262144 (requested: '
        '269030)","type":"invalid_request_error"}}',
    ),
    _entry(
        "deepseek",
        r"maximum context length",
        '{"error":{"message":"This model\'s maximum context length is 65536 tokens. However, you requested 70121 '
        "tokens (66025 in the messages, 4096 in the completion). Please reduce the length of the messages or "
        'completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
    ),
    _entry(
        "siliconflow",
        r"must be less than max_seq_len|\"code\"\s*:\s*20015\b",
        '{"code":20015,"message":"length of prompt_tokens (57535) must be less than max_seq_len (32768).","data":null}',
    ),
    _entry(
        "gemini",
        r"exceeds the maximum number of tokens",
        '[{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens '
        'allowed (1048576).","status":"INVALID_ARGUMENT"}}]',
    ),
    _entry(
        "openrouter",
        r"maximum context length",
        '{"error":{"message":"This endpoint\'s maximum context length is 131072 tokens. However, you requested '
        "about 138956 tokens (7884 of text input, 131072 in the output). Please reduce the length of either one, "
        'or use the \\"middle-out\\" transform to compress your prompt automatically.","code":400}}',
    ),
    _entry(
        "volcengine",
        r"input length \d+ exceeds the maximum length",
        '{"error":{"code":"InvalidParameter","message":"Input length 203743 exceeds the maximum length 202752",'
        '"param":"","type":"BadRequest"}}',
    ),
)

# Messages that mention tokens or limits but are not about the context window. Checked first.
_RATE_LIMIT = re.compile(
    r"rate.?limit|per.?min|tokens per minute|\bTPM\b|\bRPM\b|too many tokens|too many requests|请求过于频繁|限流",
    re.IGNORECASE,
)
_QUOTA = re.compile(
    r"insufficient.?quota|exceeded (your |the )?current quota|insufficient.?balance|余额不足|欠费|arrearage|"
    r"billing|payment required|credit",
    re.IGNORECASE,
)
_AUTH = re.compile(r"invalid.?api.?key|incorrect api key|unauthori[sz]ed|authentication|api key not valid", re.I)

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


def context_error_provider(body: str) -> str | None:
    """Name of the first catalogue entry whose pattern matches ``body``, or None."""
    for entry in CONTEXT_ERRORS:
        if entry.pattern.search(body):
            return entry.provider
    return None


def classify_error(status: int | None, body: str) -> ErrorKind:
    """What an HTTP error (``status`` None: an error inside a stream) means for retrying and recovery.

    ``context``: shrink and retry (guard). ``rate_limit`` / ``transient``: back off and retry (never shrink).
    ``quota`` / ``auth``: fail at once with a clear message. ``other``: a request error, no retry.
    """
    if status in (401, 403) and not _QUOTA.search(body):
        return "auth"
    if status == 402 or _QUOTA.search(body):
        return "quota"
    if status == 429 or _RATE_LIMIT.search(body):
        return "rate_limit"
    if context_error_provider(body) is not None:
        return "context"
    if _AUTH.search(body):
        return "auth"
    if status is not None and status in _RETRYABLE_STATUS:
        return "transient"
    if status is not None and status >= 500:
        return "transient"
    return "other"
