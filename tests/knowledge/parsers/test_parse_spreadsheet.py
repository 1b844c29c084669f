"""Spreadsheets: one atomic row block per data row carrying its column names; hostile sheets stay bounded."""

from __future__ import annotations

import pytest
from parser_fixtures import xlsx_bytes, xlsx_with_empty_rows

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import detect_format, parse_document
from kbagent.knowledge.parsers.base import ParseLimits
from kbagent.knowledge.parsers.spreadsheet import EMPTY_RUN_LIMIT


def test_xlsx_rows_carry_their_headers(limits: ParseLimits) -> None:
    doc = parse_document(xlsx_bytes(), "staff.xlsx", limits)
    assert doc.format == "xlsx"
    assert [(b.kind, b.level, b.atomic, b.text) for b in doc.blocks] == [
        ("heading", 1, False, "员工名单"),
        ("paragraph", 0, False, "2024 年员工名单"),  # the lone cell above the header is the sheet's caption
        ("row", 0, True, "姓名: 张三; 部门: 财务部; 工号: 1001; 入职日期: 2020-03-01"),
        ("row", 0, True, "姓名: 李四; 部门: 研发部; 工号: 1002; 入职日期: 2021-07-15"),
        ("heading", 1, False, "Numbers"),
        ("row", 0, True, "A: 1; B: 2; C: 3"),  # a numeric first row is data, columns named by letter
        ("row", 0, True, "A: 4; B: 5; C: 6"),
    ]


def test_million_empty_rows_are_bounded(limits: ParseLimits) -> None:
    doc = parse_document(xlsx_with_empty_rows(1_000_000), "sparse.xlsx", limits)
    assert [b.text for b in doc.blocks if b.kind == "row"] == ["名称: 苹果; 数量: 3"]
    assert doc.meta["rows"] == 1
    assert "after 10000 empty rows" in doc.meta["warnings"][0]


def test_data_after_a_long_gap_is_reported_not_silently_lost(limits: ParseLimits) -> None:
    doc = parse_document(xlsx_with_empty_rows(EMPTY_RUN_LIMIT + 5, data_after_gap=True), "gap.xlsx", limits)
    assert "迟到的梨" not in "".join(b.text for b in doc.blocks)
    assert "later rows not read" in doc.meta["warnings"][0]
    short = parse_document(xlsx_with_empty_rows(100, data_after_gap=True), "gap.xlsx", limits)
    assert short.blocks[-1].text == "名称: 迟到的梨"
    assert short.meta["warnings"] == []


def test_too_many_rows_is_an_error() -> None:
    with pytest.raises(DocumentError, match=r"more than 1 rows, over the limit \(max_rows\)"):
        parse_document(xlsx_bytes(), "staff.xlsx", ParseLimits(max_rows=1))


def test_csv_utf8_and_gbk(limits: ParseLimits) -> None:
    text = "城市,住宿标准,餐补\n北京,600,100\n成都,450,80\n"
    for encoding in ("utf-8", "gbk"):
        doc = parse_document(text.encode(encoding), "rates.csv", limits)
        assert doc.format == "csv"
        assert [b.text for b in doc.blocks] == [
            "城市: 北京; 住宿标准: 600; 餐补: 100",
            "城市: 成都; 住宿标准: 450; 餐补: 80",
        ]
        assert all(b.kind == "row" and b.atomic for b in doc.blocks)


def test_csv_semicolons_quotes_and_empty_lines(limits: ParseLimits) -> None:
    data = b'name;note\n\n"Wang, Li";"says ""hi"""\n;\nZhao;\n'
    doc = parse_document(data, "people.csv", limits)
    assert [b.text for b in doc.blocks] == ['name: Wang, Li; note: says "hi"', "name: Zhao"]


def test_broken_spreadsheets(limits: ParseLimits) -> None:
    data = xlsx_bytes()
    with pytest.raises(DocumentError, match="staff.xlsx"):
        parse_document(data[: len(data) // 2], "staff.xlsx", limits)
    assert detect_format(b"a,b\x00\x01\x02\n", "x.csv") == "binary"
    with pytest.raises(DocumentError, match="binary data under a text extension"):
        parse_document(b"a,b\x00\x01\x02\x03\x04\n" * 20, "x.csv", limits)
    with pytest.raises(DocumentError, match="no rows with data"):
        parse_document(b",,,\n,,,\n", "empty.csv", limits)
    single = parse_document(b"only,one,row\n", "one.csv", limits)  # a lone row is data, not a header
    assert [b.text for b in single.blocks] == ["A: only; B: one; C: row"]
