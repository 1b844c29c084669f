"""Optical character recognition: rapidocr (PP-OCR models bundled in its wheel) on onnxruntime, on the CPU.

The engine holds about 600 MB once its models are loaded, so it is built lazily, on the first image that needs
it, and kept for the life of the process (one engine per process, shared by every parser). Its models read
simplified/traditional Chinese and English text.

``recognize`` returns lines in reading order; ``lines_to_blocks`` turns them into paragraph blocks marked
``ocr=True`` so a citation can say the text was read from an image.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from PIL import Image

from kbagent.errors import DocumentError, RunError
from kbagent.knowledge.parsers.base import Block
from kbagent.knowledge.parsers.text_joining import join_lines

# rapidocr drops lines whose recognition score is under this; its own default is 0.5. Kept as is: lower values
# let through noise from stamps and photos that then pollutes search.
_TEXT_SCORE = 0.5

_engine: Any = None
_engine_lock = threading.Lock()
# rapidocr's __call__ mutates its own parameters before each run; one image at a time per engine.
_call_lock = threading.Lock()


@dataclass(frozen=True)
class OcrLine:
    text: str
    left: float
    top: float
    right: float
    bottom: float
    score: float

    @property
    def height(self) -> float:
        return self.bottom - self.top


def engine_loaded() -> bool:
    """True once the OCR models are in memory (tests and benchmarks use it to tell load time from run time)."""
    return _engine is not None


def _get_engine() -> Any:
    global _engine
    if _engine is None:
        with _engine_lock:
            if _engine is None:
                try:
                    from rapidocr import RapidOCR
                except ImportError as exc:  # an install without the OCR extra cannot read scans
                    raise RunError(f"OCR is not available: cannot import rapidocr ({exc})") from exc
                # rapidocr logs every call at INFO through its own handler; keep the console for our progress.
                logging.getLogger("RapidOCR").setLevel(logging.ERROR)
                try:
                    _engine = RapidOCR(params={"Global.log_level": "error", "Global.text_score": _TEXT_SCORE})
                except Exception as exc:
                    raise RunError(f"OCR engine failed to start: {exc}") from exc
    return _engine


def recognize(image: Image.Image) -> list[OcrLine]:
    """Read the text of one image; lines come back top to bottom, left to right.

    The image must already be decoded and within the caller's pixel limit. Raises DocumentError when the engine
    cannot read this image, RunError when the engine itself cannot start.
    """
    engine = _get_engine()
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    try:
        with _call_lock:
            result = engine(rgb)
    except Exception as exc:
        raise DocumentError(f"OCR failed on this image: {exc}") from exc
    txts = getattr(result, "txts", None)
    boxes = getattr(result, "boxes", None)
    scores = getattr(result, "scores", None)
    if not txts or boxes is None or scores is None:
        return []
    lines = []
    for text, box, score in zip(txts, boxes, scores, strict=False):
        text = str(text).strip()
        if not text:
            continue
        xs = [float(p[0]) for p in box]
        ys = [float(p[1]) for p in box]
        lines.append(OcrLine(text, min(xs), min(ys), max(xs), max(ys), float(score)))
    return reading_order(lines)


def reading_order(lines: list[OcrLine]) -> list[OcrLine]:
    """Sort lines into rows (vertical centres within half a line height) and each row left to right."""
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda ln: (ln.top + ln.bottom) / 2):
        centre = (line.top + line.bottom) / 2
        if rows:
            last = rows[-1]
            last_centre = sum((ln.top + ln.bottom) / 2 for ln in last) / len(last)
            tolerance = max(min(ln.height for ln in last), line.height) / 2
            if abs(centre - last_centre) <= tolerance:
                last.append(line)
                continue
        rows.append([line])
    ordered: list[OcrLine] = []
    for row in rows:
        ordered.extend(sorted(row, key=lambda ln: ln.left))
    return ordered


def lines_to_blocks(lines: list[OcrLine], page: int | None) -> list[Block]:
    """Group OCR lines into paragraphs: a vertical gap larger than ~0.8 line heights starts a new one."""
    blocks: list[Block] = []
    current: list[str] = []
    previous: OcrLine | None = None
    for line in lines:
        if previous is not None:
            gap = line.top - previous.bottom
            same_row = line.top < previous.bottom and line.left > previous.right
            if not same_row and gap > 0.8 * max(previous.height, line.height):
                blocks.append(Block(join_lines(current), page=page, ocr=True))
                current = []
        current.append(line.text)
        previous = line
    if current:
        blocks.append(Block(join_lines(current), page=page, ocr=True))
    return [b for b in blocks if b.text]
