"""From the characters of a PDF text layer to blocks: lines, headings, tables and paragraphs.

Heuristics, kept deliberately simple and stated here so a reader knows what they catch:

- Lines follow PDFium's text order (the content stream's, which is the reading order for single- and
  multi-column documents written by ordinary tools), broken where PDFium reports a line break.
- Headings: a short line whose font is clearly larger (>= 1.15x) than the document's body font; levels follow the
  distinct heading sizes, largest first. Lines matching a bookmark (outline) title take the bookmark's level.
- Tables: two or more consecutive lines that split, at wide gaps (> 1.2 em), into the same number (>= 2) of
  segments whose columns line up. That catches grids of single-line cells, ruled or not; it misses cells that
  wrap onto several lines, merged cells, and rows with empty cells (which have fewer segments).
- Running heads and footers: lines in the top or bottom 8% of the page that repeat (digits ignored) on at least
  half the pages (and three or more), and bare page numbers there, are dropped.
- Paragraphs: consecutive lines, split at a vertical gap wider than ~0.7 line heights, a font size change, a
  bullet, or a line ending a sentence well short of the right margin.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from kbagent.knowledge.parsers.base import Block, BlockKind
from kbagent.knowledge.parsers.markdown_table import to_markdown_table
from kbagent.knowledge.parsers.text_joining import join_lines

# "1." or "2)" starts a list item, "2.1 Scope" (a section number) does not.
_BULLET = re.compile(r"^\s*([•●▪◦·‣∙\-–*]|\(?\d{1,2}[.)、](?!\d)|[（(][一二三四五六七八九十]+[）)])\s*")
_DOT_LEADER = re.compile(r"(?:\s*\.){4,}\s*")
_PAGE_NUMBER = re.compile(
    r"^\s*(?:[-–—]\s*)?(?:第\s*)?\d+(?:\s*页)?(?:\s*/\s*(?:共\s*)?\d+\s*页?)?(?:\s*[-–—])?\s*$"
    r"|^\s*page\s+\d+(\s+of\s+\d+)?\s*$"
    r"|^\s*[ivxlc]{1,7}\s*$",  # roman numbers of front matter
    re.IGNORECASE,
)
_SENTENCE_END = '。！？；.!?;:：”"'
_MARGIN_BAND = 0.08
_TABLE_GAP_EM = 1.2
_HEADING_RATIO = 1.15


@dataclass
class Char:
    text: str
    left: float
    bottom: float
    right: float
    top: float
    size: float


@dataclass
class Line:
    chars: list[Char]
    page: int
    segments: list[tuple[str, float, float]] = field(default_factory=list)  # (text, left, right)

    @cached_property
    def text(self) -> str:
        # Dot leaders of a table of contents ("Scope . . . . . 12") shrink to one ellipsis.
        return _DOT_LEADER.sub(" … ", "".join(c.text for c in self.chars)).strip()

    @cached_property
    def is_toc_entry(self) -> bool:
        return bool(_DOT_LEADER.search("".join(c.text for c in self.chars)))

    @cached_property
    def left(self) -> float:
        return min(c.left for c in self.chars)

    @cached_property
    def right(self) -> float:
        return max(c.right for c in self.chars)

    @cached_property
    def top(self) -> float:
        return max(c.top for c in self.chars)

    @cached_property
    def bottom(self) -> float:
        return min(c.bottom for c in self.chars)

    @cached_property
    def size(self) -> float:
        sizes = [c.size for c in self.chars if not c.text.isspace()]
        return statistics.median(sizes) if sizes else 0.0


def split_lines(chars: list[Char], page: int) -> list[Line]:
    """Break a page's characters into lines at PDFium's line breaks (and at jumps back to the left margin)."""
    lines: list[Line] = []
    current: list[Char] = []
    for char in chars:
        if char.text in "\r\n":
            if current:
                lines.append(Line(current, page))
                current = []
            continue
        if current and not char.text.isspace():
            last = next((c for c in reversed(current) if not c.text.isspace()), None)
            if last is not None and char.right < last.left and char.top < last.bottom:
                lines.append(Line(current, page))  # the text moved down and back left: a new line
                current = []
        current.append(char)
    if current:
        lines.append(Line(current, page))
    lines = [line for line in lines if line.text]
    for line in lines:
        line.segments = _segments(line)
    return lines


def _segments(line: Line) -> list[tuple[str, float, float]]:
    segments: list[tuple[str, float, float]] = []
    current: list[Char] = []
    previous: Char | None = None
    for char in line.chars:
        if char.text.isspace():
            current.append(char)
            continue
        if previous is not None and char.left - previous.right > _TABLE_GAP_EM * max(char.size, previous.size, 1.0):
            segments.append(_segment(current))
            current = []
        current.append(char)
        previous = char
    if current:
        segments.append(_segment(current))
    return [s for s in segments if s[0]]


def _segment(chars: list[Char]) -> tuple[str, float, float]:
    visible = [c for c in chars if not c.text.isspace()]
    text = _DOT_LEADER.sub(" … ", "".join(c.text for c in chars)).strip()
    if not visible:
        return ("", 0.0, 0.0)
    return (text, min(c.left for c in visible), max(c.right for c in visible))


def drop_running_heads(pages: list[list[Line]], heights: list[float]) -> None:
    """Remove running heads/footers and bare page numbers in place (see module docstring)."""

    def in_band(line: Line, height: float) -> bool:
        return line.top > height * (1 - _MARGIN_BAND) or line.bottom < height * _MARGIN_BAND

    counts: Counter[str] = Counter()
    for lines, height in zip(pages, heights, strict=True):
        keys = {re.sub(r"\d+", "#", line.text) for line in lines if in_band(line, height)}
        counts.update(keys)
    repeated = {key for key, n in counts.items() if n >= 3 and n >= len(pages) / 2}
    for index, (lines, height) in enumerate(zip(pages, heights, strict=True)):
        pages[index] = [
            line
            for line in lines
            if not (
                in_band(line, height) and (re.sub(r"\d+", "#", line.text) in repeated or _PAGE_NUMBER.match(line.text))
            )
        ]


def body_size(pages: list[list[Line]]) -> float:
    """The font size carrying the most characters: the body text's."""
    weights: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            for char in line.chars:
                if not char.text.isspace():
                    weights[round(char.size * 2) / 2] += 1
    return weights.most_common(1)[0][0] if weights else 0.0


