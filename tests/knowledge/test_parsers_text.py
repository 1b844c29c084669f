"""Text formats (.txt, .md, .html): encodings, structure, format detection and every kind of bad input."""

from __future__ import annotations

import codecs
import os
import random

import pytest

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import SUPPORTED_EXTENSIONS, detect_format, parse_document
from kbagent.knowledge.parsers.base import ParsedDocument, ParseLimits

LIMITS = ParseLimits()
CHINESE = "第一章 总则\n\n员工每年享有带薪年假，具体天数按累计工龄计算。报销须在费用发生后三十日内提交。"


def parse(data: bytes, name: str, limits: ParseLimits = LIMITS) -> ParsedDocument:
    return parse_document(data, name, limits)


def texts(doc: ParsedDocument) -> list[tuple[str, int, str]]:
    return [(b.kind, b.level, b.text) for b in doc.blocks]


# --- encodings ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (CHINESE.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF8 + CHINESE.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF16_LE + CHINESE.encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + CHINESE.encode("utf-16-be"), "utf-16-be"),
        (CHINESE.encode("gbk"), "gb18030"),
        (CHINESE.encode("gb18030"), "gb18030"),
    ],
    ids=["utf8", "utf8-bom", "utf16le-bom", "utf16be-bom", "gbk", "gb18030"],
)
def test_chinese_text_decodes_in_every_common_encoding(data: bytes, encoding: str) -> None:
    doc = parse(data, "制度.txt")
    assert doc.meta["encoding"] == encoding
    assert texts(doc) == [
        ("heading", 1, "第一章 总则"),
        ("paragraph", 0, "员工每年享有带薪年假，具体天数按累计工龄计算。报销须在费用发生后三十日内提交。"),
    ]


def test_gb18030_only_characters_survive() -> None:
    # 㐀 (CJK extension A) and € have no GBK code: a GBK reading would fail or garble them.
    text = "生僻字㐀测试，价格为100€，员工须知：报销须附发票原件。" * 3
    doc = parse(text.encode("gb18030"), "a.txt")
    assert doc.blocks[0].text == text


def test_big5_traditional_chinese_decodes() -> None:
    text = "員工每年享有帶薪年假，具體天數按累計工齡計算。請假須提前三個工作日申請。"
    doc = parse(text.encode("big5"), "繁體.txt")
    assert doc.blocks[0].text == text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [("报销", "gbk"), ("年假申请", "gbk"), ("差旅费用", "gb18030"), ("年假申請", "big5"), ("第一章 總則", "big5")],
)
def test_very_short_chinese_files_are_read_as_chinese(text: str, encoding: str) -> None:
    # A few bytes are ambiguous between GBK, Big5 and single-byte codecs; the reading that is Chinese wins.
    assert parse(text.encode(encoding), "short.txt").blocks[0].text == text


def test_windows_line_endings_are_normalised() -> None:
    doc = parse(b"first paragraph\r\nsame paragraph\r\n\r\nsecond", "a.txt")
    assert [b.text for b in doc.blocks] == ["first paragraph\nsame paragraph", "second"]


# --- plain-text structure -------------------------------------------------------------------------------


def test_plain_text_headings_and_paragraphs() -> None:
    source = "\n".join(
        [
            "Travel Policy",
            "=============",
            "",
            "Applies to everyone.",
            "",
            "Booking",
            "-------",
            "Book through the portal.",
            "",
            "第二章 报销",
            "第一节 范围",
            "一、适用对象",
            "（一）正式员工",
            "第五条 员工出差须事先申请。",
            "本条自发布之日起施行。",
        ]
    )
    doc = parse(source.encode(), "policy.txt")
    assert texts(doc) == [
        ("heading", 1, "Travel Policy"),
        ("paragraph", 0, "Applies to everyone."),
        ("heading", 2, "Booking"),
        ("paragraph", 0, "Book through the portal."),
        ("heading", 1, "第二章 报销"),
        ("heading", 2, "第一节 范围"),
        ("heading", 2, "一、适用对象"),
        ("heading", 3, "（一）正式员工"),
        ("paragraph", 0, "第五条 员工出差须事先申请。\n本条自发布之日起施行。"),
    ]
    assert doc.title == "Travel Policy"


def test_a_short_first_line_standing_alone_is_the_title_above_all_headings() -> None:
    source = "青岚科技 费用报销制度\n\n第一章 总则\n第一条 本制度适用于全体员工。\n\n一、范围\n正文。"
    doc = parse(source.encode("gb18030"), "expense.txt")
    assert doc.title == "青岚科技 费用报销制度"
    assert [(b.kind, b.level) for b in doc.blocks] == [
        ("heading", 1),
        ("heading", 2),
        ("paragraph", 0),
        ("heading", 3),
        ("paragraph", 0),
    ]
    # a first paragraph that reads like a sentence is not a title
    assert parse(b"Hello team, here are the notes.\n\nMore.", "n.txt").title is None


