"""Ranking metrics with the definitions of ../shared/eval/README.md (BEIR / pytrec_eval).

Each function scores one query: ``ranking`` is the retrieved corpus ids best first (no duplicates),
``judged`` maps corpus ids to graded relevance; a grade above 0 is relevant. ``mean_metrics`` averages over
queries, counting a query with nothing retrieved as 0 (it is not dropped).

- nDCG@k: linear gain (the grade itself, as trec_eval's ``ndcg_cut``), discount ``1 / log2(rank + 1)``,
  normalised by the ideal ordering of every relevant passage of the query.
- Recall@k: relevant passages in the top k divided by the query's relevant passages.
- MRR@k: ``1 / rank`` of the first relevant passage within the top k, else 0.
- AllGold@k: 1 when every relevant passage is in the top k, else 0 (averaged: the fraction of such queries).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Judged = Mapping[str, int]


def _relevant(judged: Judged) -> set[str]:
    return {doc for doc, grade in judged.items() if grade > 0}


def ndcg_at_k(ranking: Sequence[str], judged: Judged, k: int) -> float:
    dcg = sum(max(judged.get(doc, 0), 0) / math.log2(rank + 1) for rank, doc in enumerate(ranking[:k], start=1))
    ideal_grades = sorted((grade for grade in judged.values() if grade > 0), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal_grades, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], judged: Judged, k: int) -> float:
    relevant = _relevant(judged)
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], judged: Judged, k: int) -> float:
    relevant = _relevant(judged)
    for rank, doc in enumerate(ranking[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def all_gold_at_k(ranking: Sequence[str], judged: Judged, k: int) -> float:
    relevant = _relevant(judged)
    return 1.0 if relevant and relevant.issubset(ranking[:k]) else 0.0


METRICS = {
    "ndcg": ndcg_at_k,
    "recall": recall_at_k,
    "mrr": mrr_at_k,
    "allgold": all_gold_at_k,
}


def mean_metrics(
    rankings: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Judged],
    wanted: Sequence[str] = ("ndcg@10", "recall@10", "recall@100", "mrr@10"),
) -> dict[str, float]:
    """Average each ``name@k`` in ``wanted`` over every query of ``qrels`` (a missing ranking counts as empty)."""
    if not qrels:
        raise ValueError("no judged queries to average over")
    results: dict[str, float] = {}
    for spec in wanted:
        name, _, k_text = spec.partition("@")
        if name not in METRICS or not k_text.isdigit() or int(k_text) < 1:
            raise ValueError(f"unknown metric {spec!r}; expected one of {sorted(METRICS)} followed by @k, k >= 1")
        metric, k = METRICS[name], int(k_text)
        total = sum(metric(rankings.get(qid, ()), judged, k) for qid, judged in qrels.items())
        results[spec] = total / len(qrels)
    return results
