"""Joining the visual lines of a page back into running text, for Chinese and Latin scripts alike.

Chinese has no spaces between words, so a line break inside a Chinese sentence must vanish; in Latin text it
becomes a space, and a word hyphenated across the break is mended.
"""

from __future__ import annotations

import unicodedata


def is_cjk(char: str) -> bool:
    """True for Han, kana, hangul and CJK/full-width punctuation: characters written without spaces between."""
    code = ord(char)
    return (
        0x3000 <= code <= 0x303F  # CJK punctuation
        or 0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
        or 0x20000 <= code <= 0x2FA1F
    )


def join_lines(lines: list[str]) -> str:
    """Join lines into one paragraph: no space between CJK characters, one space between Latin words."""
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not out:
            out = line
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and line[0].islower():
            out = out[:-1] + line
        elif is_cjk(out[-1]) or is_cjk(line[0]):
            out += line
        else:
            out += " " + line
    return out


def is_usable_text(text: str) -> bool:
    """False when most characters are replacement, private-use or control characters: a text layer whose fonts
    lack a Unicode mapping extracts as such garbage and is better read by OCR."""
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return False
    bad = sum(1 for c in visible if c == "\ufffd" or unicodedata.category(c) in ("Co", "Cc", "Cs", "Cn"))
    return bad / len(visible) < 0.3