def test_sentence_like_lines_are_not_headings() -> None:
    doc = parse(
        "一、员工须遵守本制度，违者处理。\n第一章的内容很长很长很长很长很长很长很长很长很长很长很长很长很长".encode(),
        "a.txt",
    )
    assert [b.kind for b in doc.blocks] == ["paragraph"]


# --- markdown -------------------------------------------------------------------------------------------


def test_markdown_structure() -> None:
    source = """---
title: hidden front matter
owner: hr
---
# Leave Policy

Annual leave is **15 days** after [ten years](https://example.invalid/years).
It accrues monthly.

## Requests

- Apply in the HR portal
  - three working days ahead
- Manager approves

1. Submit
2. Wait

| Years | Days |
|------:|------|
| 1-10  | 5    |
| 10+   | 10   |

```text
leave --days 3
```

> Quoted rule.
"""
    doc = parse(source.encode(), "leave.md")
    assert doc.format == "md"
    assert doc.title == "Leave Policy"
    assert texts(doc) == [
        ("heading", 1, "Leave Policy"),
        ("paragraph", 0, "Annual leave is 15 days after ten years.\nIt accrues monthly."),
        ("heading", 2, "Requests"),
        ("list", 0, "- Apply in the HR portal\n  - three working days ahead\n- Manager approves"),
        ("list", 0, "1. Submit\n2. Wait"),
        ("table", 0, "| Years | Days |\n|---|---|\n| 1-10 | 5 |\n| 10+ | 10 |"),
        ("code", 0, "leave --days 3"),
        ("paragraph", 0, "Quoted rule."),
    ]
    assert not any("front matter" in b.text for b in doc.blocks)


# --- html -----------------------------------------------------------------------------------------------

HTML = """<!DOCTYPE html>
<html><head><meta charset="{charset}"><title>差旅 管理办法</title>
<style>p {{ color: red }}</style><script>var tracking = "差旅";</script></head>
<body>
<nav><a href="/">首页</a> | <a href="/hr">人事</a></nav>
<h1>差旅管理办法</h1>
<p>出差须提前   三个工作日<br>在 OA 系统申请。</p>
<div>住宿标准如下：
  <table>
    <tr><th>城市</th><th>每晚上限</th></tr>
    <tr><td>北京、上海</td><td>600 元</td></tr>
    <tr><td>其他城市</td><td>400 元</td></tr>
  </table>
</div>
<h2>报销</h2>
<ul><li>机票 <b>经济舱</b><ol><li>提前购买</li></ol></li><li>火车 二等座</li></ul>
<pre>code  kept
  as is</pre>
<footer>版权所有 2026</footer>
</body></html>"""


@pytest.mark.parametrize("charset", ["utf-8", "gbk", "gb2312"])
def test_html_structure_and_declared_charset(charset: str) -> None:
    data = HTML.format(charset=charset).encode("gb18030" if charset != "utf-8" else "utf-8")
    doc = parse(data, "travel.html")
    assert doc.format == "html"
    assert doc.title == "差旅 管理办法"
    assert texts(doc) == [
        ("heading", 1, "差旅管理办法"),
        ("paragraph", 0, "出差须提前 三个工作日\n在 OA 系统申请。"),
        ("paragraph", 0, "住宿标准如下："),
        ("table", 0, "| 城市 | 每晚上限 |\n|---|---|\n| 北京、上海 | 600 元 |\n| 其他城市 | 400 元 |"),
        ("heading", 2, "报销"),
        ("list", 0, "- 机票 经济舱\n  1. 提前购买\n- 火车 二等座"),
        ("code", 0, "code  kept\n  as is"),
    ]
    everything = " ".join(b.text for b in doc.blocks)
    for dropped in ("tracking", "color", "首页", "版权所有"):
        assert dropped not in everything


def test_html_with_a_wrong_charset_declaration_is_still_read() -> None:
    # Declares UTF-8 but was saved as GBK by an editor: detection must take over.
    data = HTML.format(charset="utf-8").encode("gbk")
    doc = parse(data, "travel.htm")
    assert doc.blocks[0].text == "差旅管理办法"


def test_html_without_title_or_body_tags() -> None:
    doc = parse(b"<html><p>Only a paragraph.</p></html>", "x.html")
    assert doc.title is None
    assert texts(doc) == [("paragraph", 0, "Only a paragraph.")]


# --- detection ------------------------------------------------------------------------------------------


def test_supported_extensions() -> None:
    assert {".txt", ".md", ".markdown", ".html", ".htm"} <= SUPPORTED_EXTENSIONS
    assert all(ext.startswith(".") and ext == ext.lower() for ext in SUPPORTED_EXTENSIONS)


def test_content_decides_before_the_extension() -> None:
    page = b"<!doctype html><html><body><p>saved page</p></body></html>"
    assert detect_format(page, "download.pdf") == "html"
    assert detect_format(page, "notes.txt") == "html"
    assert detect_format(b"\xef\xbb\xbf  <html><p>x</p></html>", "a.txt") == "html"
    assert detect_format("<html>".encode("utf-16"), "a.txt") == "html"
    assert parse(page, "download.pdf").blocks[0].text == "saved page"


