"""Parsed blocks to paragraphs ("chunks") of a target token size, each with the headings above it.

Rules a caller can rely on:
- A chunk's ``title_path`` is the heading stack above it: a level-2 heading under a level-1 gives
  ``(h1, h2)``; a heading of the same or a higher level replaces the deeper ones. Heading text is carried
  in the path, not repeated in the content; a heading with no body of its own becomes a chunk of its own
  so that its words stay searchable.
- Blocks are split on block boundaries first, then sentences (Chinese 。！？； and Latin . ! ? followed by
  a space and not by a lower-case letter; "e.g.", "Dr.", "3.5" are not ends), then line breaks, clauses
  (，、：, and Latin ", " / "; "), spaces, and only as a last resort characters. So a chunk is cut inside a
  word or a Chinese sentence only when that sentence alone is over the target.
- Small blocks under the same title path, on the same page, are packed together up to the target; a block
  marked ``atomic`` is never packed with another; a chunk never spans two pages or two title paths.
- Every chunk's estimated tokens are <= ``target_tokens``, except a single character that costs more.
- Concatenating the chunks keeps every non-whitespace character of the body blocks, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from kbagent.knowledge.parsers.base import Block, ParsedDocument
from kbagent.tokens import estimate_tokens, truncate_to_tokens


@dataclass(frozen=True)
class Chunk:
    content: str
    title_path: tuple[str, ...]
    page: int | None
    ocr: bool
    token_count: int


# --- sentences -------------------------------------------------------------------------------------------

_CLOSERS = "\"'”’」』）》】〕)]"
# A Chinese sentence ends at 。！？； (or a run of them, e.g. "？！"), plus any closing quotes/brackets.
_CJK_END = re.compile(f"[。！？；]+[{re.escape(_CLOSERS)}]*\\s*")
# A Latin sentence ends at . ! ? plus closers, followed by whitespace and then not a lower-case letter.
_LATIN_END = re.compile(f"([.!?]+)[{re.escape(_CLOSERS)}]*(\\s+)(?=[^\\s])")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc fig figs no nos vol pp approx dept est inc ltd co corp jan feb mar apr jun "
    "jul aug sep sept oct nov dec mt ft cf al ca".split()
)
_WORD_BEFORE = re.compile(r"(\S+)$")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped, in order; none empty. Joining them loses only whitespace."""
    return [s.strip() for s in _sentence_spans(text) if s.strip()]


def _sentence_spans(text: str) -> list[str]:
    """Sentences as spans that concatenate exactly to ``text`` (each keeps its trailing whitespace)."""
    cuts: set[int] = set()
    for m in _CJK_END.finditer(text):
        cuts.add(m.end())
    for m in _LATIN_END.finditer(text):
        if m.group(1) == "." and not _is_latin_end(text, m.start(1), m.end()):
            continue
        if text[m.end()].islower():
            continue
        cuts.add(m.end())
    return _cut(text, cuts)


def _is_latin_end(text: str, dot: int, after: int) -> bool:
    word = _WORD_BEFORE.search(text, max(0, dot - 40), dot)  # a bounded look-back keeps splitting linear
    if word is None:
        return True
    token = word.group(1).lstrip("\"'“‘(（[")
    if "." in token:  # e.g. / i.e. / U.S.: the last dot of an abbreviation with inner dots
        return False
    if len(token) == 1 and token.isalpha():  # initials: "J. Smith"
        return False
    return token.lower() not in _ABBREVIATIONS


def _cut(text: str, cuts: set[int]) -> list[str]:
    spans: list[str] = []
    start = 0
    for pos in sorted(cuts):
        if start < pos < len(text):
            spans.append(text[start:pos])
            start = pos
    spans.append(text[start:])
    return [s for s in spans if s]


# Finer boundaries for a sentence over the target, tried in order.
_LINE = re.compile(r"\n\s*")
_CLAUSE = re.compile(r"[，、：,;:；](?=\s)\s*|[，、：]\s*")
_SPACE = re.compile(r"\s+")


