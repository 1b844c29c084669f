"""The formats through the ingestion pipeline: a folder with one bad file carries on, rows and pages survive."""

from __future__ import annotations

from pathlib import Path

from parser_fixtures import docx_bytes, text_pdf, xlsx_bytes

from kbagent.knowledge.service import KnowledgeBase


def test_folder_with_bad_files_carries_on(kb: KnowledgeBase, tmp_path: Path, cjk_font: Path) -> None:
    folder = tmp_path / "upload"
    folder.mkdir()
    (folder / "handbook.docx").write_bytes(docx_bytes())
    (folder / "staff.xlsx").write_bytes(xlsx_bytes())
    (folder / "policy.pdf").write_bytes(text_pdf(cjk_font))
    (folder / "locked.pdf").write_bytes(text_pdf(cjk_font, password="pw"))
    (folder / "broken.docx").write_bytes(docx_bytes()[:2000])
    kb.create_dataset("office")
    report = kb.ingest_paths("office", [folder])
    failures = {Path(f.source).name: f.reason for f in report.failures}
    assert set(failures) == {"locked.pdf", "broken.docx"}
    assert "password-protected" in failures["locked.pdf"]
    assert "not a readable" in failures["broken.docx"]
    assert report.added == 3

    row = kb.search(["office"], "李四 研发部", top_k=1, mode="keyword")[0]
    assert row.document_name == "staff.xlsx"
    assert row.content == "姓名: 李四; 部门: 研发部; 工号: 1002; 入职日期: 2021-07-15"
    assert row.title_path[0] == "员工名单"

    page = kb.search(["office"], "报销 三十日", top_k=1, mode="keyword")[0]
    assert page.document_name == "policy.pdf"
    assert page.page == 2 and not page.ocr
    assert page.title_path[-1] == "1.1 报销范围"


def test_password_opens_encrypted_pdf_and_pages_report_progress(
    kb: KnowledgeBase, tmp_path: Path, cjk_font: Path
) -> None:
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(text_pdf(cjk_font, password="pw"))
    kb.create_dataset("secret")
    seen: list[str] = []
    report = kb.ingest_paths("secret", [locked], progress=lambda done, total, what: seen.append(what), password="pw")
    assert report.failures == [] and report.added == 1
    assert kb.search(["secret"], "报销 三十日", top_k=1, mode="keyword")[0].page == 2
    # The parser's page steps reach the caller's progress callback, named after the file.
    assert any(what.startswith("locked.pdf: ") for what in seen), seen
