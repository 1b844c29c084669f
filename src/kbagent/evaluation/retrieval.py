"""Retrieval evaluation: a BEIR folder is ingested into a throwaway dataset and every query is searched.

The index lives in its own SQLite file, ``<data_dir>/eval-cache/<key>.db``, where the key is the SHA-256 of
the corpus file together with what shapes the index (embedding provider and model, chunk settings, the
version of this layout, the source of the chunking, analysis and ingestion modules). A second run with
the same key reuses it; an interrupted first run resumes, since ingestion skips documents already stored
unchanged; vectors of unchanged paragraphs are copied from older caches. Keyword-only runs build a
separate index without vectors, so measuring BM25 never waits for the embedding model.

Each corpus passage becomes one document whose title (when it has one) is its heading, so it reaches both
the keyword text and the title path. Paragraph hits are mapped back to corpus ids, keeping each document's
best score. Latency is measured per query around ``KnowledgeBase.search``; the time spent embedding the
query is measured on its own and subtracted, so ``latency_ms_*`` is the search itself.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kbagent.errors import Conflict, KbagentError, RunError
from kbagent.evaluation.beir import BeirDataset, CorpusDoc
from kbagent.evaluation.metrics import mean_metrics
from kbagent.knowledge import analysis, chunking, ingest
from kbagent.knowledge.embeddings import EmbeddingProvider
from kbagent.knowledge.parsers.base import Block, ParsedDocument
from kbagent.knowledge.records import SearchMode, SourceDocument
from kbagent.settings import Settings

# Bump when the way a corpus is turned into documents changes, so old caches are not reused.
LAYOUT_VERSION = "1"
DATASET = "beir-eval"
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
MODES: tuple[SearchMode, ...] = ("keyword", "vector", "hybrid")

Progress = Callable[[int, int, str], None]


@dataclass
class ModeResult:
    mode: str
    queries: int
    metrics: dict[str, float]
    latency_ms_p50: float
    latency_ms_p95: float
    embed_ms_p50: float | None = None
    embed_ms_p95: float | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    passages: int = 0
    corpus_prefix: bool = False
    rankings: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The documented JSON object of ``kbagent eval retrieval --json`` (plus the query-embedding timing)."""
        out: dict[str, Any] = {key: round(value, 4) for key, value in self.metrics.items()}
        out.update(
            latency_ms_p50=round(self.latency_ms_p50, 3),
            latency_ms_p95=round(self.latency_ms_p95, 3),
            query_embedding_ms_p50=None if self.embed_ms_p50 is None else round(self.embed_ms_p50, 3),
            query_embedding_ms_p95=None if self.embed_ms_p95 is None else round(self.embed_ms_p95, 3),
            queries=self.queries,
            mode=self.mode,
            passages=self.passages,
            corpus_prefix=self.corpus_prefix,
            search=self.settings,
        )
        return out


class TimedQueryEmbedder:
    """Wraps the real provider: remembers each query's vector and how long the model took for it.

    Query vectors are kept by text, so running the same queries in several modes embeds each once; the
    first (real) embedding time of each query is what ``embed_ms_*`` reports.
    """

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.vectors: dict[str, np.ndarray] = {}
        self.first_seconds: dict[str, float] = {}
        self.spent = 0.0  # model time since the last ``take_spent``

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        for text in missing:
            start = time.perf_counter()
            vector = self.inner.embed_queries([text])[0]
            seconds = time.perf_counter() - start
            self.spent += seconds
            self.first_seconds[text] = seconds
            self.vectors[text] = vector
        return np.vstack([self.vectors[t] for t in texts]) if texts else self.inner.embed_queries([])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)

    def take_spent(self) -> float:
        spent, self.spent = self.spent, 0.0
        return spent


class KeywordOnlyPlaceholder:
    """Stands in for the embedding model when only keyword mode is evaluated.

    The ingestion pipeline always stores one vector per paragraph; for a keyword-only index that vector is
    a single zero, under a model name no real dataset uses, in a cache file of its own (the key records
    ``vectors: false``). ``run_mode`` refuses vector and hybrid modes on such an index.
    """

    model = "none (keyword-only evaluation index)"
    dimension = 1

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        raise RunError("a keyword-only evaluation index has no query vectors")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), 1), dtype=np.float32)


