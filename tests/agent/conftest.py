"""Fixtures for the agent tests over the sample handbook."""

from __future__ import annotations

import pytest

from kbagent.knowledge.service import KnowledgeBase
from kbagent.sample import handbook_dir
from kbagent.settings import Settings
from kbagent.storage import Database


@pytest.fixture
def handbook(db: Database, settings: Settings) -> KnowledgeBase:
    """The sample handbook in a keyword-only knowledge base (no embedding model): what the agent and the offline
    reasoner make of its paragraphs is under test, not vector quality."""
    kb = KnowledgeBase(db, settings, None)
    kb.create_dataset("handbook")
    report = kb.ingest_paths("handbook", [handbook_dir()])
    assert report.failed == 0 and report.paragraphs > 10
    return kb
