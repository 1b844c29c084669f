"""``kbagent llm check`` through typer's CliRunner: against the real llama.cpp server, and without a provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli.app import app


def _config(tmp_path: Path, base_url: str) -> Path:
    config = tmp_path / "kbagent.toml"
    config.write_text(
        f"""
[llm]
provider = "local"

[llm.providers.local]
base_url = "{base_url}"
model = "smollm2"
max_output_tokens = 64
thinking = "chat_template"
structured_output = "json_object"
max_retries = 0
""",
        encoding="utf-8",
    )
    return config


@pytest.mark.llm_server
def test_check_reports_model_latency_thinking_and_json(
    tmp_path: Path, llama_server: str, allow_model_requests: None
) -> None:
    result = CliRunner().invoke(app, ["--config", str(_config(tmp_path, llama_server)), "llm", "check"])
    assert result.exit_code == 0, result.output
    for expected in ("smollm2", "latency", " ms", "thinking off", "chat_template", "structured output", "json_object"):
        assert expected in result.output


def test_check_of_an_unreachable_provider_fails_with_the_reason(tmp_path: Path, allow_model_requests: None) -> None:
    # Port 9 on 127.0.0.1 (discard) is closed here: the connection is refused at once.
    result = CliRunner().invoke(app, ["--config", str(_config(tmp_path, "http://127.0.0.1:9/v1")), "llm", "check"])
    assert result.exit_code == 1
    assert "failed" in result.output and "cannot connect" in result.output


def test_check_without_a_provider_says_what_to_do(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    result = CliRunner().invoke(app, ["--config", str(empty), "llm", "check"])
    assert result.exit_code != 0
    assert "--provider" in str(result.exception) or "--provider" in result.output
