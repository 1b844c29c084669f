"""Helpers for the evaluation tests: BEIR-layout folders written by the test itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def _write_beir(
    root: Path, *, corpus: list[dict[str, Any]], queries: list[dict[str, Any]], qrels: str, split: str = "test"
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus), "utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), "utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, "utf-8")
    return root


@pytest.fixture
def write_beir() -> Callable[..., Path]:
    """``write_beir(root, corpus=[...], queries=[...], qrels="q\\td\\t1\\n", split="test")`` -> root."""
    return _write_beir
