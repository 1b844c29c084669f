"""The sample handbook ships with the package and goes through the real parsers and chunker cleanly."""

from __future__ import annotations

import pytest

from kbagent.knowledge.chunking import chunk_document
from kbagent.knowledge.parsers import SUPPORTED_EXTENSIONS, parse_document
from kbagent.knowledge.parsers.base import ParseLimits
from kbagent.sample import handbook_dir


def test_handbook_has_chinese_and_english_documents_in_every_text_format() -> None:
    files = sorted(handbook_dir().iterdir())
    assert 5 <= len(files) <= 7
    assert {f.suffix for f in files} == {".txt", ".md", ".html"}
    assert all(f.suffix in SUPPORTED_EXTENSIONS for f in files)
    chinese = [f for f in files if "zh" in f.stem]
    assert chinese and len(chinese) < len(files)


def test_a_chinese_text_file_is_saved_in_a_legacy_encoding() -> None:
    # Keeps the GBK/GB18030 detection path exercised by `make run`, as users' files would.
    legacy = [f for f in handbook_dir().glob("*.txt") if "zh" in f.stem]
    assert legacy
    for path in legacy:
        with pytest.raises(UnicodeDecodeError):
            path.read_bytes().decode("utf-8")
        doc = parse_document(path.read_bytes(), path.name, ParseLimits())
        assert doc.meta["encoding"] == "gb18030"
        assert "报销" in doc.blocks[1].text or "报销" in (doc.title or "")


@pytest.mark.parametrize("name", sorted(p.name for p in handbook_dir().iterdir()))
def test_every_document_parses_into_titled_chunks(name: str) -> None:
    path = handbook_dir() / name
    doc = parse_document(path.read_bytes(), name, ParseLimits())
    chunks = chunk_document(doc, target_tokens=400, min_tokens=40)
    assert len(chunks) >= 5
    assert all(c.token_count <= 400 for c in chunks)
    assert all(c.title_path for c in chunks)  # every document has headings a reader would see
    assert "\ufffd" not in "".join(c.content for c in chunks)
    # no boilerplate from page chrome (navigation, footers) reaches the knowledge base
    assert not any(c.content.startswith(("©", "Intranet home", "内网首页")) for c in chunks)


def test_cross_document_facts_are_present_on_both_sides() -> None:
    texts = []
    for path in handbook_dir().iterdir():
        doc = parse_document(path.read_bytes(), path.name, ParseLimits())
        texts.append(" ".join(b.text for b in doc.blocks))
    everything = " ".join(texts)
    # Travel claims: the travel policy points to the expense policy, which holds the 30-day deadline.
    assert "Expense Reimbursement Policy" in everything and "30个自然日内提交报销" in everything
    # Leave around the Spring Festival: the holiday notice overrides the leave policy's notice period.
    assert "提前15个工作日" in everything and "提前10个工作日提交申请" in everything
