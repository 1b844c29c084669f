"""The whole question path against the real llama.cpp server: CLI -> agent -> LLM reasoner -> guard -> SDK.

SmolLM2-135M with a 512-token window cannot judge evidence well; what a user must still get is an answer, a
stop reason from the contract, and no request that dies on the window (the guard shrinks what does not fit).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.agent.events import STOP_REASONS
from kbagent.cli.app import app

pytestmark = pytest.mark.llm_server


def test_ask_with_a_real_model_answers_within_the_contract(
    llama_server: str, allow_model_requests: None, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(
        "# Leave\n\nEmployees get 10 days of annual leave after one year of service.\n\n"
        "# Sick leave\n\nSick leave is 12 days a year on full pay; a doctor's note is needed from day 2.\n",
        encoding="utf-8",
    )
    profile = {"base_url": llama_server, "model": "smollm2", "max_output_tokens": 64, "max_retries": 1}
    env = {
        "KBAGENT_CONFIG": "",
        "KBAGENT_DATABASE_URL": f"sqlite:///{tmp_path / 'kb.db'}",
        "KBAGENT_LLM_PROVIDER": "local",
        "KBAGENT_LLM_PROVIDERS": json.dumps({"local": profile}),
        "KBAGENT_SEARCH_MODE": "keyword",
        "KBAGENT_AGENT_MAX_ROUNDS": "2",
    }
    runner = CliRunner()
    assert runner.invoke(app, ["dataset", "create", "hr"], env=env).exit_code == 0
    ingested = runner.invoke(app, ["ingest", str(docs), "--dataset", "hr"], env=env)
    assert ingested.exit_code == 0, ingested.output

    result = runner.invoke(app, ["ask", "How many days of annual leave?", "--dataset", "hr", "--json"], env=env)
    assert result.exit_code == 0, result.output
    reply = json.loads(result.stdout.strip().splitlines()[-1])
    assert reply["answer"].strip()
    assert reply["agent_stop_reason"] in STOP_REASONS
    assert 1 <= reply["rounds_used"] <= 2
    assert [r["round"] for r in reply["agent_trace"]] == list(range(1, reply["rounds_used"] + 1))
