"""The parser interface: bytes of one file in, a flat list of typed blocks out.

Parsers know nothing of chunk sizes, embeddings or storage. Headings are blocks with a level; the chunker
turns them into each paragraph's title path. A block marked ``atomic`` (a spreadsheet row, a slide's notes)
is never merged with its neighbours, so a question about one row finds exactly that row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

BlockKind = Literal["heading", "paragraph", "list", "table", "code", "row"]


@dataclass(frozen=True)
class Block:
    text: str
    kind: BlockKind = "paragraph"
    level: int = 0  # heading level, 1 = top; 0 for non-headings
    page: int | None = None  # 1-based page number where the format has pages
    ocr: bool = False  # text came from OCR, not from the file's own text
    atomic: bool = False  # keep as one unit: never merged with neighbours, split only if over the limit


@dataclass
class ParsedDocument:
    format: str  # "txt", "md", "html", "pdf", "docx", ...
    blocks: list[Block]
    title: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ParseLimits:
    """Bounds every parser honours, so a hostile file ends in a clear error, never a hang or a crash."""

    max_bytes: int = 50 * 1024 * 1024
    max_pages: int = 2000
    max_image_pixels: int = 50_000_000
    max_rows: int = 200_000
    max_archive_members: int = 1000
    max_archive_bytes: int = 500 * 1024 * 1024
    max_archive_ratio: float = 100.0
    max_archive_depth: int = 3  # a zip inside a zip inside a zip, no deeper
    password: str | None = None


# Called as progress(done, total, what) by parsers with slow steps (pages of a PDF, OCR of images).
Progress = Callable[[int, int, str], None]


class Parser(Protocol):
    def __call__(
        self, data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None
    ) -> ParsedDocument: ...
