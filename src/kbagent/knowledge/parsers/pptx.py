"""PowerPoint (.pptx) through python-pptx: one section per slide.

Each slide opens with a level-1 heading (its title, or "Slide N" when it has none), then the text of its shapes
top to bottom, left to right (grouped shapes included, tables as Markdown), then its speaker notes as one atomic
block. ``page`` is the slide number, so a citation can say "slide 4".
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import zip_limits
from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress
from kbagent.knowledge.parsers.markdown_table import to_markdown_table

_MAX_GROUP_DEPTH = 20


def parse_pptx(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Read a .pptx; raises DocumentError when it is not a readable presentation, has more slides than
    ``limits.max_pages``, or its ZIP is over the limits."""
    from pptx import Presentation

    zip_limits.check_container(zip_limits.open_zip(data, name), name, limits)
    try:
        presentation = Presentation(io.BytesIO(data))
        slides = list(presentation.slides)
    except Exception as exc:  # python-pptx raises KeyError, lxml and zip errors alike on a damaged package
        raise DocumentError(f"{name}: not a readable PowerPoint file ({type(exc).__name__}: {exc})") from exc
    if len(slides) > limits.max_pages:
        raise DocumentError(f"{name}: {len(slides)} slides, over the limit of {limits.max_pages} (max_pages)")
    blocks: list[Block] = []
    try:
        for number, slide in enumerate(slides, start=1):
            blocks.extend(_slide_blocks(slide, number))
            if progress is not None:
                progress(number, len(slides), f"{name} slide {number}/{len(slides)}")
    except Exception as exc:
        raise DocumentError(f"{name}: slide content is damaged ({type(exc).__name__}: {exc})") from exc
    title = (presentation.core_properties.title or "").strip() or None
    return ParsedDocument(format="pptx", blocks=blocks, title=title, meta={"slides": len(slides)})


def _slide_blocks(slide: Any, number: int) -> list[Block]:
    title_shape = slide.shapes.title
    title = _text_of(title_shape) if title_shape is not None else ""
    blocks = [Block(" ".join(title.split()) or f"Slide {number}", kind="heading", level=1, page=number)]
    for shape in _ordered(_flatten(slide.shapes, 0)):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            table = to_markdown_table(rows)
            if table:
                blocks.append(Block(table, kind="table", page=number))
            continue
        text = _text_of(shape)
        if text:
            blocks.append(Block(text, page=number))
    if slide.has_notes_slide:
        notes_frame = slide.notes_slide.notes_text_frame
        notes = notes_frame.text.strip() if notes_frame is not None else ""
        if notes:
            blocks.append(Block(f"Notes: {notes}", page=number, atomic=True))
    return blocks


def _flatten(shapes: Iterable[Any], depth: int) -> Iterator[Any]:
    for shape in shapes:
        if hasattr(shape, "shapes") and depth < _MAX_GROUP_DEPTH:  # a group shape
            yield from _flatten(shape.shapes, depth + 1)
        else:
            yield shape


def _ordered(shapes: Iterable[Any]) -> list[Any]:
    # Placeholders without a position inherit it from the layout and report None: they sort first.
    return sorted(shapes, key=lambda s: (s.top if s.top is not None else -1, s.left if s.left is not None else -1))


def _text_of(shape: Any) -> str:
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return ""
    lines = [p.text.strip() for p in shape.text_frame.paragraphs]
    return "\n".join(line for line in lines if line)
