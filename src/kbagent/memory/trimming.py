"""Smart trimming (seed 003): fit evidence paragraphs or history turns to a token budget by what matters.

Each unit gets a weighted score from pluggable scorers: relevance to the question (embedding cosine), recency,
role (user questions and confirmations above boilerplate replies) and keyword overlap. Key events (contact
details, confirmations, complaints, corrections) are pinned. Units are then picked greedily by score until the
budget, less a reserve for the prompt and the output, is used; the kept units come back in their original order.

The rule for pins: pinned units are kept first, whatever their score. When the pinned units alone are over the
budget they are all kept and nothing else is (``TrimResult.over_budget`` says so): a phone number or a
correction must never vanish silently; the caller's context guard cuts the request if it must.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from kbagent.memory.history import Turn
from kbagent.memory.summary_input import is_acknowledgement
from kbagent.tokens import estimate_tokens

Role = Literal["user", "assistant", "turn", "evidence"]


class TextEmbedder(Protocol):
    """Anything with the embedding provider's two calls (normalised float32 rows)."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Unit:
    """One piece that may be kept or dropped whole. ``position`` is its place in the original order."""

    text: str
    position: int
    role: Role = "turn"
    pinned: bool = False
    key: str = ""

    @property
    def tokens(self) -> int:
        return _tokens(self.text)


class Scorer(Protocol):
    """A scoring dimension: one score in [0, 1] per unit, higher is more worth keeping."""

    name: str

    def score(self, query: str, units: Sequence[Unit]) -> list[float]: ...


# --- text features -------------------------------------------------------------------------------------------

_LATIN = re.compile(r"[a-z0-9][a-z0-9_\-]+")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_STOP = frozenset(
    "the a an and or of to in on for is are was were be it this that what which how do does did can you i we "
    "my your our with as at by from about please".split()
)


# Stored turns and paragraphs come back turn after turn: their features are cached by text, like their vectors.
@functools.lru_cache(maxsize=20000)
def _tokens(text: str) -> int:
    return estimate_tokens(text)


