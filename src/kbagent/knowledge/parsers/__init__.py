"""The parser registry: which parser reads a file, decided by its content first and its name second.

Entry point: ``parse_document(data, name, limits)`` returns a ``ParsedDocument`` (see ``base.py``) or raises
``kbagent.errors.DocumentError`` with a message naming the file and the reason or limit.

How to add a format (e.g. pdf, docx, xlsx, pptx, csv, images, zip):

1. Write ``parsers/<format>.py`` with a function following the ``Parser`` protocol in ``base.py``:
   ``parse_x(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument``.
   Honour ``limits`` (pages, pixels, rows, archive members) and raise DocumentError naming the file and limit.
2. Add one line to ``PARSERS``: ``"pdf": "kbagent.knowledge.parsers.pdf:parse_pdf"``. The module is imported
   only when a file of that format arrives, so heavy dependencies cost nothing at start-up.
3. Map its extensions in ``EXTENSIONS`` (``".pdf": "pdf"``); ``SUPPORTED_EXTENSIONS`` follows.
4. If the format has a signature, add it to ``MAGIC`` (``(b"%PDF-", "pdf")``). Formats that share a container
   (docx/xlsx/pptx are all zip) are told apart in ``_refine_container``: extend that function's branch.
   Text-based formats with no signature (csv) are recognised by extension once the bytes are known to be text.

Detection order in ``detect_format``: binary signatures, then HTML by content (a ``.pdf`` or ``.txt`` that is
really a saved web page is parsed as HTML), then binary sniffing, then the extension of a text file.
"""

from __future__ import annotations

import importlib
import io
import re
import zipfile
from pathlib import PurePath

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers.base import ParsedDocument, ParseLimits, Parser, Progress
from kbagent.knowledge.parsers.encoding import bom_encoding, looks_binary

# format name -> "module:function", imported lazily.
PARSERS: dict[str, str] = {
    "txt": "kbagent.knowledge.parsers.text:parse_text",
    "md": "kbagent.knowledge.parsers.markdown:parse_markdown",
    "html": "kbagent.knowledge.parsers.html:parse_html",
    "pdf": "kbagent.knowledge.parsers.pdf:parse_pdf",
    "docx": "kbagent.knowledge.parsers.docx:parse_docx",
    "pptx": "kbagent.knowledge.parsers.pptx:parse_pptx",
    "xlsx": "kbagent.knowledge.parsers.spreadsheet:parse_xlsx",
    "csv": "kbagent.knowledge.parsers.spreadsheet:parse_csv",
    "png": "kbagent.knowledge.parsers.image:parse_image",
    "jpeg": "kbagent.knowledge.parsers.image:parse_image",
    "webp": "kbagent.knowledge.parsers.image:parse_image",
    "tiff": "kbagent.knowledge.parsers.image:parse_image",
    "zip": "kbagent.knowledge.parsers.archive:parse_zip",
}

# lower-case file extension -> format name it suggests.
EXTENSIONS: dict[str, str] = {
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".csv": "csv",
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".webp": "webp",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".zip": "zip",
}

# File signatures: (leading bytes, format). Formats listed here without a parser are still recognised, so the
# error says "this is a PDF" instead of "binary data".
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "pdf"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),  # empty archive
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "ole"),  # legacy .doc/.xls/.ppt
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"{\\rtf", "rtf"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"RIFF", "riff"),  # WebP when bytes 8-12 say so (see _refine_container)
)

# Formats whose files are text: a file of these detected as binary is "binary data under a text extension".
TEXT_FORMATS = frozenset({"txt", "md", "html", "csv"})

# Names for formats in messages.
_DESCRIPTIONS = {
    "binary": "binary data",
    "zip": "a zip archive",
    "ole": "a legacy Office (OLE) file",
    "unknown": "an unknown type",
}

_HTML_START = re.compile(
    rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]", re.I | re.S
)


def supported_extensions() -> frozenset[str]:
    """Extensions of formats that have a parser (lower case, with the dot)."""
    return frozenset(ext for ext, fmt in EXTENSIONS.items() if fmt in PARSERS)


SUPPORTED_EXTENSIONS: frozenset[str] = supported_extensions()


def detect_format(data: bytes, name: str) -> str:
    """The format of a file from its bytes, with its name as a hint. Never raises.

    Returns a key of ``PARSERS`` when the file can be parsed, otherwise a descriptive name: another known
    signature without a parser (``"pdf"``, ``"zip"``, ...), ``"binary"`` for non-text bytes, or ``"unknown"``
    for text under an extension no parser claims.
    """
    for signature, fmt in MAGIC:
        if data.startswith(signature):
            return _refine_container(fmt, data, name)
    if _looks_like_html(data):
        return "html"
    if looks_binary(data):
        return "binary"
    ext = PurePath(name).suffix.lower()
    if not ext:
        return "txt"  # README, LICENSE, NOTES: extension-less text files are plain text
    return EXTENSIONS.get(ext, "unknown")


def parse_document(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Parse one file's bytes into blocks.

    Raises DocumentError (the message names ``name``) when the file is over ``limits.max_bytes``, empty,
    of an unsupported type, binary under a text extension, undecodable, or yields no text at all.
    """
    if len(data) > limits.max_bytes:
        raise DocumentError(f"{name}: file is {len(data):,} bytes, over the limit of {limits.max_bytes:,} bytes")
    if not data.strip():
        raise DocumentError(f"{name}: file is empty")
    fmt = detect_format(data, name)
    if fmt not in PARSERS:
        raise DocumentError(_unsupported_message(fmt, name))
    doc = _load(fmt)(data, name, limits, progress)
    if not any(block.text.strip() for block in doc.blocks):
        raise DocumentError(f"{name}: no text found in this {fmt} file")
    return doc


def _refine_container(fmt: str, data: bytes, name: str) -> str:
    # Containers shared by several formats are told apart here: docx/xlsx/pptx are zip archives with a
    # [Content_Types].xml and word/, xl/ or ppt/ members; WebP is a RIFF file with WEBP at bytes 8-12.
    if fmt == "riff":
        return "webp" if data[8:12] == b"WEBP" else "unknown"
    if fmt != "zip":
        return fmt
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
    except Exception:  # zipfile raises a zoo of types on a damaged directory (even RuntimeError subclasses)
        return "zip"  # the zip parser reports the damage
    if "[Content_Types].xml" in names:
        for prefix, office in (("word/", "docx"), ("xl/", "xlsx"), ("ppt/", "pptx")):
            if any(n.startswith(prefix) for n in names):
                return office
    return "zip"


def _looks_like_html(data: bytes) -> bool:
    head = data[:2048]
    encoding = bom_encoding(head)
    if encoding is not None and encoding != "utf-8":
        head = head.decode(encoding, errors="ignore").encode("utf-8", errors="ignore")
    head = head.removeprefix(b"\xef\xbb\xbf")
    return bool(_HTML_START.match(head))


def _unsupported_message(fmt: str, name: str) -> str:
    ext = PurePath(name).suffix.lower()
    supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
    if fmt == "binary" and EXTENSIONS.get(ext) in TEXT_FORMATS:
        return f"{name}: binary data under a text extension ({ext}); the file is not text"
    what = _DESCRIPTIONS.get(fmt, f"a {fmt} file")
    shown = ext or "no extension"
    return f"{name}: unsupported file type: {what} ({shown}); supported extensions: {supported}"


def _load(fmt: str) -> Parser:
    module_name, _, function = PARSERS[fmt].partition(":")
    parser: Parser = getattr(importlib.import_module(module_name), function)
    return parser