def heading_levels(pages: list[list[Line]], body: float) -> dict[float, int]:
    """Map each heading font size (rounded to 0.5 pt) to a level, largest first."""
    sizes = {
        round(line.size * 2) / 2
        for lines in pages
        for line in lines
        if body and line.size >= body * _HEADING_RATIO and len(line.text) <= 80
    }
    return {size: min(level, 6) for level, size in enumerate(sorted(sizes, reverse=True), start=1)}


def normalize_title(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def page_blocks(
    lines: list[Line], page: int, body: float, levels: dict[float, int], outline: list[tuple[str, int]]
) -> list[Block]:
    """Turn one page's lines into heading, table, list and paragraph blocks.

    ``outline`` holds this page's bookmarks as (title, level); those not found as a line become headings at the
    top of the page, so even a scanned page keeps its place in the document's structure.
    """
    blocks: list[Block] = []
    matched: set[str] = set()
    outline_levels = {normalize_title(title): level for title, level in outline}
    i = 0
    paragraph: list[Line] = []
    right_margin = max((ln.right for ln in lines), default=0.0)

    def flush() -> None:
        if paragraph:
            text = join_lines([ln.text for ln in paragraph])
            kind: BlockKind = "list" if _BULLET.match(paragraph[0].text) else "paragraph"
            blocks.append(Block(text, kind=kind, page=page))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        key = normalize_title(line.text)
        size_key = round(line.size * 2) / 2
        if key in outline_levels or (size_key in levels and len(line.text) <= 80 and not line.is_toc_entry):
            flush()
            level = outline_levels.get(key) or levels[size_key]
            texts = [line.text]
            # A heading wrapped onto several lines of the same size is one heading.
            while (
                i + 1 < len(lines)
                and key not in outline_levels
                and round(lines[i + 1].size * 2) / 2 == size_key
                and not lines[i + 1].is_toc_entry
                and len(texts) < 3
            ):
                i += 1
                texts.append(lines[i].text)
            blocks.append(Block(join_lines(texts), kind="heading", level=level, page=page))
            matched.add(key)
            i += 1
            continue
        table = _table_run(lines, i)
        if len(table) >= 2:
            flush()
            rows = [[s[0] for s in ln.segments] for ln in table]
            blocks.append(Block(to_markdown_table(rows), kind="table", page=page))
            i += len(table)
            continue
        if paragraph and _breaks_paragraph(paragraph[-1], line, right_margin):
            flush()
        paragraph.append(line)
        i += 1
    flush()
    missing = [
        Block(title, kind="heading", level=level, page=page)
        for title, level in outline
        if normalize_title(title) not in matched
    ]
    return missing + blocks


def _breaks_paragraph(previous: Line, line: Line, right_margin: float) -> bool:
    height = max(previous.top - previous.bottom, line.top - line.bottom, 1.0)
    gap = previous.bottom - line.top
    if gap > 0.7 * height or gap < -2 * height:  # a blank line, or a jump up (next column)
        return True
    if abs(previous.size - line.size) > 0.5:
        return True
    if _BULLET.match(line.text):
        return True
    return previous.text[-1:] in _SENTENCE_END and previous.right < right_margin - 2 * max(previous.size, 1.0)


def _table_run(lines: list[Line], start: int) -> list[Line]:
    first = lines[start]
    if len(first.segments) < 2:
        return []
    run = [first]
    for line in lines[start + 1 :]:
        if len(line.segments) != len(first.segments) or not _aligned(run[-1], line):
            break
        run.append(line)
    return run


def _aligned(a: Line, b: Line) -> bool:
    tolerance = max(a.size, b.size, 4.0)
    for (_, al, ar), (_, bl, br) in zip(a.segments, b.segments, strict=True):
        overlaps = al <= br and bl <= ar
        if not (overlaps or abs(al - bl) <= tolerance or abs(ar - br) <= tolerance):
            return False
    return True
