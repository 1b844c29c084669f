"""Layout helpers shared by the parsers: joining lines, Markdown tables, OCR reading order and paragraphs."""

from __future__ import annotations

from kbagent.knowledge.parsers.markdown_table import to_markdown_table
from kbagent.knowledge.parsers.ocr import OcrLine, lines_to_blocks, reading_order
from kbagent.knowledge.parsers.text_joining import is_usable_text, join_lines


def test_join_lines_per_script() -> None:
    assert join_lines(["员工出差前应当提交", "出差申请。"]) == "员工出差前应当提交出差申请。"
    assert join_lines(["Claims are due within", "thirty days."]) == "Claims are due within thirty days."
    assert join_lines(["reimburse-", "ment is paid monthly"]) == "reimbursement is paid monthly"
    assert join_lines(["住宿标准为", "600 元"]) == "住宿标准为600 元"
    assert join_lines(["  ", "only line  "]) == "only line"


def test_unusable_text_layers_are_recognised() -> None:
    assert is_usable_text("正常的文字 normal text")
    assert not is_usable_text(
        "\ue000\ue001\ue002\ufffd\ufffdab"
    )  # private-use glyph codes from a font without ToUnicode
    assert not is_usable_text("   ")


def test_markdown_table_escapes_and_pads() -> None:
    assert to_markdown_table([["a|b", "c"], ["1\n2"], ["", ""]]) == "| a\\|b | c |\n|---|---|\n| 1 2 |  |"
    assert to_markdown_table([["", ""]]) == ""


def _line(text: str, left: float, top: float, right: float | None = None, height: float = 20) -> OcrLine:
    return OcrLine(text, left, top, right if right is not None else left + 10 * len(text), top + height, 0.99)


def test_ocr_reading_order_rows_then_left_to_right() -> None:
    shuffled = [
        _line("right", 300, 102),  # same row as "left", a little lower: still the same row
        _line("second row", 10, 150),
        _line("left", 10, 100),
        _line("title", 10, 20),
    ]
    assert [ln.text for ln in reading_order(shuffled)] == ["title", "left", "right", "second row"]


def test_ocr_lines_become_paragraphs_at_gaps() -> None:
    lines = [
        _line("第一段第一行", 10, 0),
        _line("第一段第二行", 10, 25),  # gap 5 < 0.8 line heights: same paragraph
        _line("Second paragraph", 10, 80),  # gap 35: a new paragraph
        _line("continues here", 10, 104),
    ]
    blocks = lines_to_blocks(lines, page=3)
    assert [(b.text, b.page, b.ocr) for b in blocks] == [
        ("第一段第一行第一段第二行", 3, True),
        ("Second paragraph continues here", 3, True),
    ]
