"""Hybrid fusion rules on hand-made candidate lists: what each normalisation does with spread, ties and
paragraphs that only one index found."""

from __future__ import annotations

import pytest

from kbagent.knowledge.search import fuse_rrf, fuse_weighted, min_max, standard_scores


def test_standard_scores_are_distances_from_the_mean_in_standard_deviations() -> None:
    z = standard_scores([(1, 9.0), (2, 5.0), (3, 1.0)])
    assert z[2] == pytest.approx(0.0)
    assert z[1] == pytest.approx(-z[3]) and z[1] == pytest.approx(1.2247, abs=1e-4)


def test_one_outlier_does_not_squash_the_rest_under_zscore() -> None:
    # BM25 often has one hit far ahead. Min-max then crowds every other candidate near 0, so the vector list
    # alone decides among them; standard scores keep their differences visible.
    keyword = [(1, 40.0), (2, 6.0), (3, 5.0), (4, 4.0), (5, 3.0)]
    mm, z = min_max(keyword), standard_scores(keyword)
    assert mm[2] - mm[5] < 0.1
    assert z[2] - z[5] > 0.2


def test_no_spread_counts_members_fully_under_both() -> None:
    for normalize in (min_max, standard_scores):
        assert normalize([(7, 3.2)]) == {7: 1.0}
        assert normalize([(7, 2.0), (8, 2.0)]) == {7: 1.0, 8: 1.0}
        assert normalize([]) == {}


@pytest.mark.parametrize("normalization", ["zscore", "minmax"])
def test_found_by_both_beats_found_by_one(normalization: str) -> None:
    keyword = [(1, 12.0), (2, 11.0), (3, 2.0)]
    vector = [(4, 0.91), (2, 0.90), (5, 0.70)]
    fused = fuse_weighted(keyword, vector, 0.5, normalization)
    assert max(fused, key=lambda pid: fused[pid]) == 2
    # Missing from a list counts as that list's lowest candidate, never above it.
    assert fused[3] <= fused[1] and fused[5] <= fused[4]


def test_weight_moves_the_balance() -> None:
    keyword = [(1, 10.0), (2, 1.0), (3, 0.5)]
    vector = [(2, 0.9), (1, 0.2), (3, 0.1)]
    keyword_heavy = fuse_weighted(keyword, vector, 0.9)
    vector_heavy = fuse_weighted(keyword, vector, 0.1)
    assert max(keyword_heavy, key=lambda p: keyword_heavy[p]) == 1
    assert max(vector_heavy, key=lambda p: vector_heavy[p]) == 2


def test_rrf_uses_ranks_only() -> None:
    fused = fuse_rrf([(1, 1000.0), (2, 1.0)], [(2, 0.9), (3, 0.8)], rrf_k=60)
    assert fused[2] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1] == pytest.approx(1 / 61) and fused[3] == pytest.approx(1 / 62)