def _split_to_fit(text: str, target: int) -> list[tuple[str, int]]:
    """Spans of ``text`` (concatenating to it) with their estimates, each within ``target`` tokens where any
    boundary allows."""
    tokens = estimate_tokens(text)
    if tokens <= target:
        return [(text, tokens)]
    out: list[tuple[str, int]] = []
    for sentence in _sentence_spans(text):
        out.extend(_split_long(sentence, estimate_tokens(sentence), target, 0))
    return out


_FINER = (_LINE, _CLAUSE, _SPACE)


def _split_long(text: str, tokens: int, target: int, level: int) -> list[tuple[str, int]]:
    if tokens <= target:
        return [(text, tokens)]
    if level == len(_FINER):
        return [(piece, estimate_tokens(piece)) for piece in _split_chars(text, target)]
    out: list[tuple[str, int]] = []
    for part in _cut(text, {m.end() for m in _FINER[level].finditer(text)}):
        out.extend(_split_long(part, estimate_tokens(part), target, level + 1))
    return out


def _split_chars(text: str, target: int) -> list[str]:
    out: list[str] = []
    # Search a window of characters, not the whole rest of the text, so this stays linear in the text's
    # length; the window grows when all of it fits (cheap characters).
    window = 4 * target + 4
    pos = 0
    while pos < len(text):
        head = truncate_to_tokens(text[pos : pos + window], target)
        while len(head) == window and pos + window < len(text):
            window *= 2
            head = truncate_to_tokens(text[pos : pos + window], target)
        head = head or text[pos]  # a single character over the target still moves on
        out.append(head)
        pos += len(head)
    return out


# --- packing ---------------------------------------------------------------------------------------------

# A blank line between blocks of one chunk. Its cost is what the estimator charges for it, at least one token;
# _enforce_target checks the joined text anyway.
_BLOCK_SEPARATOR = "\n\n"


@cache
def _separator_tokens() -> int:
    return max(1, estimate_tokens(_BLOCK_SEPARATOR))


@dataclass
class _Unit:
    text: str  # a span of one block (a whole block, or one of its sentences/clauses)
    tokens: int
    block_start: bool  # first span of its block: a separator goes before it unless it opens the chunk


@dataclass
class _Run:
    title_path: tuple[str, ...]
    page: int | None
    ocr: bool
    atomic: bool
    blocks: list[Block]


def chunk_document(doc: ParsedDocument, target_tokens: int, min_tokens: int = 0) -> list[Chunk]:
    """Chunks of ``doc`` of at most ``target_tokens`` estimated tokens each (see the module docstring).

    ``min_tokens``: a chunk smaller than this takes sentences from its neighbour in the same run (same title
    path and page) where that keeps both within the target, so a long paragraph does not end in a scrap.
    """
    if target_tokens < 1:
        raise ValueError(f"target_tokens must be at least 1, got {target_tokens}")
    chunks: list[Chunk] = []
    for run in _runs(doc.blocks):
        packed = _pack(run, target_tokens)
        if min_tokens > 0:
            _rebalance(packed, min_tokens, target_tokens)
        for units in _enforce_target(packed, target_tokens):
            content = _join(units).strip()
            if content:
                chunks.append(Chunk(content, run.title_path, run.page, run.ocr, estimate_tokens(content)))
    return chunks


def _runs(blocks: list[Block]) -> list[_Run]:
    """Consecutive body blocks sharing title path, page and OCR flag; an atomic block is a run of its own."""
    runs: list[_Run] = []
    stack: list[tuple[int, str]] = []
    for i, block in enumerate(blocks):
        text = block.text.strip()
        if not text:
            continue
        if block.kind == "heading":
            level = max(block.level, 1)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            if _heading_is_empty(blocks, i, level):
                runs.append(_Run(_path(stack), block.page, block.ocr, True, [Block(text, page=block.page)]))
            continue
        path = _path(stack)
        last = runs[-1] if runs else None
        if (
            last is not None
            and not block.atomic
            and not last.atomic
            and (last.title_path, last.page, last.ocr) == (path, block.page, block.ocr)
        ):
            last.blocks.append(block)
        else:
            runs.append(_Run(path, block.page, block.ocr, block.atomic, [block]))
    return runs


