"""``kbagent eval multihop`` on a slice of the real MuSiQue subset: iterating finds more supporting passages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli.app import app
from kbagent.evaluation.multihop import run_multihop
from kbagent.settings import load_settings


@pytest.mark.slow
def test_three_rounds_find_more_gold_than_one(eval_dir: Path, tmp_path: Path) -> None:
    settings = load_settings(config_path=None, environ={}, overrides={"data_dir": str(tmp_path / "data")})
    data = eval_dir / "musique_hippo100"
    one = run_multihop(data, settings, max_rounds=1, limit=30)
    three = run_multihop(data, settings, max_rounds=3, limit=30)

    assert one.rounds_mean == 1.0 and three.rounds_mean > 1.5
    assert three.all_gold_at_10 > one.all_gold_at_10
    assert sum(three.stop_reasons.values()) == 30
    assert set(three.stop_reasons) <= {
        "sufficient",
        "max_rounds",
        "no_new_evidence",
        "duplicate_query",
        "no_followup_query",
        "evidence_budget",
    }


def test_cli_json_keys(eval_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "kbagent.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n', encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["--config", str(config), "eval", "multihop", str(eval_dir / "hotpotqa_hippo100"), "--limit", "5", "--json"],
        env={"KBAGENT_LLM_PROVIDER": ""},
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"recall@5", "all_gold@10", "rounds_mean", "stop_reasons"} <= set(data)
    assert data["queries"] == 5 and data["reasoner"] == "offline"
