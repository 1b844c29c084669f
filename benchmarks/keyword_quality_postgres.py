"""Keyword ranking quality on PostgreSQL beside the embedded index, on BEIR folders.

    KBAGENT_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:55432/kbagent_test \\
        python benchmarks/keyword_quality_postgres.py ../shared/eval/scifact ../shared/eval/rgb/zh_refine_retrieval

``kbagent eval retrieval`` always builds its index in a SQLite file, so it measures the embedded keyword index
(tantivy BM25). This script ingests the same corpus, keyword-only (no embedding model), into a database
``kbagent_kwq_<folder>`` on the PostgreSQL server (kept between runs) and scores keyword search there with the
same metrics, next to the embedded keyword index measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from kbagent.evaluation.beir import BeirDataset, load_beir
from kbagent.evaluation.metrics import mean_metrics
from kbagent.evaluation.retrieval import (
    DATASET,
    METRICS,
    KeywordOnlyPlaceholder,
    prepare_index,
    rank_documents,
    run_mode,
    source_document,
)
from kbagent.knowledge.service import KnowledgeBase
from kbagent.settings import load_settings
from kbagent.storage import open_database


def postgres_database(admin_url: str, name: str) -> str:
    """URL of database ``name`` on the server of ``admin_url``, created when missing."""
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        if conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first() is None:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def postgres_keyword(data: BeirDataset, url: str) -> tuple[dict[str, float], float]:
    settings = load_settings(environ={}, overrides={"database": {"url": url}})
    db = open_database(url)
    try:
        kb = KnowledgeBase(db, settings, KeywordOnlyPlaceholder())
        names = {info.name: info for info in kb.list_datasets()}
        if names.get(DATASET) is None or names[DATASET].document_count != len(data.corpus):
            if DATASET in names:
                kb.delete_dataset(DATASET)
            kb.create_dataset(DATASET)
            kb.ingest_documents(DATASET, (source_document(d) for d in data.corpus), total=len(data.corpus))
        rankings: dict[str, list[str]] = {}
        seconds: list[float] = []
        for query in data.queries:
            start = time.perf_counter()
            hits = kb.search([DATASET], query.text, top_k=200, mode="keyword")
            seconds.append(time.perf_counter() - start)
            rankings[query.id] = rank_documents(hits)
    finally:
        db.close()
    qrels = {q.id: data.qrels[q.id] for q in data.queries}
    return mean_metrics(rankings, qrels, METRICS), statistics.median(seconds) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="BEIR folders (test split)")
    args = parser.parse_args()
    admin = os.environ.get("KBAGENT_TEST_POSTGRES_URL")
    if not admin:
        sys.exit("set KBAGENT_TEST_POSTGRES_URL (scripts/ci/start-postgres.sh prints one)")
    settings = load_settings()
    print(f"{'corpus':<22} {'backend':<28} {'nDCG@10':>8} {'R@10':>8} {'R@100':>8} {'MRR@10':>8} {'p50 ms':>8}")
    for folder in args.folders:
        data = load_beir(folder, "test")
        index = prepare_index(data, settings, with_vectors=False)
        try:
            embedded = run_mode(index, data, "keyword", settings)
        finally:
            index.close()
        url = postgres_database(admin, f"kbagent_kwq_{folder.name}")
        pg, pg_p50 = postgres_keyword(data, url)
        for label, m, p50 in (
            ("embedded (tantivy BM25)", embedded.metrics, embedded.latency_ms_p50),
            ("PostgreSQL (idf x ts_rank)", pg, pg_p50),
        ):
            print(
                f"{folder.name:<22} {label:<28} {m['ndcg@10']:>8.4f} {m['recall@10']:>8.4f} "
                f"{m['recall@100']:>8.4f} {m['mrr@10']:>8.4f} {p50:>8.2f}",
                flush=True,
            )
        print(f"{'':<22} PostgreSQL / embedded nDCG@10 = {pg['ndcg@10'] / embedded.metrics['ndcg@10']:.3f}")


if __name__ == "__main__":
    main()
