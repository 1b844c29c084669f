"""Smart trimming (seed 003): scoring, pins, reserve, cache, and its invariants as properties."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kbagent.memory.history import Turn
from kbagent.memory.trimming import (
    EmbeddingCache,
    RecencyScorer,
    RelevanceScorer,
    Unit,
    Weighted,
    default_scorers,
    key_events,
    terms,
    trim,
    trim_turns,
)


class TermEmbedder:
    """Our seam: a bag of terms hashed into buckets, normalised. Texts sharing words are close."""

    def __init__(self, dimension: int = 128) -> None:
        self.dimension = dimension
        self.passages_embedded = 0

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in terms(text):
                out[row, int(hashlib.md5(term.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages_embedded += len(texts)
        return self._vectors(texts)


SUPPORT_CHAT = [
    ("user", "你们公司的退货政策是什么？"),
    ("assistant", "我们支持7天无理由退货，退货需提供订单截图和开箱视频作为材料。"),
    ("user", "如果商品已经使用过了呢？"),
    ("assistant", "已使用的商品不支持无理由退货，但若存在质量问题可申请售后。"),
    ("user", "产品A的价格是多少？"),
    ("assistant", "产品A的价格是2999元，保修两年。"),
    ("user", "保修期内维修要收费吗？"),
    ("assistant", "保修期内非人为损坏免费维修。"),
    ("user", "明白了，谢谢。"),
    ("assistant", "不客气，请问还有什么可以帮您？"),
    ("user", "另外，发票怎么开？"),
    ("assistant", "下单时勾选开具发票并填写抬头即可。"),
]


def chat_units() -> list[Unit]:
    return [Unit(text, i, role) for i, (role, text) in enumerate(SUPPORT_CHAT)]  # type: ignore[arg-type]


def test_an_old_relevant_turn_survives_where_keeping_the_last_turns_would_lose_it() -> None:
    units = chat_units()
    query = "之前说的退货材料清单，能再发一遍吗？"
    budget = sum(u.tokens for u in units[-4:])
    recency_only = trim(units, query, budget_tokens=budget, scorers=[Weighted(RecencyScorer(), 1.0)])
    assert units[1] not in recency_only.kept  # "砍头": the material list is gone
    smart = trim(units, query, budget_tokens=budget, scorers=default_scorers(TermEmbedder()))
    assert units[1] in smart.kept
    assert smart.tokens <= budget
    positions = [u.position for u in smart.kept]
    assert positions == sorted(positions)
    # Boilerplate and thanks are the first to go.
    assert units[9] not in smart.kept and units[8] not in smart.kept


def test_key_events_are_pinned_and_survive_a_tight_budget() -> None:
    filler = [Unit(f"我们聊了一些关于产品功能的一般性问题，编号{i}。" * 3, i, "assistant") for i in range(20)]
    events = [
        Unit("我的手机号是 138 1234 5678，请联系我", 20, "user"),
        Unit("email me at li.wei+orders@example.com", 21, "user"),
        Unit("不对，地址应该是海淀区中关村大街1号", 22, "user"),
        Unit("I want to complain about the late delivery", 23, "user"),
        Unit("我同意购买金卡会员", 24, "user"),
    ]
    units = filler[:10] + events + filler[10:]
    units = [Unit(u.text, i, u.role) for i, u in enumerate(units)]
    pinned_cost = sum(estimate for estimate in (u.tokens for u in units if key_events(u.text)))
    result = trim(units, "会员积分怎么兑换", budget_tokens=pinned_cost + 30)
    kept = {u.text for u in result.kept}
    assert all(e.text in kept for e in events)
    assert result.tokens <= pinned_cost + 30
    assert [key_events(e.text) for e in events] == [
        ["phone"],
        ["email"],
        ["correction"],
        ["complaint"],
        ["confirmation"],
    ]


def test_pins_over_the_budget_are_all_kept_and_nothing_else() -> None:
    units = [Unit("联系电话 13912345678 " + "说明" * 40, 0, "user"), Unit("普通内容", 1), Unit("更正：是周三", 2)]
    result = trim(units, "电话", budget_tokens=20)
    assert result.over_budget
    assert [u.position for u in result.kept] == [0, 2]


def test_reserve_for_prompt_and_output_comes_off_the_budget() -> None:
    units = [Unit(f"paragraph {i} about leave policy " * 5, i, "evidence") for i in range(10)]
    full = trim(units, "leave policy", budget_tokens=200)
    reserved = trim(units, "leave policy", budget_tokens=200, reserve_tokens=100)
    assert reserved.tokens <= 100 < full.tokens <= 200
    assert reserved.budget == 100


def test_embeddings_of_stored_turns_are_cached() -> None:
    embedder = TermEmbedder()
    cache = EmbeddingCache()
    scorers = default_scorers(embedder, cache)
    units = chat_units()
    trim(units, "发票", budget_tokens=80, scorers=scorers)
    assert embedder.passages_embedded == len(units)
    more = [*units, Unit("新的问题：积分怎么用？", len(units), "user")]
    trim(more, "积分", budget_tokens=80, scorers=scorers)
    assert embedder.passages_embedded == len(units) + 1


def test_scoring_dimensions_are_pluggable() -> None:
    class PrefersPrices:
        name = "prices"

        def score(self, query: str, units: Sequence[Unit]) -> list[float]:
            return [1.0 if "2999" in u.text else 0.0 for u in units]

    units = chat_units()
    budget = units[5].tokens
    assert 5 not in [u.position for u in trim(units, "发票", budget_tokens=budget).kept]
    result = trim(units, "发票", budget_tokens=budget, scorers=[Weighted(PrefersPrices(), 1.0)])
    assert [u.position for u in result.kept] == [5]


def test_trim_turns_keeps_the_latest_turn_and_pairs_together() -> None:
    turns = [Turn(i + 1, f"question {i} about topic {i % 3}", f"answer {i} " * 10) for i in range(12)]
    kept = trim_turns(turns, "topic 1", budget_tokens=120, scorers=default_scorers(TermEmbedder()))
    assert kept[-1] == turns[-1]
    assert [t.id for t in kept] == sorted(t.id for t in kept)
    assert sum(t.tokens for t in kept) <= 120 + 8 * len(kept)  # unit text adds "User:"/"Assistant:" labels


def test_relevance_scorer_without_units_is_empty() -> None:
    assert RelevanceScorer(TermEmbedder()).score("q", []) == []


pieces = st.sampled_from([*"abcde 发票退货材料，。", "13812345678 ", "更正 ", "ok ", "leave policy "])
texts = st.lists(pieces, max_size=30).map("".join)
unit_lists = st.lists(st.tuples(texts, st.sampled_from(["user", "assistant", "turn", "evidence"]), st.booleans()))


@settings(max_examples=200, deadline=None)
@given(unit_lists, texts, st.integers(min_value=0, max_value=300), st.integers(min_value=0, max_value=100))
def test_properties_budget_order_pins(raw: list[tuple[str, str, bool]], query: str, budget: int, reserve: int) -> None:
    units = [Unit(text, i * 3, role, pinned) for i, (text, role, pinned) in enumerate(raw)]  # type: ignore[arg-type]
    result = trim(units, query, budget_tokens=budget, reserve_tokens=reserve, scorers=default_scorers(TermEmbedder()))
    available = max(budget - reserve, 0)
    pinned = [u for u in units if u.pinned or key_events(u.text)]
    pinned_cost = sum(u.tokens for u in pinned)
    # Fits the budget, unless the pinned units alone exceed it: then exactly the pinned units are kept.
    if pinned_cost <= available:
        assert result.tokens <= available and not result.over_budget
    else:
        assert result.kept == pinned and result.over_budget
    # Every pinned unit is kept; chronological order is restored; kept + dropped is everything, once.
    assert all(u in result.kept for u in pinned)
    assert [u.position for u in result.kept] == sorted(u.position for u in result.kept)
    assert sorted(u.position for u in result.kept + result.dropped) == [u.position for u in units]
    assert result.tokens == sum(u.tokens for u in result.kept)
    # Greedy is not wasteful: no dropped unit would still have fitted.
    if not result.over_budget:
        assert all(result.tokens + u.tokens > available for u in result.dropped)
