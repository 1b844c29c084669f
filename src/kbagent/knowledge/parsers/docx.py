"""Word documents (.docx) through python-docx: headings, paragraphs, lists and tables in document order.

Headings come from heading styles ("Heading 1".., Chinese "标题 1"..) or an outline level set on the paragraph or
its style; the document's Title style becomes the document title. Headers and footers are left out: they repeat on
every page and would pollute every paragraph's neighbourhood. Text boxes, footnotes and comments are not read.
"""

from __future__ import annotations

import io
import re
from typing import Any

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import zip_limits
from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress
from kbagent.knowledge.parsers.markdown_table import to_markdown_table

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def parse_docx(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Read a .docx; raises DocumentError when it is not a readable Word document or its ZIP is over the limits."""
    from docx import Document
    from docx.table import Table

    zip_limits.check_container(zip_limits.open_zip(data, name), name, limits)
    try:
        document = Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises KeyError, lxml and zip errors alike on a damaged package
        raise DocumentError(f"{name}: not a readable Word document ({type(exc).__name__}: {exc})") from exc
    blocks: list[Block] = []
    list_items: list[str] = []
    title: str | None = None

    def flush_list() -> None:
        if list_items:
            blocks.append(Block("\n".join(list_items), kind="list"))
            list_items.clear()

    try:
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                flush_list()
                table = to_markdown_table([[cell.text for cell in row.cells] for row in item.rows])
                if table:
                    blocks.append(Block(table, kind="table"))
                continue
            text = item.text.strip()
            if not text:
                continue
            style_name = item.style.name if item.style is not None else ""
            if style_name == "Title":
                flush_list()
                title = title or text
                blocks.append(Block(text, kind="heading", level=1))
                continue
            level = _heading_level(item, style_name)
            if level:
                flush_list()
                blocks.append(Block(text, kind="heading", level=level))
                continue
            depth = _list_depth(item, style_name)
            if depth is not None:
                list_items.append("  " * depth + "- " + text)
                continue
            flush_list()
            blocks.append(Block(text))
    except DocumentError:
        raise
    except Exception as exc:
        raise DocumentError(f"{name}: the Word document's content is damaged ({type(exc).__name__}: {exc})") from exc
    flush_list()
    core_title = (document.core_properties.title or "").strip()
    return ParsedDocument(format="docx", blocks=blocks, title=core_title or title)


def _heading_level(paragraph: Any, style_name: str) -> int:
    match = _HEADING_STYLE.match(style_name.strip())
    if match:
        return max(1, min(int(match.group(1)), 6))
    # A custom style ("章标题") can still be a heading through its outline level, on the paragraph or inherited.
    candidates = [paragraph._p.pPr]
    style = paragraph.style
    while style is not None and len(candidates) < 10:
        candidates.append(style.element.pPr)
        style = style.base_style
    for ppr in candidates:
        if ppr is None:
            continue
        outline = ppr.find(f"{_W}outlineLvl")
        if outline is not None:
            value = int(outline.get(f"{_W}val", "9"))
            return value + 1 if 0 <= value <= 5 else 0
    return 0


def _list_depth(paragraph: Any, style_name: str) -> int | None:
    ppr = paragraph._p.pPr
    numbering = ppr.find(f"{_W}numPr") if ppr is not None else None
    if numbering is not None:
        ilvl = numbering.find(f"{_W}ilvl")
        return int(ilvl.get(f"{_W}val", "0")) if ilvl is not None else 0
    if style_name.lower().startswith("list"):
        return 0
    return None
