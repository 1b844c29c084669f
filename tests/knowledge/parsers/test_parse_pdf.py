"""PDF: text layer with headings, tables and page numbers; OCR for scanned pages; encrypted and broken files."""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_fixtures import scanned_pdf, text_pdf

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import detect_format, parse_document
from kbagent.knowledge.parsers.base import ParseLimits


def test_text_pdf_keeps_headings_tables_and_pages(cjk_font: Path, limits: ParseLimits) -> None:
    progress: list[tuple[int, int]] = []
    doc = parse_document(text_pdf(cjk_font), "policy.pdf", limits, lambda d, t, _: progress.append((d, t)))
    assert doc.format == "pdf"
    headings = [(b.text, b.level, b.page) for b in doc.blocks if b.kind == "heading"]
    # Bookmarked headings take the bookmark's level; the unbookmarked 20 pt heading on page 3 is sized as level 1.
    assert headings == [("第一章 总则", 1, 1), ("1.1 报销范围", 2, 2), ("Chapter 2 Travel Insurance", 1, 3)]
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert len(tables) == 1 and tables[0].page == 1
    assert tables[0].text.splitlines() == [
        "| 城市 | 住宿标准 | 餐补 |",
        "|---|---|---|",
        "| 北京 | 600元 | 100元 |",
        "| 成都 | 450元 | 80元 |",
    ]
    paragraphs = {b.text: b.page for b in doc.blocks if b.kind == "paragraph"}
    assert paragraphs["交通费、住宿费和市内交通费可以报销。报销须在返回后三十日内提交。"] == 2
    assert any(t.startswith("Every employee travelling abroad") and p == 3 for t, p in paragraphs.items())
    assert all(b.page is not None and not b.ocr for b in doc.blocks)
    # The running footer repeats on every page and is dropped.
    assert not any("内部资料" in b.text for b in doc.blocks)
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert doc.meta["pages"] == 3 and doc.meta["ocr_pages"] == []


def test_password_protected_pdf(cjk_font: Path) -> None:
    data = text_pdf(cjk_font, password="s3cret")
    with pytest.raises(DocumentError, match="password-protected"):
        parse_document(data, "locked.pdf", ParseLimits())
    with pytest.raises(DocumentError, match="password supplied"):
        parse_document(data, "locked.pdf", ParseLimits(password="wrong"))
    doc = parse_document(data, "locked.pdf", ParseLimits(password="s3cret"))
    assert [b.text for b in doc.blocks if b.kind == "heading"][0] == "第一章 总则"


def test_too_many_pages(cjk_font: Path) -> None:
    with pytest.raises(DocumentError, match=r"3 pages, over the limit of 2 pages \(max_pages\)"):
        parse_document(text_pdf(cjk_font), "long.pdf", ParseLimits(max_pages=2))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: d[: len(d) // 2], id="truncated"),
        pytest.param(lambda d: b"%PDF-1.7\n" + bytes(range(256)) * 40, id="garbage-after-header"),
    ],
)
def test_corrupt_pdf(cjk_font: Path, limits: ParseLimits, damage) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DocumentError, match="broken.pdf"):
        parse_document(damage(text_pdf(cjk_font)), "broken.pdf", limits)


def test_html_named_pdf_is_parsed_as_html(limits: ParseLimits) -> None:
    page = (
        "<!DOCTYPE html><html><head><title>登录</title></head>"
        "<body><h1>会话已过期</h1><p>请重新登录。</p></body></html>"
    )
    data = page.encode()
    assert detect_format(data, "report.pdf") == "html"
    doc = parse_document(data, "report.pdf", limits)
    assert doc.format == "html"
    assert "请重新登录。" in [b.text for b in doc.blocks]


def test_pdf_parser_refuses_non_pdf_bytes(limits: ParseLimits) -> None:
    from kbagent.knowledge.parsers.pdf import parse_pdf

    with pytest.raises(DocumentError, match="not a PDF"):
        parse_pdf(b"<html><body>hi</body></html>", "x.pdf", limits)


@pytest.mark.slow
def test_scanned_page_goes_through_ocr(cjk_font: Path, limits: ParseLimits) -> None:
    lines = ["扫描件：差旅报销审批单", "Approved by the finance department"]
    progress: list[str] = []
    doc = parse_document(scanned_pdf(cjk_font, lines), "scan.pdf", limits, lambda d, t, what: progress.append(what))
    assert doc.meta["ocr_pages"] == [1]
    assert all(b.ocr and b.page == 1 for b in doc.blocks)
    text = "".join(b.text for b in doc.blocks).replace(" ", "")
    assert "扫描件：差旅报销审批单" in text
    assert "Approvedbythefinancedepartment" in text
    assert progress == ["OCR scan.pdf page 1/1"]


def test_nearly_blank_page_without_a_picture_is_not_ocred(cjk_font: Path, limits: ParseLimits) -> None:
    from parser_fixtures import new_pdf

    pdf = new_pdf(cjk_font)
    pdf.add_page()
    pdf.set_font("cjk", size=11)
    pdf.set_xy(10, 20)
    pdf.multi_cell(180, 6, text="正文在第一页。This page has the only paragraph of the file.")
    pdf.add_page()
    pdf.set_xy(100, 150)
    pdf.cell(text="（本页无正文）")
    doc = parse_document(bytes(pdf.output()), "sparse.pdf", limits)
    assert doc.meta["ocr_pages"] == []
    assert [(b.page, b.text) for b in doc.blocks] == [
        (1, "正文在第一页。This page has the only paragraph of the file."),
        (2, "（本页无正文）"),
    ]


def test_contents_leaders_section_numbers_and_roman_folios(cjk_font: Path, limits: ParseLimits) -> None:
    from parser_fixtures import new_pdf

    pdf = new_pdf(cjk_font)
    pdf.add_page()
    pdf.set_font("cjk", size=11)
    for y, text in (
        (20, "1 Scope " + ". " * 30 + "1"),
        (27, "2.1 Terms and definitions " + ". " * 20 + "2"),
        (40, "1. Submit the form."),
        (47, "2. Wait for approval."),
    ):
        pdf.set_xy(10, y)
        pdf.cell(text=text)
    pdf.set_xy(100, 287)
    pdf.cell(text="ii")
    doc = parse_document(bytes(pdf.output()), "front.pdf", limits)
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("paragraph", "1 Scope … 1"),  # dot leaders shrunk to one ellipsis
        ("paragraph", "2.1 Terms and definitions … 2"),  # a section number, not a list item
        ("list", "1. Submit the form."),
        ("list", "2. Wait for approval."),
    ]  # and the roman folio "ii" at the foot of the page is gone
