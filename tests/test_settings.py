from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.errors import ConfigError
from kbagent.settings import env_name, load_settings, setting_paths

REPO = Path(__file__).resolve().parents[1]


def test_every_setting_is_documented() -> None:
    doc = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [path for path in setting_paths() if f"`{path}`" not in doc]
    assert not missing, f"undocumented settings (add them to docs/configuration.md): {missing}"
    undocumented_env = [env_name(p) for p in setting_paths() if ".NAME." not in p and f"`{env_name(p)}`" not in doc]
    assert not undocumented_env, undocumented_env


def test_defaults_follow_the_contract() -> None:
    s = load_settings(environ={})
    assert (s.agent.max_rounds, s.agent.evidence_tokens, s.agent.question_tokens) == (3, 16000, 4000)
    assert (s.agent.max_paragraphs, s.agent.queries_per_round) == (40, 2)
    assert s.context.recent_tokens == 6000
    assert s.python.timeout_seconds == 15
    assert s.database.url.startswith("sqlite:///")


def test_environment_wins_over_file(tmp_path: Path) -> None:
    config = tmp_path / "kbagent.toml"
    config.write_text("[agent]\nmax_rounds = 5\n[context]\nrecent_tokens = 900\n", encoding="utf-8")
    s = load_settings(config, environ={"KBAGENT_AGENT_MAX_ROUNDS": "7", "KBAGENT_DATABASE_URL": "sqlite:///x.db"})
    assert s.agent.max_rounds == 7
    assert s.context.recent_tokens == 900
    assert s.database.url == "sqlite:///x.db"


def test_secrets_in_the_file_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "kbagent.toml"
    config.write_text(
        '[llm.providers.q]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\napi_key = "sk-123"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"llm\.providers\.q\.api_key: secrets are read only from the environment"):
        load_settings(config, environ={})


def test_bad_value_names_the_setting_and_limit() -> None:
    with pytest.raises(ConfigError, match=r"agent\.max_rounds: Input should be less than or equal to 10"):
        load_settings(environ={"KBAGENT_AGENT_MAX_ROUNDS": "99"})


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(ConfigError, match="llm.provider names 'nope'"):
        load_settings(environ={"KBAGENT_LLM_PROVIDER": "nope"})
