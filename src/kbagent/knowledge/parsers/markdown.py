"""Markdown (.md, .markdown) through markdown-it-py (CommonMark + tables).

Headings keep their level; paragraphs are plain text (emphasis markers and link targets dropped, link text
kept); a list is one block with its markers and nesting; tables become normalised Markdown tables; fenced and
indented code is a code block; raw HTML blocks contribute their text. YAML/TOML front matter is metadata, not
content, and is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token
from selectolax.lexbor import LexborHTMLParser

from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress
from kbagent.knowledge.parsers.encoding import decode_text
from kbagent.knowledge.parsers.markdown_table import to_markdown_table

MAX_NESTING = 100
_FRONT_MATTER = re.compile(r"\A(?:---[ \t]*\n.*?\n(?:---|\.\.\.)|\+\+\+[ \t]*\n.*?\n\+\+\+)[ \t]*(?:\n|\Z)", re.S)


def parse_markdown(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Parse a Markdown file; raises DocumentError if it is binary or undecodable."""
    text, encoding = decode_text(data, name)
    blocks = markdown_blocks(text)
    title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    return ParsedDocument(format="md", blocks=blocks, title=title, meta={"encoding": encoding})


def markdown_blocks(text: str) -> list[Block]:
    """Blocks of Markdown source text, in order."""
    text = _FRONT_MATTER.sub("", text, count=1)
    # markdown-it silently drops what is nested deeper than maxNesting (20 in CommonMark mode, i.e. about ten
    # levels of lists); real outlines can go deeper, and 100 stays well inside Python's recursion limit.
    tokens = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table").parse(text)
    return _Walker(tokens).blocks()


class _Walker:
    def __init__(self, tokens: Sequence[Token]) -> None:
        self.tokens = tokens
        self.out: list[Block] = []

    def blocks(self) -> list[Block]:
        i = 0
        while i < len(self.tokens):
            i = self._block(i)
        return self.out

    def _block(self, i: int) -> int:
        tok = self.tokens[i]
        if tok.type == "heading_open":
            self._emit(Block(inline_text(self.tokens[i + 1]), "heading", level=int(tok.tag[1:])))
            return i + 3
        if tok.type == "paragraph_open":
            self._emit(Block(inline_text(self.tokens[i + 1]), "paragraph"))
            return i + 3
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            lines: list[str] = []
            end = self._list(i, 0, lines)
            self._emit(Block("\n".join(lines), "list"))
            return end
        if tok.type == "table_open":
            return self._table(i)
        if tok.type in ("fence", "code_block"):
            self._emit(Block(tok.content.rstrip("\n"), "code"))
        elif tok.type == "html_block":
            self._emit(Block(_html_text(tok.content), "paragraph"))
        return i + 1  # containers (blockquote) are walked through: their paragraphs come next

    def _emit(self, block: Block) -> None:
        if block.text.strip():
            self.out.append(block)

    def _list(self, i: int, depth: int, lines: list[str]) -> int:
        """Render the list opening at ``i`` into ``lines``; returns the index after its closing token."""
        opener = self.tokens[i]
        ordered = opener.type == "ordered_list_open"
        number = int(opener.attrGet("start") or 1) if ordered else 0
        close = opener.type.replace("_open", "_close")
        indent = "  " * depth
        i += 1
        marker = ""
        while self.tokens[i].type != close or self.tokens[i].level != opener.level:
            tok = self.tokens[i]
            if tok.type == "list_item_open":
                marker = f"{number}. " if ordered else "- "
                number += 1
            elif tok.type in ("bullet_list_open", "ordered_list_open"):
                i = self._list(i, depth + 1, lines)
                continue
            elif tok.type == "inline":
                prefix = marker or " " * 2
                lines.append(indent + prefix + inline_text(tok).replace("\n", " "))
                marker = ""
            elif tok.type in ("fence", "code_block"):
                lines.extend(indent + "    " + line for line in tok.content.rstrip("\n").split("\n"))
            i += 1
        return i + 1

    def _table(self, i: int) -> int:
        rows: list[list[str]] = []
        while self.tokens[i].type != "table_close":
            tok = self.tokens[i]
            if tok.type == "tr_open":
                rows.append([])
            elif tok.type == "inline" and rows:
                rows[-1].append(inline_text(tok))
            i += 1
        self._emit(Block(to_markdown_table(rows), "table"))
        return i + 1


def inline_text(token: Token) -> str:
    """Plain text of an inline token: text, code and image alt text; markup and link targets dropped."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
        elif child.type == "html_inline" and child.content.lower().startswith("<br"):
            parts.append("\n")
    return "".join(parts).strip()


def _html_text(html: str) -> str:
    root = LexborHTMLParser(html).body
    return root.text(separator=" ").strip() if root is not None else ""