def _heading_is_empty(blocks: list[Block], i: int, level: int) -> bool:
    # A heading has no body if the next non-blank block is a heading of the same or a higher level (or none):
    # nothing would carry it in its title path, so its words would be lost to search.
    for j in range(i + 1, len(blocks)):
        block = blocks[j]
        if not block.text.strip():
            continue
        return block.kind == "heading" and max(block.level, 1) <= level
    return True


def _path(stack: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(text for _, text in stack)


def _pack(run: _Run, target: int) -> list[list[_Unit]]:
    chunks: list[list[_Unit]] = []
    current: list[_Unit] = []
    cost = 0
    for block in run.blocks:
        units = [
            _Unit(span, tokens, i == 0) for i, (span, tokens) in enumerate(_split_to_fit(block.text.strip(), target))
        ]
        block_cost = sum(u.tokens for u in units)
        # A block that fits a chunk on its own starts a new chunk rather than being split across two.
        if current and cost + _separator_tokens() + block_cost > target and block_cost <= target:
            chunks.append(current)
            current, cost = [], 0
        for unit in units:
            extra = unit.tokens + (_separator_tokens() if unit.block_start and current else 0)
            if current and cost + extra > target:
                chunks.append(current)
                current, cost = [], 0
                extra = unit.tokens
            current.append(unit)
            cost += extra
    if current:
        chunks.append(current)
    return chunks


def _cost(units: list[_Unit]) -> int:
    return sum(u.tokens for u in units) + _separator_tokens() * sum(1 for u in units[1:] if u.block_start)


def _rebalance(chunks: list[list[_Unit]], min_tokens: int, target: int) -> None:
    """Move boundary units into chunks under ``min_tokens`` from a neighbour, keeping both within ``target``."""
    for i, units in enumerate(chunks):
        if _cost(units) >= min_tokens:
            continue
        if i > 0:  # take from the end of the previous chunk
            prev = chunks[i - 1]
            while len(prev) > 1 and _cost(units) < min_tokens:
                moved = [prev[-1], *units]
                if _cost(moved) > target or _cost(prev[:-1]) < _cost(moved):
                    break
                prev.pop()
                units.insert(0, moved[0])
        if i + 1 < len(chunks):  # take from the start of the next chunk
            nxt = chunks[i + 1]
            while len(nxt) > 1 and _cost(units) < min_tokens:
                moved = [*units, nxt[0]]
                if _cost(moved) > target or _cost(nxt[1:]) < _cost(moved):
                    break
                units.append(nxt.pop(0))


def _enforce_target(chunks: list[list[_Unit]], target: int) -> list[list[_Unit]]:
    """Check each chunk's real estimate; move trailing units to a new chunk while it is over the target.

    Packing adds up the units' own estimates, and the estimate of a joined text is normally no more than
    that sum; this keeps the guarantee even where it is not (a join can create a costlier pattern).
    """
    out: list[list[_Unit]] = []
    for chunk in chunks:
        units: list[_Unit] = list(chunk)
        while units:
            spill: list[_Unit] = []
            while len(units) > 1 and estimate_tokens(_join(units).strip()) > target:
                spill.insert(0, units.pop())
            out.append(units)
            if spill:
                spill[0] = _Unit(spill[0].text, spill[0].tokens, True)  # it now opens a chunk of its own
            units = spill
    return out


def _join(units: list[_Unit]) -> str:
    parts: list[str] = []
    for unit in units:
        if parts and unit.block_start:
            parts[-1] = parts[-1].rstrip()
            parts.append(_BLOCK_SEPARATOR)
            parts.append(unit.text.lstrip())
        else:
            parts.append(unit.text)
    return "".join(parts)
