"""Bytes of a text file to ``str``: byte-order marks, declared charsets, detection, and binary rejection.

Chinese documents are often saved in GBK/GB18030 (Windows "ANSI" on a Chinese system) or Big5, without any
marker. The order below is deliberate: a BOM is proof; a charset the document declares (HTML ``<meta>``) is
trusted only if it decodes cleanly; strict UTF-8 is almost never a false positive on real text; only then is
charset-normalizer asked, and GBK/GB2312 answers are widened to GB18030, their superset, so rare characters
do not fail.
"""

from __future__ import annotations

import codecs

import charset_normalizer

from kbagent.errors import DocumentError

# Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Encodings whose superset decodes strictly more files the same way.
_WIDER = {"gb2312": "gb18030", "gbk": "gb18030", "cp936": "gb18030", "euc_cn": "gb18030", "big5": "big5hkscs"}

# How much of the file is sniffed for binary content; enough to see a header and some body.
SNIFF_BYTES = 8192
# Share of control characters (other than tab, newline, carriage return, form feed) above which bytes are
# binary, not text. Real text has none; a few stray ones (ESC from a terminal log) are tolerated.
MAX_CONTROL_RATIO = 0.05
# Share of U+FFFD replacement characters tolerated after decoding: a handful of damaged bytes in a big file
# should not reject it, a mostly undecodable file must.
MAX_REPLACEMENT_RATIO = 0.01

_TEXT_CONTROLS = {0x09, 0x0A, 0x0C, 0x0D}


def bom_encoding(data: bytes) -> str | None:
    """The encoding a byte-order mark at the start of ``data`` names, or None."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def looks_binary(data: bytes) -> bool:
    """True when the start of ``data`` is not text in any encoding we read (NUL bytes, many control bytes).

    UTF-16/32 text with a BOM is text even though it holds NUL bytes.
    """
    if bom_encoding(data) in {"utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"}:
        return False
    head = data[:SNIFF_BYTES]
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if (b < 0x20 and b not in _TEXT_CONTROLS) or b == 0x7F)
    return controls / len(head) > MAX_CONTROL_RATIO


def normalize_encoding_name(name: str) -> str | None:
    """A Python codec name for a declared charset (``GB2312`` -> ``gb18030``), or None if Python has none."""
    try:
        canonical = codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None
    return _WIDER.get(canonical, canonical)


def decode_text(data: bytes, name: str, declared: str | None = None) -> tuple[str, str]:
    """Decode ``data`` (the file ``name``) to text; returns ``(text, encoding)``.

    ``declared`` is a charset the file names itself (HTML meta); it is used only if it decodes cleanly.
    Raises DocumentError naming the file when the bytes are binary or decode as no known text encoding.
    A leading BOM is removed; line endings are normalised to ``\\n``.
    """
    if looks_binary(data):
        raise DocumentError(
            f"{name}: binary data, not text (NUL or control bytes found in the first {SNIFF_BYTES} bytes)"
        )
    text, encoding = _decode(data, name, declared)
    if text.startswith("\ufeff"):
        text = text[1:]
    replacements = text.count("\ufffd")
    if text and replacements / len(text) > MAX_REPLACEMENT_RATIO:
        raise DocumentError(
            f"{name}: text is not decodable: {replacements} of {len(text)} characters are invalid in {encoding}"
        )
    return text.replace("\r\n", "\n").replace("\r", "\n"), encoding


def _decode(data: bytes, name: str, declared: str | None) -> tuple[str, str]:
    bom = bom_encoding(data)
    if bom is not None:
        try:
            return data.decode(bom), bom
        except UnicodeDecodeError as exc:
            raise DocumentError(f"{name}: text is not decodable: starts with a {bom} mark but {exc.reason}") from exc
    if declared:
        encoding = normalize_encoding_name(declared)
        if encoding is not None:
            try:
                return data.decode(encoding), encoding
            except UnicodeDecodeError:
                pass  # a wrong declaration is common (pages re-saved by editors): fall through to detection
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    best = charset_normalizer.from_bytes(data).best()
    if best is None or best.encoding is None:
        raise DocumentError(
            f"{name}: text is not decodable: it is not UTF-8 and no known encoding (GB18030, Big5, ...) fits"
        )
    encoding = normalize_encoding_name(best.encoding) or best.encoding
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError:
        # charset-normalizer tolerates a little damage that a strict decode refuses; keep its reading,
        # the replacement-ratio check in decode_text then decides whether the file is usable.
        return data.decode(encoding, errors="replace"), encoding
