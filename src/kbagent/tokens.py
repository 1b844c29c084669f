"""Local token estimate for mixed Chinese/Latin text, used for every budget in the product.

It must not under-count the real tokenizers (cl100k, o200k, Qwen): a budget that under-counts sends requests over
the window, which costs a failed call and a shortened retry. Counting with one real tokenizer would not do either:
the product talks to many providers, and their vocabularies disagree by 2x on Chinese (cl100k ~1.3 tokens per
common character, Qwen ~0.7) and on digits (Qwen splits every digit, cl100k groups three).

So the estimate is a sum of per-character-class costs, each set so that the sum stays above what the three
tokenizers charge on real text (measured by ``benchmarks/bench_tokens.py``, asserted by ``tests/test_tokens.py``):

- ASCII words: 1 token when short, else 0.45 per letter - 0.5 (names, rare words and identifiers split);
- digits: 1 each (Qwen splits every digit) and 1 for a space before a number (its own token in all three);
- ASCII punctuation: 1 each; newlines: 1; runs of 2+ spaces or tabs: 1 each;
- CJK characters (ideographs, kana, Hangul, CJK and full-width punctuation): 1.35 for those every tokenizer has as
  one token, 2 for two-token ones, 3 for rarer ones, from a table generated from the vocabularies
  (``cjk_token_costs.txt``, ``scripts/generate_cjk_token_costs.py``);
- other 2-byte UTF-8 (accented Latin, Greek, Cyrillic, Arabic, Hebrew): 1.5; other 3-byte (Thai, Indic, symbols,
  joiners): 2; characters outside the BMP (emoji, rare ideographs): 3.

Known gaps (see the benchmark): random letter strings, long Unicode range tables and column-aligned number tables
can exceed the estimate by up to ~20%; the guard's recovery from explicit overflow errors covers those.

Classification is one ``str.translate`` through a table built on first use, then C-level counting.
"""

from __future__ import annotations

import math
import re
import string
from importlib import resources

# Class letters produced by the translation table.
_LETTER, _DIGIT, _PUNCT, _NEWLINE, _SPACE = "a", "d", "p", "n", "s"
_CJK1, _CJK2, _CJK3, _TWO_BYTE, _THREE_BYTE = "1", "2", "3", "x", "y"

_WEIGHTS = {
    _LETTER: 0.0,  # letters are priced per word below
    _DIGIT: 1.0,
    _PUNCT: 1.0,
    _NEWLINE: 1.0,
    _SPACE: 0.0,
    _CJK1: 1.35,
    _CJK2: 2.0,
    _CJK3: 3.0,
    _TWO_BYTE: 1.5,
    _THREE_BYTE: 2.0,
}
# A word of L letters: 1 token when short, then ~0.45 per letter (long, rare and camelCase words split).
WORD_LETTER_WEIGHT = 0.45
WORD_DISCOUNT = 0.5
SPACE_RUN_WEIGHT = 1.0
SPACE_BEFORE_DIGIT_WEIGHT = 1.0
ASTRAL_WEIGHT = 3.0

_WORD = re.compile(r"[A-Za-z]+")
_SPACE_RUN = re.compile(r"[ \t]{2,}")
# All three tokenizers make the space before a number its own token (" 2026" -> " ", "202", "6").
_SPACE_BEFORE_DIGIT = re.compile(r"\s(?=[0-9])")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")

_table: dict[int, str] | None = None


# CJK ideographs, kana, Hangul, CJK punctuation and full-width forms: one class per cost in tokens.
CJK_RANGES = (
    (0x3000, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF00, 0xFFEF),
)
COST_TOKENIZERS = ("cl100k_base", "o200k_base", "qwen3")
_COSTS_FILE = "cjk_token_costs.txt"


def _cjk_costs() -> dict[int, str]:
    """Per character, the most tokens any of cl100k/o200k/Qwen spends on it alone: frequent characters are one
    token, rare ones fall back to their UTF-8 bytes. Read from a file generated from the tokenizers' vocabularies
    (scripts/generate_cjk_token_costs.py); loading the vocabularies here would cost seconds."""
    one, two = (resources.files("kbagent") / _COSTS_FILE).read_text(encoding="utf-8").split("\n")[:2]
    table = {cp: _CJK3 for lo, hi in CJK_RANGES for cp in range(lo, hi + 1)}
    table.update({ord(c): _CJK1 for c in one})
    table.update({ord(c): _CJK2 for c in two})
    return table


def _class_of(cp: int) -> str:
    char = chr(cp)
    if char in string.ascii_letters:
        return _LETTER
    if char in string.digits:
        return _DIGIT
    if char in "\n\r":
        return _NEWLINE
    if char in " \t":
        return _SPACE
    if cp < 0x80:
        return _PUNCT  # ASCII punctuation and control characters
    if cp < 0x800:
        return _TWO_BYTE
    return _THREE_BYTE


def _translation_table() -> dict[int, str]:
    global _table
    if _table is None:
        table = {cp: _class_of(cp) for cp in range(0x10000)}
        table.update(_cjk_costs())
        _table = table
    return _table


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: not below cl100k, o200k or Qwen counts on real mixed Chinese/English text,
    code and emoji (random strings of letters can still exceed it)."""
    if not text:
        return 0
    classes = text.translate(_translation_table())
    total = sum(weight * classes.count(letter) for letter, weight in _WEIGHTS.items() if weight)
    total += sum(max(1.0, WORD_LETTER_WEIGHT * len(w) - WORD_DISCOUNT) for w in _WORD.findall(text))
    total += SPACE_RUN_WEIGHT * len(_SPACE_RUN.findall(text))
    total += SPACE_BEFORE_DIGIT_WEIGHT * len(_SPACE_BEFORE_DIGIT.findall(text))
    total += ASTRAL_WEIGHT * len(_ASTRAL.findall(text))
    return math.ceil(total)


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose estimate fits ``budget`` (binary search on characters)."""
    if budget <= 0:
        return ""
    if estimate_tokens(text) <= budget:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]
