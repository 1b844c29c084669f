"""``kbagent llm check``'s probe: one provider, three small calls, a report a person can act on."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kbagent.errors import ModelError
from kbagent.llm.factory import build_chat_model, provider_profile
from kbagent.llm.messages import ChatRequest, SystemMessage, UserMessage
from kbagent.llm.model import close_model
from kbagent.llm.structured import complete_json
from kbagent.settings import Settings

_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@dataclass
class CheckReport:
    provider: str
    model: str
    base_url: str
    ok: bool = False
    latency_ms: float | None = None
    reply: str = ""
    error: str = ""
    thinking: str = ""
    structured: str = ""
    notes: list[str] = field(default_factory=list)


async def check_provider(settings: Settings, provider: str | None = None) -> CheckReport:
    """Call the provider once plainly, once with thinking off, once for JSON; never raises ModelError."""
    name, profile = provider_profile(settings, provider)
    report = CheckReport(provider=name, model=profile.model, base_url=profile.base_url)
    model = build_chat_model(settings, name)
    assert model is not None
    try:
        started = time.perf_counter()
        try:
            result = await model.complete(
                ChatRequest(
                    messages=(SystemMessage("You are a connectivity check."), UserMessage("Reply with: ready")),
                    max_output_tokens=min(profile.max_output_tokens, 64),
                )
            )
        except ModelError as exc:
            report.error = exc.message
            return report
        report.latency_ms = (time.perf_counter() - started) * 1000
        report.ok = True
        report.reply = result.text.strip()[:80]
        if result.reasoning:
            report.notes.append("the model reasons before answering (reasoning kept out of the answer)")

        off = ChatRequest(messages=(UserMessage("Reply with: ok"),), max_output_tokens=64, thinking=False)
        try:
            quiet = await model.complete(off)
        except ModelError as exc:
            report.thinking = f"failed with thinking switched off ({profile.thinking}): {exc.message}"
        else:
            if profile.thinking == "none":
                report.thinking = "no switch configured" + (
                    "; the model still reasons: set llm.providers.NAME.thinking" if quiet.reasoning else ""
                )
            elif quiet.reasoning:
                report.thinking = f"{profile.thinking} sent, but the model still returned reasoning"
            else:
                report.thinking = f"switched off with {profile.thinking}"

        try:
            await complete_json(
                model, ChatRequest(messages=(UserMessage('Return {"ok": true}.'),), max_output_tokens=64), _SCHEMA
            )
        except ModelError as exc:
            report.structured = f"{profile.structured_output}: failed ({exc.message[:160]})"
        else:
            report.structured = f"{profile.structured_output}: valid JSON"
        return report
    finally:
        await close_model(model)
