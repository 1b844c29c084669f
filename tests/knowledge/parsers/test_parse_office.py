"""Word and PowerPoint: structure kept (headings, lists, tables, slides, notes), headers/footers left out."""

from __future__ import annotations

import io
import zipfile

import pytest
from parser_fixtures import docx_bytes, pptx_bytes, zip_bytes

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import detect_format, parse_document
from kbagent.knowledge.parsers.base import ParseLimits


def test_docx_headings_lists_tables(limits: ParseLimits) -> None:
    doc = parse_document(docx_bytes(), "handbook.docx", limits)
    assert doc.format == "docx"
    assert [(b.kind, b.level, b.text) for b in doc.blocks] == [
        ("heading", 1, "员工手册"),
        ("paragraph", 0, "欢迎加入星河科技。本手册说明公司的基本制度。"),
        ("heading", 2, "考勤制度"),
        ("paragraph", 0, "工作时间为每周一至周五，上午九点至下午六点。"),
        ("list", 0, "- 迟到三次以上扣除当月全勤奖\n- 请假须提前一天在系统中申请"),
        ("table", 0, "| 假期类型 | 天数 | 是否带薪 |\n|---|---|---|\n| 年假 | 10 | 是 |\n| 病假 | 5 | 部分 |"),
        ("heading", 2, "Security"),
        ("paragraph", 0, "Badges must be worn at all times inside the office."),
    ]
    text = "\n".join(b.text for b in doc.blocks)
    assert "HEADER-TEXT" not in text and "FOOTER-TEXT" not in text


def test_pptx_one_section_per_slide_with_notes(limits: ParseLimits) -> None:
    doc = parse_document(pptx_bytes(), "review.pptx", limits)
    assert doc.format == "pptx"
    assert [(b.kind, b.page, b.atomic, b.text) for b in doc.blocks] == [
        ("heading", 1, False, "季度销售回顾"),
        ("paragraph", 1, False, "华东区销售额增长 23%"),
        ("paragraph", 1, True, "Notes: 强调华东区的增长来自新客户"),
        ("heading", 2, False, "Regional figures"),
        ("table", 2, False, "| Region | Revenue |\n|---|---|\n| East | 1200 |\n| West | 800 |"),
        ("heading", 3, False, "Slide 3"),  # a slide without a title still opens its own section
        ("paragraph", 3, False, "Thank you 谢谢"),
    ]
    assert all(b.level == 1 for b in doc.blocks if b.kind == "heading")


def test_office_files_are_detected_by_content_not_name() -> None:
    assert detect_format(docx_bytes(), "upload.bin") == "docx"
    assert detect_format(pptx_bytes(), "slides.zip") == "pptx"
    assert detect_format(zip_bytes({"a.txt": b"hello"}), "a.docx") == "zip"


def _replace_member(data: bytes, member: str, content: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info, content if info.filename == member else source.read(info))
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "make", "member"),
    [("a.docx", docx_bytes, "word/document.xml"), ("a.pptx", pptx_bytes, "ppt/slides/slide1.xml")],
)
def test_damaged_office_files(name: str, make, member: str, limits: ParseLimits) -> None:  # type: ignore[no-untyped-def]
    data = make()
    with pytest.raises(DocumentError, match=name):
        parse_document(data[: len(data) // 2], name, limits)
    with pytest.raises(DocumentError, match=name):
        parse_document(_replace_member(data, member, b"<not xml"), name, limits)


def test_office_zip_bomb_is_refused_before_inflating(limits: ParseLimits) -> None:
    bomb = _replace_member(docx_bytes(), "word/document.xml", b"<" + b" " * (50 * 1024 * 1024))
    with pytest.raises(DocumentError, match=r"max_archive_ratio"):
        parse_document(bomb, "bomb.docx", limits)
