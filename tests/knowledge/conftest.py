"""Fixtures for the knowledge base tests: a deterministic test embedder (our own seam) and a KnowledgeBase."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pytest

from kbagent.knowledge.analysis import analyze
from kbagent.knowledge.embeddings import normalise
from kbagent.knowledge.service import KnowledgeBase
from kbagent.settings import Settings
from kbagent.storage import Database


class HashingEmbedder:
    """Bag of analysed terms hashed into ``dimension`` buckets: texts sharing words are close, others are
    not. Deterministic and instant, so most tests need not run the real model. Counts the texts it embeds."""

    def __init__(self, dimension: int = 64, model: str = "test-hashing") -> None:
        self.model = f"{model}-{dimension}"
        self.dimension = dimension
        self.passages_embedded = 0

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in analyze(text):
                bucket = int.from_bytes(hashlib.md5(term.encode()).digest()[:4], "little") % self.dimension
                out[row, bucket] += 1.0
        return normalise(out)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages_embedded += len(texts)
        return self._vectors(texts)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def kb(db: Database, settings: Settings, embedder: HashingEmbedder) -> KnowledgeBase:
    return KnowledgeBase(db, settings, embedder)


@pytest.fixture
def embedder_class() -> type[HashingEmbedder]:
    """The class itself, for tests that need a second embedder (another model or dimension)."""
    return HashingEmbedder
