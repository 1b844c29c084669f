"""Reading BEIR-layout folders, and the errors a user sees when one is incomplete or malformed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kbagent.errors import InvalidInput, NotFound
from kbagent.evaluation.beir import load_beir

WriteBeir = Callable[..., Path]


CORPUS = [{"_id": "d1", "title": "T", "text": "alpha"}, {"_id": "d2", "text": "beta"}]
QUERIES = [{"_id": "q1", "text": "alpha?", "answer": ["a"]}, {"_id": "q2", "text": "unjudged"}]


def test_loads_corpus_queries_and_qrels(tmp_path: Path, write_beir: WriteBeir) -> None:
    data = load_beir(write_beir(tmp_path / "ds", corpus=CORPUS, queries=QUERIES, qrels="q1\td1\t1\nq1\td2\t0\n"))
    assert [(d.id, d.title, d.text) for d in data.corpus] == [("d1", "T", "alpha"), ("d2", "", "beta")]
    # q2 has no judgement in the split, so it is not evaluated
    assert [q.id for q in data.queries] == ["q1"]
    assert data.queries[0].extra == {"answer": ["a"]}
    assert data.qrels == {"q1": {"d1": 1, "d2": 0}}


@pytest.mark.parametrize("missing", ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"])
def test_missing_file_is_named(tmp_path: Path, write_beir: WriteBeir, missing: str) -> None:
    root = write_beir(tmp_path / "ds", corpus=CORPUS, queries=QUERIES, qrels="q1\td1\t1\n")
    (root / missing).unlink()
    with pytest.raises(NotFound, match=missing.split("/")[-1]):
        load_beir(root)


def test_unknown_split_lists_the_splits_present(tmp_path: Path, write_beir: WriteBeir) -> None:
    root = write_beir(tmp_path / "ds", corpus=CORPUS, queries=QUERIES, qrels="q1\td1\t1\n")
    with pytest.raises(NotFound, match=r"dev\.tsv; splits present: test"):
        load_beir(root, split="dev")


def test_malformed_lines_are_named(tmp_path: Path, write_beir: WriteBeir) -> None:
    root = write_beir(tmp_path / "ds", corpus=CORPUS, queries=QUERIES, qrels="q1\td1\n")
    with pytest.raises(InvalidInput, match="test.tsv line 2"):
        load_beir(root)
    root = write_beir(tmp_path / "ds2", corpus=CORPUS, queries=QUERIES, qrels="q9\td1\t1\n")
    with pytest.raises(InvalidInput, match="not in queries.jsonl.*'q9'"):
        load_beir(root)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{not json\n', "utf-8")
    with pytest.raises(InvalidInput, match="corpus.jsonl line 2"):
        load_beir(root)
    with pytest.raises(NotFound, match="evaluation folder not found"):
        load_beir(tmp_path / "nowhere")
