"""Plain text (.txt): paragraphs split on blank lines; obvious heading lines become heading blocks.

Plain text has no markup, so headings are recognised only where writers make them unmistakable: Chinese
chapter/section lines (``第一章 总则``, ``第二节 ...``, ``一、适用范围``, ``（一）...``) and setext underlines
(a line followed by ``===`` or ``---``); a short first line standing alone is the title. A heading line must
be short and must not end like a sentence, so ``第一条 为了规范……。`` (an article with its body on the same
line) stays a paragraph.
"""

from __future__ import annotations

import re

from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress
from kbagent.knowledge.parsers.encoding import decode_text

_CN_NUM = "一二三四五六七八九十百千零〇两"
_CHAPTER = re.compile(rf"^第[{_CN_NUM}\d]+[章篇部卷编](?:分)?(?:\s+|$)")
_SECTION = re.compile(rf"^第[{_CN_NUM}\d]+节(?:\s+|$)")
_ENUM = re.compile(rf"^[{_CN_NUM}]+[、.．]\s*\S")
_SUB_ENUM = re.compile(rf"^[（(][{_CN_NUM}]+[)）]\s*\S")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
# A heading does not end like a sentence or a clause.
_SENTENCE_END = tuple("。！？；，：.,;:!?")
MAX_HEADING_CHARS = 40


def parse_text(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Parse a plain-text file; raises DocumentError if it is binary or undecodable."""
    text, encoding = decode_text(data, name)
    blocks = text_blocks(text)
    title = blocks[0].text if blocks and blocks[0].kind == "heading" else None
    return ParsedDocument(format="txt", blocks=blocks, title=title, meta={"encoding": encoding})


def text_blocks(text: str) -> list[Block]:
    """Blocks of decoded plain text: headings and paragraphs, in order."""
    blocks: list[Block] = []
    paragraph: list[str] = []

    def flush() -> None:
        body = "\n".join(paragraph).strip()
        if body:
            blocks.append(Block(body, "paragraph"))
        paragraph.clear()

    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        stripped = line.strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if not stripped:
            flush()
        elif _is_setext_title(stripped, nxt, paragraph):
            flush()
            blocks.append(Block(stripped, "heading", level=1 if nxt.startswith("=") else 2))
            i += 1  # the underline
        elif (level := heading_level(stripped)) is not None:
            flush()
            blocks.append(Block(stripped, "heading", level=level))
        else:
            paragraph.append(line)
        i += 1
    flush()
    return _promote_title(blocks)


def _promote_title(blocks: list[Block]) -> list[Block]:
    # A short first line standing alone ("青岚科技有限公司 费用报销制度", then a blank line) is the document's
    # title: it becomes a level-1 heading above every other heading, so it appears in each title path.
    if len(blocks) < 2 or blocks[0].kind != "paragraph":
        return blocks
    first = blocks[0].text
    if "\n" in first or len(first) > MAX_HEADING_CHARS or first.endswith(_SENTENCE_END):
        return blocks
    rest = [Block(b.text, "heading", level=b.level + 1) if b.kind == "heading" else b for b in blocks[1:]]
    return [Block(first, "heading", level=1), *rest]


def heading_level(line: str) -> int | None:
    """Heading level of a stripped plain-text line (1 chapter, 2 section or 一、, 3 for （一）), or None."""
    if len(line) > MAX_HEADING_CHARS or line.endswith(_SENTENCE_END):
        return None
    if _CHAPTER.match(line):
        return 1
    if _SECTION.match(line) or _ENUM.match(line):
        return 2
    if _SUB_ENUM.match(line):
        return 3
    return None


def _is_setext_title(line: str, underline: str, paragraph: list[str]) -> bool:
    # Only a lone line can be a title: "text\n---" inside a paragraph is more likely a separator.
    return (
        not paragraph
        and bool(_SETEXT.match(underline))
        and len(underline) >= 3
        and len(line) <= MAX_HEADING_CHARS * 2
        and not _SETEXT.match(line)
    )
