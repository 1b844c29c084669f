"""Metrics on small rankings whose values were worked out by hand."""

from __future__ import annotations

import math

import pytest

from kbagent.evaluation.metrics import all_gold_at_k, mean_metrics, mrr_at_k, ndcg_at_k, recall_at_k

RANKING = ["a", "b", "c", "d"]
BINARY = {"b": 1, "d": 1, "e": 1}  # e is relevant but never retrieved


def test_binary_relevance() -> None:
    # DCG@3 = 1/log2(3) (b at rank 2); IDCG@3 = 1 + 1/log2(3) + 1/log2(4) = 2.13093
    assert ndcg_at_k(RANKING, BINARY, 3) == pytest.approx(0.63093 / 2.13093, abs=1e-5)
    assert ndcg_at_k(RANKING, BINARY, 3) == pytest.approx(0.29608, abs=1e-5)
    assert recall_at_k(RANKING, BINARY, 3) == pytest.approx(1 / 3)
    assert recall_at_k(RANKING, BINARY, 4) == pytest.approx(2 / 3)
    assert mrr_at_k(RANKING, BINARY, 10) == 0.5
    assert mrr_at_k(RANKING, BINARY, 1) == 0.0
    assert all_gold_at_k(RANKING, BINARY, 10) == 0.0
    assert all_gold_at_k(["e", "d", "x", "b"], BINARY, 4) == 1.0
    assert all_gold_at_k(["e", "d", "x", "b"], BINARY, 3) == 0.0


def test_graded_relevance_uses_linear_gain_and_ignores_zero_grades() -> None:
    judged = {"x": 1, "y": 2, "z": 0, "w": 2}
    ranking = ["x", "y", "z"]
    # DCG@3 = 1/1 + 2/log2(3) + 0 = 2.26186; ideal grades 2, 2, 1 -> 2 + 2/log2(3) + 1/2 = 3.76186
    assert ndcg_at_k(ranking, judged, 3) == pytest.approx(2.26186 / 3.76186, abs=1e-5)
    assert ndcg_at_k(["w", "y", "x"], judged, 3) == pytest.approx(1.0)
    # z (grade 0) is judged but not relevant: it counts neither in recall nor as a first hit
    assert recall_at_k(ranking, judged, 3) == pytest.approx(2 / 3)
    assert mrr_at_k(["z", "w"], judged, 10) == 0.5
    assert all_gold_at_k(["x", "y", "w", "q"], judged, 3) == 1.0


def test_perfect_and_empty_rankings() -> None:
    assert ndcg_at_k(["b", "d", "e"], BINARY, 10) == pytest.approx(1.0)
    assert ndcg_at_k([], BINARY, 10) == 0.0
    assert recall_at_k([], BINARY, 10) == 0.0
    assert mrr_at_k([], BINARY, 10) == 0.0


def test_mean_counts_queries_without_ranking_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    result = mean_metrics({"q1": ["a"]}, qrels, ("ndcg@10", "mrr@10", "recall@1", "allgold@5"))
    assert result == {"ndcg@10": 0.5, "mrr@10": 0.5, "recall@1": 0.5, "allgold@5": 0.5}
    # q1: hit at rank 2 -> nDCG 1/log2(3); q2: hit at rank 1 -> 1
    result = mean_metrics({"q1": ["z", "a"], "q2": ["b"]}, qrels, ("ndcg@10",))
    assert result["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1) / 2)


def test_unknown_metric_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown metric 'map@10'"):
        mean_metrics({}, {"q": {"a": 1}}, ("map@10",))
    with pytest.raises(ValueError, match="unknown metric 'ndcg@0'"):
        mean_metrics({}, {"q": {"a": 1}}, ("ndcg@0",))
