"""Building the product's ChatModel from Settings: client, retries and breaker, guard. Called at entry points."""

from __future__ import annotations

import os
from collections.abc import Mapping

from openai import AsyncOpenAI

from kbagent.errors import ConfigError
from kbagent.llm.guard import GuardedModel
from kbagent.llm.model import ChatModel, ModelLimits
from kbagent.llm.openai_client import OpenAIChatModel
from kbagent.llm.resilience import CircuitBreaker, ResilientModel
from kbagent.settings import ProviderProfile, Settings

# Local servers (llama.cpp, vLLM, Ollama) accept any key; the SDK insists on a non-empty one.
_NO_KEY = "none"


def provider_profile(settings: Settings, provider: str | None = None) -> tuple[str, ProviderProfile]:
    name = provider if provider is not None else settings.llm.provider
    if name not in settings.llm.providers:
        known = ", ".join(sorted(settings.llm.providers)) or "none configured"
        raise ConfigError(f"llm.providers has no profile {name!r} (known: {known})")
    return name, settings.llm.providers[name]


def build_openai_client(profile: ProviderProfile, environ: Mapping[str, str] | None = None) -> AsyncOpenAI:
    """An AsyncOpenAI for ``profile``: key from the variable named by ``api_key_env``, SDK retries off."""
    env = os.environ if environ is None else environ
    key = _NO_KEY
    if profile.api_key_env:
        key = env.get(profile.api_key_env, "")
        if not key:
            raise ConfigError(
                f"the provider profile for {profile.model!r} reads its API key from ${profile.api_key_env}, "
                "which is not set"
            )
    return AsyncOpenAI(base_url=profile.base_url, api_key=key, max_retries=0, timeout=profile.timeout_seconds)


def build_chat_model(
    settings: Settings,
    provider: str | None = None,
    *,
    client: AsyncOpenAI | None = None,
    environ: Mapping[str, str] | None = None,
) -> ChatModel | None:
    """The configured model (guard over retries/breaker over the OpenAI-compatible client), or None when
    ``llm.provider`` is empty and no ``provider`` is named: the product then runs offline."""
    if provider is None and not settings.llm.provider:
        return None
    name, profile = provider_profile(settings, provider)
    adapter = OpenAIChatModel(client or build_openai_client(profile, environ), profile, provider=name)
    resilient = ResilientModel(
        adapter,
        max_retries=profile.max_retries,
        max_concurrency=profile.max_concurrency,
        breaker=CircuitBreaker(name, settings.llm.breaker_failures, settings.llm.breaker_reset_seconds),
    )
    limits = ModelLimits(max_input_tokens=profile.max_input_tokens, max_output_tokens=profile.max_output_tokens)
    return GuardedModel(resilient, limits, settings.llm)
