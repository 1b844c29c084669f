"""Auxiliary calls (rewrite, assess, summarize) and structured JSON output with validation.

Auxiliary calls are non-streaming with thinking switched off, so the output cap is spent on the result. A reply that
stopped at the cap (``finish_reason=length``) or is empty is ``IncompleteOutput``, never a result: a cut summary
must not be stored as if it were whole. JSON replies are parsed robustly (code fences, prose around the object) and
validated against the schema; anything that does not validate is ``StructuredOutputError``, never a guessed JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import jsonschema

from kbagent.errors import IncompleteOutput, StructuredOutputError
from kbagent.llm.messages import ChatRequest, ChatResult, JsonSchema, ResponseFormat
from kbagent.llm.model import ChatModel

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


async def complete_auxiliary(model: ChatModel, request: ChatRequest) -> ChatResult:
    """One non-streaming call with thinking off. Raises IncompleteOutput on ``finish_reason=length`` or no text."""
    result = await model.complete(replace(request, thinking=False))
    if result.finish_reason == "length":
        cap = request.max_output_tokens
        raise IncompleteOutput(
            "the model stopped at its output limit"
            + (f" (max_output_tokens={cap})" if cap else "")
            + "; the reply is cut off and was not used"
        )
    if not result.text.strip() and not result.tool_calls:
        raise IncompleteOutput("the model returned no text" + (" (only reasoning)" if result.reasoning.strip() else ""))
    return result


def extract_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply: bare, inside a code fence, or surrounded by prose. Raises StructuredOutputError."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    # Prose around the object: try each "{" as the start of a complete object.
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    snippet = text.strip()[:200]
    raise StructuredOutputError(f"the model's reply contains no JSON object: {snippet!r}")


def validate_json(value: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Raise StructuredOutputError naming the first field that breaks ``schema``."""
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise StructuredOutputError(f"the model's JSON does not match the schema at {where}: {error.message}")


async def complete_json(
    model: ChatModel, request: ChatRequest, schema: Mapping[str, Any] | None = None, *, name: str = "result"
) -> dict[str, Any]:
    """An auxiliary call that must return a JSON object (matching ``schema`` when given).

    The format is enforced by the provider where its profile allows (json_schema / json_object) and carried in the
    prompt otherwise; the reply is always parsed and validated here. Raises IncompleteOutput (cut off or empty) or
    StructuredOutputError (no JSON, or it does not match).
    """
    fmt: ResponseFormat = JsonSchema(name=name, schema=schema) if schema is not None else "json_object"
    result = await complete_auxiliary(model, replace(request, response_format=fmt))
    value = extract_json_object(result.text)
    if schema is not None:
        validate_json(value, schema)
    return value
