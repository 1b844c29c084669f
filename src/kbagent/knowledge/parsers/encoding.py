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

# Share of frequent Chinese characters a Chinese reading needs when the detector had no answer.
MIN_PLAUSIBILITY = 0.5

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
    nul = text.find("\x00")
    if nul >= 0:  # past the sniffed head; PostgreSQL cannot even store a NUL character in text
        raise DocumentError(f"{name}: binary data, not text (NUL character at position {nul:,})")
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
    detected = _detect(data)
    if detected is not None and detected not in _CHINESE:
        return data.decode(detected, errors="replace"), detected
    # Chinese legacy encodings overlap: short GBK text often also decodes as Big5, and charset-normalizer
    # gives up on GB18030's four-byte sequences. Read the bytes each way and keep the most plausible text;
    # ties go to GB18030 (mainland users are the majority), then to the detector's answer.
    readings: list[tuple[float, int, str, str]] = []
    for rank, encoding in enumerate(dict.fromkeys(e for e in ("gb18030", detected, "big5hkscs") if e)):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        readings.append((_chinese_plausibility(text), -rank, text, encoding))
    # Without the detector's backing, a reading must look like Chinese: random high bytes can happen to
    # form valid Big5 pairs of rare characters.
    if detected is None:
        readings = [r for r in readings if r[0] >= MIN_PLAUSIBILITY]
    if not readings:
        raise DocumentError(
            f"{name}: text is not decodable: it is not UTF-8 and no known encoding (GB18030, Big5, ...) fits"
        )
    _, _, text, encoding = max(readings)
    return text, encoding


# Among equally good detector answers, the encoding a file in our users' hands most likely has.
_PREFERRED = ("gb18030", "big5hkscs", "cp1252", "cp1251", "cp932", "cp949")
# Below this many bytes the detector's non-Chinese answers are unreliable (4 bytes of GBK "look" Korean).
SHORT_TEXT_BYTES = 200


def _detect(data: bytes) -> str | None:
    """charset-normalizer's answer as a Python codec name; None when it has none we accept."""
    matches = [m for m in charset_normalizer.from_bytes(data) if m.encoding]
    # UTF-16/32 are accepted only with a BOM (handled before): without one, a guess of UTF-16 on a few
    # bytes of legacy text is wrong more often than right.
    matches = [m for m in matches if not m.encoding.startswith(("utf_16", "utf_32"))]
    if not matches:
        return None
    top = [m for m in matches if (m.chaos, m.coherence) == (matches[0].chaos, matches[0].coherence)]
    names = [normalize_encoding_name(m.encoding) or m.encoding for m in top]
    chosen = next((e for e in _PREFERRED if e in names), names[0])
    if chosen not in _CHINESE and len(data) < SHORT_TEXT_BYTES:
        for encoding in ("gb18030", "big5hkscs"):
            try:
                if _chinese_plausibility(data.decode(encoding)) >= 0.9:
                    return encoding
            except UnicodeDecodeError:
                continue
    return chosen


_CHINESE = frozenset({"gb18030", "big5hkscs", "cp950", "big5"})


def _common_hanzi(char: str) -> bool:
    # Frequent characters: GB2312 level 1 (3,755 simplified) or Big5's frequent block (5,401 traditional).
    # A text decoded with the wrong Chinese codec is full of rare characters, kana and symbols instead.
    try:
        gb = char.encode("gb2312")
        if len(gb) == 2 and 0xB0 <= gb[0] <= 0xD7:
            return True
    except UnicodeEncodeError:
        pass
    try:
        big5 = char.encode("big5")
        return len(big5) == 2 and 0xA4 <= big5[0] <= 0xC6
    except UnicodeEncodeError:
        return False


def _chinese_plausibility(text: str) -> float:
    """Share of non-ASCII characters of ``text`` that are frequent Chinese characters or CJK punctuation."""
    sample = [c for c in text[:4000] if ord(c) > 0x7F]
    if not sample:
        return 0.0
    good = sum(1 for c in sample if "\u3000" <= c <= "\u303f" or "\uff00" <= c <= "\uffef" or _common_hanzi(c))
    return good / len(sample)