def cache_key(corpus: Path, settings: Settings, *, with_vectors: bool, prefix: int | None = None) -> str:
    """SHA-256 of the corpus file bytes and everything that shapes the index built from it."""
    digest = hashlib.sha256()
    with corpus.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if prefix is not None:
        digest.update(f"\0first {prefix} passages".encode())
    # The code that turns passages into paragraphs and keyword terms is part of the key too: an index built
    # by an older chunker or analyser would silently measure old behaviour. Rebuilding is cheap, since
    # reuse_vectors copies every unchanged paragraph's vector from the older cache.
    for module in (chunking, analysis, ingest):
        digest.update(inspect.getsource(module).encode())
    emb = settings.embedding
    shape = {
        "layout": LAYOUT_VERSION,
        "vectors": with_vectors,
        "embedding": [emb.provider, emb.model, emb.base_url, emb.dimensions] if with_vectors else None,
        "chunk_tokens": settings.ingest.chunk_tokens,
        "min_chunk_tokens": settings.ingest.min_chunk_tokens,
    }
    digest.update(json.dumps(shape, sort_keys=True).encode())
    return digest.hexdigest()


def cache_path(settings: Settings, key: str) -> Path:
    return Path(settings.data_dir).expanduser() / "eval-cache" / f"{key}.db"


def source_document(doc: CorpusDoc) -> SourceDocument:
    blocks = [Block(text=doc.title, kind="heading", level=1)] if doc.title.strip() else []
    if doc.text.strip():
        blocks.append(Block(text=doc.text))
    # The corpus id is the document name, so hits map back to it without another lookup.
    return SourceDocument(
        source=f"beir:{doc.id}", name=doc.id, parsed=ParsedDocument(format="txt", blocks=blocks, title=doc.title)
    )


def percentile_ms(seconds: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(seconds, dtype=np.float64) * 1000.0, q)) if seconds else 0.0


def rank_documents(hits: Sequence[Any]) -> list[str]:
    """Corpus ids best first: each document ranked by its best paragraph."""
    best: dict[str, float] = {}
    for hit in hits:
        if hit.document_name not in best or hit.score > best[hit.document_name]:
            best[hit.document_name] = hit.score
    return sorted(best, key=lambda doc: -best[doc])


@dataclass
class PreparedIndex:
    """An opened evaluation index: the knowledge base over the cache file and what was ingested."""

    kb: Any  # kbagent.knowledge.service.KnowledgeBase
    db: Any  # kbagent.storage.Database
    embedder: TimedQueryEmbedder
    path: Path
    with_vectors: bool
    documents: int
    paragraphs: int
    built_seconds: float  # 0 when the cache was reused

    def close(self) -> None:
        self.db.close()


