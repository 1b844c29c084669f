"""Keyword, vector and hybrid search over one or more datasets, with one results contract on every backend.

Hybrid search takes ``search.candidates`` from each index and fuses them, either by reciprocal rank
(``rrf``: sum of 1/(rrf_k + rank)) or by a weighted sum of normalised scores (``weighted``:
w * keyword + (1-w) * vector). BM25 and cosine live on unrelated scales, so each list is first put on its
own: ``zscore`` (standard scores, distance from the list's mean in standard deviations) or ``minmax`` (0 at
the list's lowest score, 1 at its highest). A paragraph missing from one list counts there as the lowest
candidate of that list: it ranked below all of them. Which fusion, normalisation and weight are the default
is decided by measurement (``kbagent eval retrieval``, ``benchmarks/fusion_sweep.py``), so all are settings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import get_args

import numpy as np

from kbagent.errors import InvalidInput
from kbagent.knowledge.embeddings import EmbeddingProvider
from kbagent.knowledge.keyword_index import KeywordIndex
from kbagent.knowledge.records import DatasetRef, SearchHit, SearchMode
from kbagent.knowledge.vector_index import VectorIndex
from kbagent.settings import SearchSettings
from kbagent.storage import Database
from kbagent.storage.paragraphs import paragraph_rows

Ranked = list[tuple[int, float]]


def check_request(settings: SearchSettings, query: str, top_k: int | None, mode: str | None) -> tuple[str, int, str]:
    """Validated (query, top_k, mode), defaults filled in; ``InvalidInput`` names the field and its limit."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query", "is empty; give some words to search for")
    if len(query) > settings.max_query_chars:
        raise InvalidInput(
            "query", f"{len(query)} characters is over the limit of search.max_query_chars = {settings.max_query_chars}"
        )
    k = settings.top_k if top_k is None else top_k
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= settings.max_top_k:
        raise InvalidInput("top_k", f"must be between 1 and search.max_top_k = {settings.max_top_k}, got {k}")
    chosen = settings.mode if mode is None else mode
    modes = get_args(SearchMode)
    if chosen not in modes:
        raise InvalidInput("mode", f"must be one of {', '.join(modes)}, got {chosen!r}")
    return query.strip(), k, chosen


def min_max(ranked: Ranked) -> dict[int, float]:
    """Scores scaled to 0..1 within the list. When all scores are equal there is no spread to scale:
    positive scores count fully (1) and non-positive ones (a cosine of 0) not at all."""
    if not ranked:
        return {}
    values = [score for _, score in ranked]
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return {pid: 1.0 if score > 0 else 0.0 for pid, score in ranked}
    return {pid: (score - low) / (high - low) for pid, score in ranked}


def standard_scores(ranked: Ranked) -> dict[int, float]:
    """Scores as standard deviations from the list's mean. Min-max is sensitive to the one lowest and one
    highest score of the list; the mean and spread of all candidates are steadier. When all scores are equal
    there is no spread, and ``min_max``'s rule applies."""
    if len(ranked) < 2:
        return min_max(ranked)
    values = np.fromiter((score for _, score in ranked), dtype=np.float64, count=len(ranked))
    spread = float(values.std())
    if spread <= 1e-12:
        return min_max(ranked)
    mean = float(values.mean())
    return {pid: (score - mean) / spread for pid, score in ranked}


def fuse_weighted(
    keyword: Ranked, vector: Ranked, keyword_weight: float, normalization: str = "zscore"
) -> dict[int, float]:
    normalize = standard_scores if normalization == "zscore" else min_max
    kw, vec = normalize(keyword), normalize(vector)
    # Absent from a list: as low as its lowest candidate (0 under min-max).
    kw_floor = min(kw.values(), default=0.0)
    vec_floor = min(vec.values(), default=0.0)
    return {
        pid: keyword_weight * kw.get(pid, kw_floor) + (1.0 - keyword_weight) * vec.get(pid, vec_floor)
        for pid in kw.keys() | vec.keys()
    }


