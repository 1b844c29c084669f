"""Images (PNG, JPEG, WebP, TIFF) read through OCR; each frame of a multi-page TIFF is a page.

The pixel limit is checked from the header before any pixel is decoded (Pillow opens lazily), so a tiny file that
declares a 100000 x 100000 canvas is refused without allocating it.
"""

from __future__ import annotations

import io
import re
import warnings

from PIL import Image, UnidentifiedImageError

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import ocr
from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress

FORMATS = {"PNG": "png", "JPEG": "jpeg", "WEBP": "webp", "TIFF": "tiff"}


def parse_image(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """OCR every frame of an image; blocks carry ``ocr=True`` and the frame number as page.

    Raises DocumentError for an unreadable or truncated image, a format other than PNG/JPEG/WebP/TIFF,
    more frames than ``limits.max_pages``, or a frame over ``limits.max_image_pixels``.
    """
    try:
        with warnings.catch_warnings():
            # Our own pixel check decides on size, and a damaged file's "Truncated File Read"/"Corrupt EXIF"
            # warnings tell the user nothing the errors below do not.
            warnings.simplefilter("ignore")
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        # Pillow refuses, at open, canvases over twice its own MAX_IMAGE_PIXELS; its message has the size.
        found = re.search(r"\((\d+) pixels\)", str(exc))
        raise _over_limit(name, int(found.group(1)) if found else None, limits) from exc
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise DocumentError(f"{name}: not a readable image ({exc})") from exc
    fmt = FORMATS.get(image.format or "")
    if fmt is None:
        raise DocumentError(f"{name}: image format {image.format} is not supported (PNG, JPEG, WebP, TIFF are)")
    frames = 1  # an animated WebP is one picture; its later frames repeat it
    if fmt == "tiff":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                frames = int(getattr(image, "n_frames", 1) or 1)
        except (OSError, ValueError, SyntaxError, EOFError) as exc:
            raise DocumentError(f"{name}: TIFF page directory is corrupt ({exc})") from exc
    if frames > limits.max_pages:
        raise DocumentError(f"{name}: {frames} frames, over the limit of {limits.max_pages} pages (max_pages)")
    blocks: list[Block] = []
    for index in range(frames):
        if frames > 1:
            try:
                image.seek(index)
            except (OSError, ValueError, SyntaxError, EOFError) as exc:
                raise DocumentError(f"{name}: image data is corrupt at page {index + 1} ({exc})") from exc
        page = index + 1 if frames > 1 else None
        frame = decode_frame(image, name, limits, index + 1)
        blocks.extend(ocr.lines_to_blocks(ocr.recognize(frame), page))
        if progress is not None:
            progress(index + 1, frames, f"OCR {name} page {index + 1}/{frames}")
    return ParsedDocument(format=fmt, blocks=blocks, meta={"ocr_pages": frames, "pages": frames})


def decode_frame(image: Image.Image, name: str, limits: ParseLimits, page: int) -> Image.Image:
    """Check the current frame's size against the pixel limit, then decode it to RGB."""
    width, height = image.size
    if width * height > limits.max_image_pixels:
        raise _over_limit(name, f"{width} x {height} pixels", limits)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as at open: size is checked above, damage raises below
            image.load()
            return image.convert("RGB")
    except Image.DecompressionBombError as exc:
        raise _over_limit(name, f"{width} x {height} pixels", limits) from exc
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise DocumentError(f"{name}: image data is corrupt or truncated at page {page} ({exc})") from exc


def _over_limit(name: str, size: str | int | None, limits: ParseLimits) -> DocumentError:
    dims = f"{size} pixels" if isinstance(size, int) else size or "too many pixels"
    return DocumentError(f"{name}: image is {dims}, over the limit of {limits.max_image_pixels} (max_image_pixels)")
