"""``kbagent function ...`` end to end: the CLI, a real database file and, for run/debug, the real engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.cli.app import app
from kbagent.errors import InvalidInput


@pytest.fixture
def cli(tmp_path: Path) -> tuple[CliRunner, dict[str, str]]:
    return CliRunner(), {"KBAGENT_DATABASE_URL": f"sqlite:///{tmp_path}/kb.db", "KBAGENT_CONFIG": ""}


def _write(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(code, encoding="utf-8")
    return str(path)


def test_add_list_show_and_hidden_init_values(cli: tuple[CliRunner, dict[str, str]], tmp_path: Path) -> None:
    runner, env = cli
    src = _write(tmp_path, "w.py", "def weather(city, key, days=1):\n    return [city, days]\n")
    added = runner.invoke(
        app,
        ["function", "add", src, "--name", "weather", "--param", "city:string", "--param", "key:string",
         "--param", "days:int:optional=1", "--init", '{"key": "sk-owner"}', "--public", "--owner", "alice"],
        env=env,
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    assert "entry point weather" in added.output
    listed = runner.invoke(app, ["function", "list", "--owner", "bob", "--json"], env=env)
    assert listed.exit_code == 0
    rows = json.loads(listed.output)
    assert [(r["name"], r["owner"], r["init_params"]) for r in rows] == [("weather", "alice", None)]
    shown_to_bob = runner.invoke(app, ["function", "show", "weather", "--owner", "bob"], env=env)
    assert "sk-owner" not in shown_to_bob.output and "1 hidden" in shown_to_bob.output
    shown_to_alice = runner.invoke(app, ["function", "show", "weather", "--owner", "alice"], env=env)
    assert "sk-owner" in shown_to_alice.output


def test_add_refuses_code_that_does_not_parse(cli: tuple[CliRunner, dict[str, str]], tmp_path: Path) -> None:
    runner, env = cli
    src = _write(tmp_path, "bad.py", "def f(:\n    pass\n")
    result = runner.invoke(app, ["function", "add", src, "--name", "bad"], env=env)
    assert isinstance(result.exception, InvalidInput)
    assert result.exception.message.startswith("code: line 1: ")
    bad_param = runner.invoke(app, ["function", "add", src, "--name", "bad", "--param", "n:number"], env=env)
    assert isinstance(bad_param.exception, InvalidInput) and "unknown type 'number'" in bad_param.exception.message


@pytest.mark.docker
def test_run_and_debug_in_the_sandbox(
    cli: tuple[CliRunner, dict[str, str]], tmp_path: Path, docker_engine: str
) -> None:
    runner, env = cli
    src = _write(
        tmp_path, "m.py", "def other():\n    return 'other'\n\ndef add(a, b):\n    print('adding')\n    return a + b\n"
    )
    assert runner.invoke(
        app, ["function", "add", src, "--name", "add", "--param", "a:int", "--param", "b:int", "--init", '{"b": 10}'],
        env=env,
    ).exit_code == 0  # fmt: skip
    ran = runner.invoke(app, ["function", "run", "add", "--params", '{"a": "5"}', "--json"], env=env)
    assert ran.exit_code == 0, ran.output
    outcome = json.loads(ran.output)
    assert (outcome["status"], outcome["value"], outcome["stdout"]) == ("ok", 15, "adding\n")
    debugged = runner.invoke(app, ["function", "debug", src, "--entrypoint", "other"], env=env)
    assert debugged.exit_code == 0 and '"other"' in debugged.output
    failing = _write(tmp_path, "f.py", "def main():\n    raise RuntimeError('broken on purpose')\n")
    failed = runner.invoke(app, ["function", "debug", failing], env=env)
    assert failed.exit_code == 1
    assert "RuntimeError: broken on purpose" in failed.output