def fuse_rrf(keyword: Ranked, vector: Ranked, rrf_k: int) -> dict[int, float]:
    fused: dict[int, float] = {}
    for ranked in (keyword, vector):
        for rank, (pid, _) in enumerate(ranked, start=1):
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (rrf_k + rank)
    return fused


def with_missed_candidates(
    vector: Ranked, keyword: Ranked, index: VectorIndex, datasets: Sequence[DatasetRef], query: np.ndarray
) -> Ranked:
    """The vector list as exact search would have made it, as far as the keyword list can tell. The embedded
    IVF index (above ``search.exact_max_vectors``) can miss a paragraph that belongs in the list; the keyword
    candidates are the ones worth checking, so those missing from it are scored exactly and join when they
    reach its lowest score, the list keeping its length. With the IVF forced onto the eval corpora reading a
    twelfth of its lists, this takes hybrid nDCG@10 from 0.641 / 0.713 back to 0.730 / 0.784 (SciFact /
    RGB-zh; exact search: 0.724 / 0.786). Exact indexes leave the list as it is."""
    if not vector or not keyword:
        return vector
    listed = {pid for pid, _ in vector}
    missing = [pid for pid, _ in keyword if pid not in listed]
    if not missing:
        return vector
    lowest = min(score for _, score in vector)
    joining = [(pid, score) for pid, score in index.rescore(datasets, missing, query) if score >= lowest]
    if not joining:
        return vector
    return sorted(vector + joining, key=lambda hit: (-hit[1], hit[0]))[: len(vector)]


def search_paragraphs(
    *,
    db: Database,
    settings: SearchSettings,
    embedder: EmbeddingProvider | None,
    keywords: KeywordIndex,
    vectors: VectorIndex,
    analyze: Callable[[str], list[str]],
    datasets: Sequence[DatasetRef],
    query: str,
    top_k: int,
    mode: str,
    query_vector: np.ndarray | None = None,
) -> list[SearchHit]:
    """Run a validated request (see ``check_request``). ``query_vector`` lets a caller that embedded the
    query already (benchmarks timing the two apart) skip the model."""
    want = top_k if mode != "hybrid" else max(top_k, settings.candidates)
    keyword: Ranked = []
    vector: Ranked = []
    if mode in ("keyword", "hybrid"):
        keyword = keywords.search(datasets, analyze(query), want)
    if mode in ("vector", "hybrid"):
        if query_vector is None:
            if embedder is None:
                raise InvalidInput("mode", f"{mode} search needs an embedding model")
            query_vector = embedder.embed_queries([query])[0]
        vector = vectors.search(datasets, np.asarray(query_vector, dtype=np.float32), want)
        if mode == "hybrid":
            vector = with_missed_candidates(vector, keyword, vectors, datasets, query_vector)

    if mode == "keyword":
        fused = dict(keyword)
    elif mode == "vector":
        fused = dict(vector)
    elif settings.fusion == "rrf":
        fused = fuse_rrf(keyword, vector, settings.rrf_k)
    else:
        fused = fuse_weighted(keyword, vector, settings.keyword_weight, settings.normalization)

    best = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:top_k]
    kw_scores, vec_scores = dict(keyword), dict(vector)
    with db.read() as session:
        rows = paragraph_rows(session, [pid for pid, _ in best])
    hits = []
    for pid, score in best:
        row = rows.get(pid)
        if row is None:  # deleted between the index lookup and this read
            continue
        hits.append(
            SearchHit(
                paragraph_id=pid,
                dataset=row.dataset,
                document_id=row.document_id,
                document_name=row.document_name,
                title_path=row.title_path,
                content=row.content,
                page=row.page,
                ocr=row.ocr,
                score=float(score),
                keyword_score=kw_scores.get(pid),
                vector_score=vec_scores.get(pid),
            )
        )
    return hits