def prepare_index(
    data: BeirDataset,
    settings: Settings,
    *,
    with_vectors: bool,
    embedder: EmbeddingProvider | None = None,
    progress: Progress | None = None,
) -> PreparedIndex:
    """Open (building or completing it first when needed) the cached index of ``data``'s corpus.

    ``with_vectors`` False builds a keyword-only index (no embedding model call at all); it can serve only
    keyword mode. ``embedder`` defaults to the one ``settings.embedding`` describes.
    """
    from kbagent.knowledge.embeddings import build_embedder
    from kbagent.knowledge.service import KnowledgeBase
    from kbagent.storage import open_database

    key = cache_key(data.corpus_path, settings, with_vectors=with_vectors, prefix=data.prefix)
    path = cache_path(settings, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    marker = path.with_suffix(".done")
    eval_settings = settings.model_copy(
        update={"database": settings.database.model_copy(update={"url": f"sqlite:///{path}"})}
    )
    timed = TimedQueryEmbedder((embedder or build_embedder(settings)) if with_vectors else KeywordOnlyPlaceholder())
    db = open_database(eval_settings.database.url)
    kb = KnowledgeBase(db, eval_settings, timed)
    built = 0.0
    lock = None
    try:
        if not marker.is_file():
            lock = _build_lock(path)
            start = time.perf_counter()
            if DATASET not in {info.name for info in kb.list_datasets()}:
                kb.create_dataset(DATASET)
            if with_vectors:
                reuse_vectors(data, eval_settings, timed, db, path)
            docs = (source_document(doc) for doc in data.corpus)
            report = kb.ingest_documents(DATASET, docs, progress=progress, total=len(data.corpus))
            if report.failures:
                first = report.failures[0]
                raise RunError(
                    f"{report.failed} corpus passages failed to ingest into {path} (first: {first.source}: "
                    f"{first.reason}); fix the corpus or delete the file and run again"
                )
            built = time.perf_counter() - start
            marker.write_text(json.dumps({"corpus": str(data.corpus_path), "seconds": round(built, 1)}) + "\n")
        info = next(i for i in kb.list_datasets() if i.name == DATASET)
    except BaseException:
        db.close()
        raise
    finally:
        if lock is not None:
            lock.close()
    return PreparedIndex(
        kb=kb,
        db=db,
        embedder=timed,
        path=path,
        with_vectors=with_vectors,
        documents=info.document_count,
        paragraphs=info.paragraph_count,
        built_seconds=built,
    )


def _cache_model(embedder: EmbeddingProvider) -> str:
    # The embedding_cache key that knowledge.embeddings.cached_passage_vectors uses; a test checks that
    # reuse_vectors really spares the model, so a change of that format cannot go unnoticed.
    return f"{embedder.model}#{embedder.dimension}"


def reuse_vectors(data: BeirDataset, settings: Settings, embedder: EmbeddingProvider, db: Any, path: Path) -> int:
    """Copy into ``db``'s embedding cache the vectors of this corpus's paragraphs that other evaluation
    caches (same folder, same model) already hold, so a prefix of a corpus, or the full corpus after a
    prefix, embeds only what is new. Returns how many vectors were found."""
    from kbagent.knowledge.chunking import chunk_document
    from kbagent.knowledge.embeddings import passage_hash
    from kbagent.knowledge.ingest import embedding_text
    from kbagent.storage import open_database
    from kbagent.storage.embedding_cache import cached_vectors, store_vectors

    hashes: list[str] = []
    for doc in data.corpus:
        chunks = chunk_document(
            source_document(doc).parsed, settings.ingest.chunk_tokens, settings.ingest.min_chunk_tokens
        )
        hashes.extend(passage_hash(embedding_text(c.title_path, c.content)) for c in chunks if c.content.strip())
    model = _cache_model(embedder)
    wanted = set(hashes)
    with db.read() as session:
        wanted -= set(cached_vectors(session, model, list(wanted)))
    found = 0
    for other in sorted(path.parent.glob("*.db")):
        if other == path or not wanted:
            continue
        source = open_database(f"sqlite:///{other}", migrate=False)
        try:
            with source.read() as session:
                vectors = cached_vectors(session, model, list(wanted))
        except KbagentError:  # an unreadable or foreign file in the cache folder is simply not used
            continue
        finally:
            source.close()
        if vectors:
            with db.write() as session:
                store_vectors(session, model, vectors)
            wanted -= set(vectors)
            found += len(vectors)
    return found


def _build_lock(path: Path) -> Any:
    """Held while an index is built: two processes ingesting the same cache file would clash."""
    import fcntl

    handle = path.with_suffix(".lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise Conflict(
            f"another kbagent eval is building the index {path} right now; wait for it to finish and run again"
        ) from None
    return handle


def search_depth(index: PreparedIndex, settings: Settings) -> int:
    """Paragraphs to fetch per query so that 100 distinct documents are usually among them."""
    depth = 100 if index.paragraphs <= index.documents else 200
    return min(depth, settings.search.max_top_k)


def run_mode(index: PreparedIndex, data: BeirDataset, mode: SearchMode, settings: Settings) -> ModeResult:
    """Search every query of ``data`` in ``mode`` with ``settings.search`` and score the rankings."""
    if mode != "keyword" and not index.with_vectors:
        raise ValueError(f"{mode} mode needs an index with vectors")
    index.kb.settings = settings.model_copy(update={"database": index.kb.settings.database})
    depth = search_depth(index, settings)
    rankings: dict[str, list[str]] = {}
    search_seconds: list[float] = []
    embed_seconds: list[float] = []
    for query in data.queries:
        index.embedder.take_spent()
        start = time.perf_counter()
        hits = index.kb.search([DATASET], query.text, top_k=depth, mode=mode)
        total = time.perf_counter() - start
        spent = index.embedder.take_spent()
        search_seconds.append(total - spent)
        if mode != "keyword":
            embed_seconds.append(index.embedder.first_seconds.get(query.text, spent))
        rankings[query.id] = rank_documents(hits)
    qrels = {q.id: data.qrels[q.id] for q in data.queries}
    search = settings.search
    used = {
        "fusion": search.fusion,
        "normalization": search.normalization,
        "keyword_weight": search.keyword_weight,
        "rrf_k": search.rrf_k,
        "candidates": search.candidates,
    }
    return ModeResult(
        mode=mode,
        queries=len(data.queries),
        metrics=mean_metrics(rankings, qrels, METRICS),
        latency_ms_p50=percentile_ms(search_seconds, 50),
        latency_ms_p95=percentile_ms(search_seconds, 95),
        embed_ms_p50=percentile_ms(embed_seconds, 50) if embed_seconds else None,
        embed_ms_p95=percentile_ms(embed_seconds, 95) if embed_seconds else None,
        settings=used if mode == "hybrid" else {},
        passages=index.documents,
        corpus_prefix=data.prefix is not None,
        rankings=rankings,
    )