def test_markdown_with_inline_html_stays_markdown() -> None:
    assert detect_format(b"# Title\n\n<div>box</div>\n", "a.md") == "md"


def test_extension_decides_between_text_formats() -> None:
    assert detect_format(b"# Title", "a.md") == "md"
    assert detect_format(b"# Title", "A.MARKDOWN") == "md"
    assert detect_format(b"# Title", "a.txt") == "txt"
    assert detect_format(b"plain", "README") == "txt"
    assert detect_format(b"plain", "tool.exe") == "unknown"
    assert detect_format(b"%PDF-1.7\n...", "a.txt") == "pdf"
    assert detect_format(b"\x00\x01\x02\x03binary", "a.txt") == "binary"


# --- bad input: one clear message naming the file and the reason or limit ------------------------------


def test_empty_file() -> None:
    with pytest.raises(DocumentError, match=r"empty\.txt: file is empty"):
        parse(b"", "empty.txt")
    with pytest.raises(DocumentError, match=r"blank\.md: file is empty"):
        parse(b" \n\t\r\n", "blank.md")


def test_file_over_the_size_limit_names_the_limit() -> None:
    with pytest.raises(DocumentError) as err:
        parse(b"x" * 2001, "big.txt", ParseLimits(max_bytes=2000))
    assert "big.txt" in err.value.message
    assert "2,001 bytes" in err.value.message and "2,000 bytes" in err.value.message


def test_binary_data_under_a_text_extension() -> None:
    data = os.urandom(4096) + b"\x00" * 64
    for name in ("report.txt", "notes.md", "page.html"):
        with pytest.raises(DocumentError, match=rf"{name}: binary data under a text extension"):
            parse(data, name)


def test_control_characters_without_nul_are_binary() -> None:
    data = bytes(range(1, 9)) * 200 + b"some text"
    with pytest.raises(DocumentError, match="binary data"):
        parse(data, "log.txt")


def test_undecodable_text() -> None:
    # Corrupt high bytes: not UTF-8, not valid GB18030 or Big5, no control bytes that would make it "binary".
    rng = random.Random(1)
    data = bytes(rng.randrange(0x80, 0x100) for _ in range(2000))
    with pytest.raises(DocumentError, match=r"odd\.txt: text is not decodable"):
        parse(data, "odd.txt")


def test_truncated_utf16_is_not_decodable() -> None:
    data = codecs.BOM_UTF16_LE + "年假".encode("utf-16-le") + b"\x00"
    with pytest.raises(DocumentError, match=r"a\.txt: text is not decodable"):
        parse(data, "a.txt")


def test_unsupported_types() -> None:
    with pytest.raises(DocumentError, match=r"tool\.exe: unsupported file type: an unknown type \(\.exe\)"):
        parse(b"MZ-like text but an unknown extension", "tool.exe")
    with pytest.raises(DocumentError, match=r"blob\.bin: unsupported file type: binary data \(\.bin\)") as err:
        parse(os.urandom(512) + b"\x00", "blob.bin")
    assert ".txt" in err.value.message  # the message lists what is supported


def test_a_file_without_any_text() -> None:
    with pytest.raises(DocumentError, match=r"chrome\.html: no text found"):
        parse(b"<html><head><script>var a = 1;</script></head><body><nav>menu</nav></body></html>", "chrome.html")
    with pytest.raises(DocumentError, match=r"rule\.md: no text found"):
        parse(b"---\n---\n", "rule.md")


def test_deeply_nested_html_keeps_its_text_and_hostile_nesting_is_refused() -> None:
    deep = ("<div>" * 300 + "<p>deep text</p>" + "</div>" * 300).encode()
    assert [b.text for b in parse(deep, "deep.html").blocks] == ["deep text"]
    nested_list = ("<ul><li>x" * 100 + "</li></ul>" * 100).encode()
    (block,) = parse(nested_list, "list.html").blocks
    assert block.text.count("x") == 100
    hostile = ("<div>" * 5000 + "text" + "</div>" * 5000).encode()
    with pytest.raises(
        DocumentError, match=r"hostile\.html: HTML elements are nested 5000 deep, over the limit of 4000"
    ):
        parse(hostile, "hostile.html")


def test_html_list_with_a_malformed_start_attribute() -> None:
    assert texts(parse(b'<ol start="x"><li>a</li><li>b</li></ol>', "a.html")) == [("list", 0, "1. a\n2. b")]


def test_deeply_nested_markdown_lists_lose_no_items() -> None:
    source = "".join("  " * i + f"- item{i}\n" for i in range(40))
    (block,) = parse(source.encode(), "outline.md").blocks
    assert [line.strip() for line in block.text.split("\n")] == [f"- item{i}" for i in range(40)]


def test_binary_data_after_a_text_head_is_caught() -> None:
    data = b"a plain text start\n" * 1000 + b"\x00\x01\x02" * 100
    with pytest.raises(DocumentError, match=r"tail\.txt: binary data, not text \(NUL character at position 19,000\)"):
        parse(data, "tail.txt")
