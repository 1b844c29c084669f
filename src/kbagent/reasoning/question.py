"""Splitting a question into the parts an answer must cover, for the offline reasoner.

"年假和病假分别有多少天？" has two parts ("年假有多少天", "病假有多少天"); "Who directed X and when was it released?"
has two; "Who was the first president of the association which published Journal Y?" has two as well (the
relative clause is a hop of its own). Each part keeps its content terms, which coverage checks look for in the
evidence, and the answer-type slot its question words ask for (``answer_slots``: "几天" is a number of days to
find, never a word to find). The split is heuristic: a question it cannot split is one part, which is always safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import jieba

from kbagent.reasoning.answer_slots import read_slot
from kbagent.reasoning.terms import Term, is_cjk, terms


@dataclass(frozen=True, slots=True)
class QuestionPart:
    """``hop`` marks a part split off at a relative clause ("the film that was shot in Leland"): its answer
    is expected in a paragraph linked to another part's paragraph, not beside it."""

    text: str
    terms: tuple[Term, ...]
    hop: bool = False
    slot: str = ""
    hint: str = ""


_ZH_CLAUSE = re.compile(r"[，,；;？?。！!\n]+")
_ZH_CONJ = frozenset({"和", "及", "以及", "与", "、", "跟", "或", "或者", "还有"})
_ZH_QUESTION_WORDS = ("什么", "怎么", "多少", "如何", "哪", "几", "吗", "是否", "谁", "何")

_EN_SENTENCE = re.compile(r"[?;!\n]+|(?<=[a-z0-9])\.\s+")
_WH = r"(?:what|who|whom|whose|when|where|why|how|which|is|are|was|were|does|do|did|can|could|should|will)"
# ", and when ...", " and how ...": a new clause starts after the conjunction.
_EN_CLAUSE_SPLIT = re.compile(rf",?\s+(?:and|but|or)\s+(?={_WH}\b)", re.IGNORECASE)
# A relative clause in the middle of a question is a hop of its own ("... the association which published ...").
_EN_RELATIVE = re.compile(r"(?<=\w)\s+(?=(?:which|that|who|whom|whose|where)\s+\w)", re.IGNORECASE)
_EN_NOUN_CONJ = re.compile(r"\s+(?:and|or)\s+", re.IGNORECASE)
_EN_VERBISH = re.compile(rf"\b(?:{_WH[3:-1]}|has|have|had|be|been)\b", re.IGNORECASE)


def _part(text: str, hop: bool = False) -> QuestionPart | None:
    text = text.strip(" ,，、")
    reading = read_slot(text)
    found = tuple(terms(reading.content))
    return QuestionPart(text, found, hop, reading.slot, reading.hint) if found else None


def _split_zh_clause(clause: str) -> list[str]:
    words = jieba.lcut(clause)
    segments: list[str] = [""]
    for word in words:
        if word in _ZH_CONJ:
            segments.append("")
        else:
            segments[-1] += word
    segments = [s for s in segments if s.strip()]
    if len(segments) < 2:
        return [clause.replace("分别", "")]
    first, last = segments[0], segments[-1]
    # "A和B分别有多少天": A is a bare noun phrase; B's tail is the predicate the conjuncts share.
    bare = not any(q in first for q in _ZH_QUESTION_WORDS) and len(first) <= 10
    head_len = len(first)
    predicate = last[head_len:].replace("分别", "") if bare and len(last) > head_len else ""
    if predicate:
        heads = [*segments[:-1], last[:head_len]]
        return [head + predicate for head in heads]
    return [s.replace("分别", "") for s in segments]


def _split_en_sentence(sentence: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    for clause in _EN_CLAUSE_SPLIT.split(sentence):
        pieces = [p for p in _EN_RELATIVE.split(clause) if p.strip()]
        hop = len(pieces) > 1
        for piece in pieces:
            conjuncts = [c for c in _EN_NOUN_CONJ.split(piece) if c.strip()]
            if len(conjuncts) < 2:
                out.append((piece, hop))
                continue
            first_words = conjuncts[0].split()
            out.append((conjuncts[0], hop))
            for extra in conjuncts[1:]:
                words = extra.split()
                # "the capital of France and Germany": a short bare noun phrase borrows the first conjunct's lead.
                if len(words) <= 4 and not _EN_VERBISH.search(extra) and len(first_words) > len(words):
                    out.append((" ".join(first_words[: len(first_words) - len(words)] + words), hop))
                else:
                    out.append((extra, hop))
    return out


def split_question(question: str) -> list[QuestionPart]:
    """The parts of ``question`` (at least one when it has any content term)."""
    texts: list[tuple[str, bool]] = []
    if is_cjk(question):
        for clause in _ZH_CLAUSE.split(question):
            if not clause.strip():
                continue
            if is_cjk(clause):
                texts.extend((text, False) for text in _split_zh_clause(clause))
            else:
                texts.extend(_split_en_sentence(clause))
    else:
        for sentence in _EN_SENTENCE.split(question):
            if sentence.strip():
                texts.extend(_split_en_sentence(sentence))
    parts = [p for p in (_part(t, hop) for t, hop in texts) if p is not None]
    # A part whose terms are all inside another part adds nothing to check, unless it asks for a value the other
    # does not ("年假有几天" beside "年假怎么申请").
    unique: list[QuestionPart] = []
    for part in parts:
        keys = {t.key for t in part.terms}
        if any(
            keys <= {t.key for t in other.terms} and other is not part and part.slot in ("", other.slot)
            for other in parts
            if len(other.terms) > len(part.terms)
        ):
            continue
        if any(keys == {t.key for t in kept.terms} and part.slot in ("", kept.slot) for kept in unique):
            continue
        unique.append(part)
    if unique:
        return unique
    whole = _part(question)
    return [whole] if whole else []
