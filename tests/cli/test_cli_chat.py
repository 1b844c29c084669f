"""``kbagent chat`` and ``kbagent session`` through typer's CliRunner: the real agent (offline reasoner), the real
local embedding model on a tiny corpus, questions fed on standard input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbagent.errors import InvalidInput, NotFound


@pytest.fixture
def handbook(run, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "leave.md").write_text(
        "# 休假制度\n\n员工每年享有十五天带薪年假。\n\n病假每年十天，需提供医院证明。\n", encoding="utf-8"
    )
    (folder / "expenses.md").write_text("# 报销\n\n差旅报销须在出差结束后三十天内提交。\n", encoding="utf-8")
    assert run("dataset", "create", "hb").exit_code == 0
    result = run("ingest", str(folder), "--dataset", "hb")
    assert result.exit_code == 0, result.output
    return "hb"


def session_ids(run) -> list[str]:  # type: ignore[no-untyped-def]
    return [s["id"] for s in json.loads(run("session", "list", "--json").output)]


def test_chat_answers_with_citations_stores_turns_and_continues_a_session(run, handbook: str) -> None:  # type: ignore[no-untyped-def]
    result = run("chat", "--dataset", handbook, input="年假有几天？\n病假呢？\n")
    assert result.exit_code == 0, result.output
    assert "十五天带薪年假" in result.output and "[1] leave.md" in result.output
    assert "Searching (round 1)" in result.output and "Compacting context" not in result.output
    assert "病假每年十天" in result.output

    [sid] = session_ids(run)
    shown = json.loads(run("session", "show", sid, "--json").output)
    assert shown["session"]["title"] == "年假有几天？"
    records = shown["records"]
    assert [r["question"] for r in records] == ["年假有几天？", "病假呢？"]
    assert records[0]["context_info"] == {"compacted_rounds": 0, "recent_rounds": 0, "revision": 0}
    assert records[1]["context_info"] == {"compacted_rounds": 0, "recent_rounds": 1, "revision": 0}
    assert records[1]["agent_trace"][0]["round"] == 1 and records[1]["agent_stop_reason"]
    # The follow-up was read with the history: "病假呢？" became a standalone query.
    query = records[1]["agent_trace"][0]["queries"][0]
    assert "病假" in query and query != "病假呢？"
    assert records[1]["citations"][0]["document"] == "leave.md"

    result = run("chat", "-d", handbook, "--session", sid, input="报销期限是多久？\n/exit\nignored\n")
    assert result.exit_code == 0, result.output
    assert "三十天" in result.output
    assert len(json.loads(run("session", "show", sid, "--json").output)["records"]) == 3


def test_long_chat_compacts_and_session_commands_work(run, handbook: str) -> None:  # type: ignore[no-untyped-def]
    questions = "".join(f"问题{i}：年假和病假分别有多少天？请详细说明申请流程和注意事项。\n" for i in range(6))
    result = run("chat", "-d", handbook, input=questions, extra_env={"KBAGENT_CONTEXT_RECENT_TOKENS": "300"})
    assert result.exit_code == 0, result.output
    assert "Compacting context" in result.output
    [sid] = session_ids(run)
    shown = json.loads(run("session", "show", sid, "--json").output)
    assert len(shown["records"]) == 6 and shown["context"]["revision"] >= 1
    assert shown["context"]["summary"] and shown["records"][-1]["context_info"]["compacted_rounds"] >= 1

    result = run("session", "compact", sid)
    assert result.exit_code == 0, result.output
    assert "5 turns in the summary" in result.output
    assert "(ok)" in run("session", "show", sid).output

    assert run("session", "history", sid, "off").exit_code == 0
    assert json.loads(run("session", "list", "--json").output)[0]["history_enabled"] is False
    result = run("session", "history", sid, "maybe")
    assert isinstance(result.exception, InvalidInput) and "state: must be on or off" in str(result.exception)


def test_unknown_session_or_dataset_is_a_clear_error(run, handbook: str) -> None:  # type: ignore[no-untyped-def]
    result = run("session", "show", "nope")
    assert isinstance(result.exception, NotFound) and "chat session 'nope' not found" in str(result.exception)
    result = run("chat", "-d", "missing", input="hi\n")
    assert isinstance(result.exception, NotFound)
    result = run("chat", "-d", handbook, "--session", "nope", input="hi\n")
    assert isinstance(result.exception, NotFound)