@functools.lru_cache(maxsize=20000)
def _terms(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def terms(text: str) -> set[str]:
    """Latin words (lower case, no stop words) and Chinese character bigrams (single characters for runs of one)."""
    lowered = text.lower()
    found = {w for w in _LATIN.findall(lowered) if w not in _STOP}
    for run in _CJK_RUN.findall(lowered):
        if len(run) == 1:
            found.add(run)
        found.update(run[i : i + 2] for i in range(len(run) - 1))
    return found


KEY_EVENTS: dict[str, re.Pattern[str]] = {
    "phone": re.compile(
        r"(?<!\d)(?:\+?86[\s-]?)?1[3-9]\d[\s-]?\d{4}[\s-]?\d{4}(?!\d)"
        r"|\+\d{1,3}[\s-]?\d{3,4}[\s-]?\d{3,4}[\s-]?\d{0,4}|\(\d{3}\)\s?\d{3}-\d{4}"
    ),
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "confirmation": re.compile(
        r"我同意|同意购买|确认(?:购买|下单|订单|办理|提交)|请帮我(?:办理|操作|下单|提交)|就这么办"
        r"|\b(?:i agree|i confirm|confirmed|go ahead|please proceed|i accept)\b",
        re.IGNORECASE,
    ),
    "complaint": re.compile(r"投诉|不满意|太差|要求赔偿|\b(?:complain\w*|unacceptable|refund now)\b", re.IGNORECASE),
    "correction": re.compile(
        r"不对|更正|纠正|说错了|应该是|改为|改成|\b(?:actually|correction|i meant|that'?s wrong|not \w+ but)\b",
        re.IGNORECASE,
    ),
}  # fmt: skip

_BOILERPLATE = re.compile(
    r"^(?:您好|你好|好的|不客气|很高兴为您服务|请问还有什么|还有什么可以帮|如有其他问题|感谢您的"
    r"|hello|hi|you'?re welcome|glad to help|is there anything else|let me know if|happy to help)",
    re.IGNORECASE,
)


def key_events(text: str) -> list[str]:
    """Names of the key events in ``text`` (``phone``, ``email``, ``confirmation``, ``complaint``, ``correction``)."""
    return list(_key_events(text))


@functools.lru_cache(maxsize=20000)
def _key_events(text: str) -> tuple[str, ...]:
    return tuple(name for name, pattern in KEY_EVENTS.items() if pattern.search(text))


# --- scorers --------------------------------------------------------------------------------------------------


class EmbeddingCache:
    """Passage vectors by content hash, so stored turns are embedded once per process (LRU, ``max_items``)."""

    def __init__(self, max_items: int = 20000) -> None:
        self.max_items = max_items
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.misses = 0

    def passages(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.blake2b(t.encode(), digest_size=16).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        if missing:
            first = {k: t for k, t in zip(keys, texts, strict=True)}
            vectors = embedder.embed_passages([first[k] for k in missing])
            self.misses += len(missing)
            for key, vector in zip(missing, vectors, strict=True):
                self._vectors[key] = np.asarray(vector, dtype=np.float32)
        rows = []
        for key in keys:
            self._vectors.move_to_end(key)
            rows.append(self._vectors[key])
        while len(self._vectors) > self.max_items:
            self._vectors.popitem(last=False)
        return np.vstack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


class RelevanceScorer:
    """Cosine similarity of each unit to the question (negative similarity counts as 0)."""

    name = "relevance"

    def __init__(self, embedder: TextEmbedder, cache: EmbeddingCache | None = None) -> None:
        self.embedder = embedder
        self.cache = cache or EmbeddingCache()

    def score(self, query: str, units: Sequence[Unit]) -> list[float]:
        if not units:
            return []
        q = np.asarray(self.embedder.embed_queries([query]), dtype=np.float32)[0]
        m = self.cache.passages(self.embedder, [u.text for u in units])
        sims = _unit_rows(m) @ (q / (np.linalg.norm(q) or 1.0))
        return [max(0.0, float(s)) for s in sims]


class RecencyScorer:
    """Newer units score higher: exponential decay by how many units came after, ``half_life`` units."""

    name = "recency"

    def __init__(self, half_life: float = 8.0) -> None:
        self.half_life = half_life

    def score(self, query: str, units: Sequence[Unit]) -> list[float]:
        order = sorted(range(len(units)), key=lambda i: units[i].position)
        age = {index: len(units) - 1 - rank for rank, index in enumerate(order)}
        return [math.pow(0.5, age[i] / self.half_life) for i in range(len(units))]


class RoleScorer:
    """User questions, confirmations and evidence above assistant boilerplate."""

    name = "role"
    weights: dict[str, float] = {"user": 1.0, "turn": 0.8, "evidence": 0.7, "assistant": 0.5}

    def score(self, query: str, units: Sequence[Unit]) -> list[float]:
        scores = []
        for unit in units:
            value = self.weights.get(unit.role, 0.5)
            if "confirmation" in _key_events(unit.text):
                value = 1.0
            elif is_acknowledgement(unit.text) or (unit.role == "assistant" and _BOILERPLATE.match(unit.text.strip())):
                value = 0.1
            scores.append(value)
        return scores


class KeywordScorer:
    """Share of the question's terms found in the unit."""

    name = "keywords"

    def score(self, query: str, units: Sequence[Unit]) -> list[float]:
        wanted = terms(query)
        if not wanted:
            return [0.0] * len(units)
        return [len(wanted & _terms(u.text)) / len(wanted) for u in units]


@dataclass(frozen=True)
class Weighted:
    scorer: Scorer
    weight: float


def default_scorers(embedder: TextEmbedder | None = None, cache: EmbeddingCache | None = None) -> list[Weighted]:
    """Relevance 0.45 (when an embedder is given), keywords 0.25, recency 0.2, role 0.1."""
    scorers = [Weighted(KeywordScorer(), 0.25), Weighted(RecencyScorer(), 0.2), Weighted(RoleScorer(), 0.1)]
    if embedder is not None:
        scorers.insert(0, Weighted(RelevanceScorer(embedder, cache), 0.45))
    return scorers


# --- selection ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrimResult:
    kept: list[Unit]
    dropped: list[Unit]
    tokens: int
    budget: int
    over_budget: bool
    scores: dict[int, float] = field(default_factory=dict)


def trim(
    units: Sequence[Unit],
    query: str,
    *,
    budget_tokens: int,
    reserve_tokens: int = 0,
    scorers: Sequence[Weighted] | None = None,
    pin: Callable[[Unit], bool] | None = None,
) -> TrimResult:
    """Keep the best units within ``budget_tokens - reserve_tokens``, in their original order (by ``position``).

    ``pin`` decides which units must stay (default: ``unit.pinned`` or a key event in its text); see the module
    docstring for pins over the budget. ``scorers`` default to ``default_scorers()`` (no embedding relevance)."""
    budget = max(budget_tokens - reserve_tokens, 0)
    chosen_scorers = list(scorers) if scorers is not None else default_scorers()
    is_pinned = pin or (lambda u: u.pinned or bool(_key_events(u.text)))
    totals = [0.0] * len(units)
    weight_sum = sum(w.weight for w in chosen_scorers) or 1.0
    for weighted in chosen_scorers:
        values = weighted.scorer.score(query, units)
        # Each dimension is scaled so its best unit scores 1: cosines and keyword shares live on small, uneven
        # scales, and unscaled they would be drowned by recency and role.
        top = max(values, default=0.0)
        for i, value in enumerate(values):
            totals[i] += weighted.weight * (value / top if top > 0 else 0.0) / weight_sum
    costs = [u.tokens for u in units]
    pinned = [i for i, u in enumerate(units) if is_pinned(u)]
    pinned_cost = sum(costs[i] for i in pinned)
    keep = set(pinned)
    used = pinned_cost
    if pinned_cost <= budget:
        for i in sorted(range(len(units)), key=lambda i: (-totals[i], -units[i].position)):
            if i not in keep and used + costs[i] <= budget:
                keep.add(i)
                used += costs[i]
    ordered = sorted(range(len(units)), key=lambda i: units[i].position)
    return TrimResult(
        kept=[units[i] for i in ordered if i in keep],
        dropped=[units[i] for i in ordered if i not in keep],
        tokens=used,
        budget=budget,
        over_budget=used > budget,
        scores={units[i].position: totals[i] for i in range(len(units))},
    )


def turn_units(turns: Sequence[Turn], *, pin_latest: bool = True) -> list[Unit]:
    """History turns as units (question and answer together, so a pair is never split); the latest pinned."""
    return [
        Unit(
            text=f"User: {t.question}\nAssistant: {t.answer}",
            position=i,
            role="turn",
            pinned=pin_latest and i == len(turns) - 1,
            key=f"record:{t.id}",
        )
        for i, t in enumerate(turns)
    ]


def trim_turns(
    turns: Sequence[Turn],
    query: str,
    *,
    budget_tokens: int,
    reserve_tokens: int = 0,
    scorers: Sequence[Weighted] | None = None,
) -> list[Turn]:
    """The turns worth keeping for ``query`` within the budget, oldest first; the latest turn always stays."""
    result = trim(turn_units(turns), query, budget_tokens=budget_tokens, reserve_tokens=reserve_tokens, scorers=scorers)
    return [turns[u.position] for u in result.kept]


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms
