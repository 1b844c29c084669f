"""PDF through pypdfium2: the text layer where a page has one, OCR of the rendered page where it has none.

Every block carries its 1-based page number so a citation can say "p. 12". Layout heuristics (headings, tables,
running heads, paragraphs) live in ``pdf_layout``.
"""

from __future__ import annotations

import ctypes
import threading

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import ocr, pdf_layout
from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress
from kbagent.knowledge.parsers.text_joining import is_usable_text

# Fewer visible characters than this on a page with an image means a scan (or a stamp-only text layer).
_MIN_TEXT_CHARS = 20
# Rendered page's longer side for OCR: the OCR engine scales anything larger down to 2000 px anyway.
_OCR_LONG_SIDE = 2000
_FPDF_ERR_PASSWORD = 4
# PDFium is not thread-safe: one document at a time in the process. OCR of a scanned page runs under the lock
# too, so two scanned PDFs parsed from two threads take turns (the OCR engine serialises its calls anyway).
_pdfium_lock = threading.Lock()


def parse_pdf(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Extract a PDF page by page.

    Raises DocumentError when the bytes are not a PDF (e.g. an HTML page saved as .pdf), the file is corrupt,
    it is password-protected and ``limits.password`` is missing or wrong, it has more than ``limits.max_pages``
    pages, or it has no text at all. Pages without a usable text layer are rendered and OCR'd (blocks ``ocr=True``).
    """
    if b"%PDF-" not in data[:1024]:
        raise DocumentError(f"{name}: not a PDF (no %PDF- header in the first 1024 bytes)")
    with _pdfium_lock:
        doc = _open(data, name, limits)
        try:
            return _parse_open(doc, name, limits, progress)
        finally:
            doc.close()


def _open(data: bytes, name: str, limits: ParseLimits) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data, password=limits.password)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == _FPDF_ERR_PASSWORD:
            if limits.password is None:
                raise DocumentError(
                    f"{name}: the PDF is password-protected; supply its password (password) to ingest it"
                ) from exc
            raise DocumentError(f"{name}: the password supplied (password) does not open this PDF") from exc
        raise DocumentError(f"{name}: corrupt or unreadable PDF ({exc})") from exc


def _parse_open(doc: pdfium.PdfDocument, name: str, limits: ParseLimits, progress: Progress | None) -> ParsedDocument:
    total = len(doc)
    if total > limits.max_pages:
        raise DocumentError(f"{name}: {total} pages, over the limit of {limits.max_pages} pages (max_pages)")
    outline = _outline(doc, total)
    pages: list[list[pdf_layout.Line]] = []
    heights: list[float] = []
    ocr_blocks: dict[int, list[Block]] = {}
    for index in range(total):
        try:
            page = doc[index]
        except pdfium.PdfiumError as exc:
            raise DocumentError(f"{name}: page {index + 1} cannot be read ({exc})") from exc
        try:
            heights.append(page.get_height())
            chars = _chars(page)
            visible = "".join(c.text for c in chars if not c.text.isspace())
            if (len(visible) < _MIN_TEXT_CHARS or not is_usable_text(visible)) and _has_image(page):
                ocr_blocks[index] = ocr.lines_to_blocks(ocr.recognize(_render(page, name, limits)), index + 1)
                pages.append([])
                what = f"OCR {name} page {index + 1}/{total}"
            else:
                pages.append(pdf_layout.split_lines(chars, index + 1))
                what = f"{name} page {index + 1}/{total}"
        finally:
            page.close()
        if progress is not None:
            progress(index + 1, total, what)
    pdf_layout.drop_running_heads(pages, heights)
    body = pdf_layout.body_size(pages)
    levels = pdf_layout.heading_levels(pages, body)
    blocks: list[Block] = []
    for index, lines in enumerate(pages):
        page_outline = outline.get(index, [])
        if index in ocr_blocks:
            headings = [Block(t, kind="heading", level=lv, page=index + 1) for t, lv in page_outline]
            blocks.extend(headings + ocr_blocks[index])
        else:
            blocks.extend(pdf_layout.page_blocks(lines, index + 1, body, levels, page_outline))
    if not blocks:
        raise DocumentError(f"{name}: no text found in {total} page(s), neither in the text layer nor by OCR")
    title = (doc.get_metadata_value("Title") or "").strip() or None
    return ParsedDocument(
        format="pdf",
        blocks=blocks,
        title=title,
        meta={"pages": total, "ocr_pages": [i + 1 for i in sorted(ocr_blocks)]},
    )


def _outline(doc: pdfium.PdfDocument, total: int) -> dict[int, list[tuple[str, int]]]:
    """Bookmarks by 0-based page index, as (title, heading level); a broken outline is ignored, not fatal."""
    found: dict[int, list[tuple[str, int]]] = {}
    try:
        for count, bookmark in enumerate(doc.get_toc(max_depth=6)):
            if count >= 5000:
                break
            dest = bookmark.get_dest()
            index = dest.get_index() if dest is not None else None
            title = bookmark.get_title().strip()
            if index is None or not 0 <= index < total or not title:
                continue
            found.setdefault(index, []).append((title, bookmark.level + 1))
    except pdfium.PdfiumError:
        return {}
    return found


def _chars(page: pdfium.PdfPage) -> list[pdf_layout.Char]:
    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        chars = []
        left, right, bottom, top = ctypes.c_double(), ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
        for i in range(count):
            code = pdfium_c.FPDFText_GetUnicode(textpage, i)
            if code == 0 or 0xD800 <= code <= 0xDFFF:
                continue
            if not pdfium_c.FPDFText_GetCharBox(textpage, i, left, right, bottom, top):
                continue
            size = float(pdfium_c.FPDFText_GetFontSize(textpage, i))
            chars.append(pdf_layout.Char(chr(code), left.value, bottom.value, right.value, top.value, size))
        return chars
    finally:
        textpage.close()


def _has_image(page: pdfium.PdfPage) -> bool:
    # Only a page carrying a picture can be a scan; a nearly blank page (a chapter end with just its page
    # number) is not worth a second of OCR.
    for _ in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=4):
        return True
    return False


def _render(page: pdfium.PdfPage, name: str, limits: ParseLimits) -> Image.Image:
    width, height = page.get_size()
    scale = _OCR_LONG_SIDE / max(width, height, 1.0)
    # Never render more pixels than an image would be allowed to have.
    max_scale = (limits.max_image_pixels / max(width * height, 1.0)) ** 0.5
    scale = min(scale, max_scale)
    try:
        bitmap = page.render(scale=scale, grayscale=True)
    except pdfium.PdfiumError as exc:
        raise DocumentError(f"{name}: a page cannot be rendered for OCR ({exc})") from exc
    try:
        return bitmap.to_pil().convert("RGB")
    finally:
        bitmap.close()
