"""The offline reasoner: every judgement without a language model, by reading the evidence.

It is what runs on a fresh machine with no model configured, and what the agent falls back to when a model fails
mid-request. It never knows more than the evidence says: coverage is lexical, follow-up queries come from the
question's uncovered parts and from names the evidence itself contains, and the answer quotes evidence sentences
with their citation markers and lists what the knowledge base did not confirm.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

from kbagent.reasoning.answer_slots import slot_matches, slot_satisfied
from kbagent.reasoning.base import AnswerSpec, Assessment, Decision, History
from kbagent.reasoning.coverage import PartCoverage, cover, follow_up_queries, index_evidence
from kbagent.reasoning.entities import sentences
from kbagent.reasoning.evidence import Evidence
from kbagent.reasoning.offline_summary import summarize_offline
from kbagent.reasoning.question import QuestionPart, split_question
from kbagent.reasoning.terms import Term, TermIndex, is_cjk, language_of, terms

# Most evidence sentences quoted in one extractive answer: enough for a compound question, short enough to read.
MAX_QUOTED_SENTENCES = 5
# A sentence introducing a list or table is quoted with what follows it, up to about this many characters.
UNIT_CHARS = 300

_FOLLOW_UP_ZH = re.compile(r"^(那|那么|还有|另外|再问|以及)|呢[？?]?$|(它|他|她|其|该|这个|那个|上述|前者|后者)")
_FOLLOW_UP_EN = re.compile(
    r"^(and|what about|how about|also)\b|\b(it|its|they|them|their|this|that|those|these|he|she|his|her)\b",
    re.IGNORECASE,
)

TEXTS = {
    "zh": {
        "intro": "根据知识库资料：",
        "nothing": "知识库中没有找到能回答这个问题的资料。",
        "unconfirmed": "知识库未能确认：",
        "no_datasets": "没有选择任何知识库，无法检索资料。",
        "degraded": "（语言模型暂时不可用，以下是直接摘录的知识库原文。）",
        "sep": "；",
        "end": "。",
    },
    "en": {
        "intro": "From the knowledge base:",
        "nothing": "The knowledge base has nothing that answers this question.",
        "unconfirmed": "Not confirmed by the knowledge base: ",
        "no_datasets": "No knowledge base was selected, so nothing could be searched.",
        "degraded": "(The language model is unavailable right now; these are passages quoted from the knowledge base.)",
        "sep": "; ",
        "end": ".",
    },
}


def text_for(question: str, key: str) -> str:
    """A fixed phrase (``nothing``, ``unconfirmed``, ``degraded``, ...) in the question's language."""
    return TEXTS[language_of(question)][key]


def _is_follow_up(question: str) -> bool:
    if is_cjk(question):
        return len(question) <= 30 and bool(_FOLLOW_UP_ZH.search(question))
    return len(question.split()) <= 12 and bool(_FOLLOW_UP_EN.search(question))


def rewrite_offline(question: str, history: History | None) -> str:
    """Resolve an elliptical follow-up ("那病假呢？", "and for contractors?") against the last question.

    "那病假呢" after "年假有多少天？" becomes "病假有多少天": the previous question's first content term is swapped
    for the new one. A follow-up with a pronoun gets the previous question's terms appended. Anything else is
    already standalone and comes back unchanged.
    """
    question = question.strip()
    if history is None or not history.turns or not _is_follow_up(question):
        return question
    previous = history.turns[-1][0].strip()
    new_terms = terms(question)
    old_terms = terms(previous)
    if not old_terms:
        return question
    elliptical = len(new_terms) <= 2 and (
        question.endswith(("呢", "呢？", "呢?")) or question.lower().startswith(("what about", "how about", "and "))
    )
    if elliptical and new_terms:
        first = old_terms[0].surface
        if first in previous:
            replacement = (
                " ".join(t.surface for t in new_terms)
                if not is_cjk(previous)
                else "".join(t.surface for t in new_terms)
            )
            return previous.replace(first, replacement, 1).rstrip("？?。.") or question
    known = {t.key for t in new_terms}
    extra = [t.surface for t in old_terms if t.key not in known]
    return f"{question} {' '.join(extra)}".strip() if extra else question


def assess_offline(question: str, evidence: Sequence[Evidence], asked: Sequence[str]) -> Assessment:
    parts = split_question(question)
    if not evidence:
        queries = [question] if question not in asked else [p.text for p in parts if p.text not in asked]
        return Assessment(False, missing=_missing_text(question, parts), next_queries=tuple(queries))
    coverage = cover(parts, index_evidence(evidence), evidence, question)
    uncovered = [c for c in coverage if not c.covered]
    if not uncovered and parts:
        return Assessment(True)
    next_queries = follow_up_queries(question, coverage, evidence, asked)
    return Assessment(
        False, missing=_missing_text(question, [c.part for c in uncovered]), next_queries=tuple(next_queries)
    )


def _missing_text(question: str, parts: Sequence[QuestionPart]) -> str:
    texts = TEXTS[language_of(question)]
    return texts["sep"].join(p.text for p in parts) if parts else question


_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")
_LIST_OR_ROW = re.compile(r"^(\||[-*•]\s|\d+[.)、]\s?|[（(]?[一二三四五六七八九十]+[)）、])")


_BULLET = re.compile(r"^[-*•]\s+")
_SENTENCE_END = ("。", "！", "？", "；", ".", "!", "?", ";", "：", ":", "|")


def _unwrapped(lines: list[str]) -> list[str]:
    """Rejoin a sentence that a hard-wrapped source broke over lines ("...工作年限" + "12年、司龄6年的员工...")."""
    out: list[str] = []
    for line in lines:
        if out and not out[-1].endswith(_SENTENCE_END) and not _LIST_OR_ROW.match(line) and not _TABLE_RULE.match(line):
            joiner = "" if is_cjk(out[-1][-1:]) or is_cjk(line[:1]) else " "
            out[-1] = f"{out[-1]}{joiner}{line}"
        else:
            out.append(line)
    return out


def _quotable_units(text: str) -> list[str]:
    """Sentences; a Markdown table row or list item is a sentence of its own, and a sentence ending in a colon
    keeps the rows or items it introduces ("年假天数按工作年限确定：" alone answers nothing)."""
    units: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            units.append("\n  ".join(pending))
            pending.clear()

    for sentence in _unwrapped(sentences(text)):
        if _TABLE_RULE.match(sentence):
            continue  # the |---|---| line under a table header says nothing
        if pending:
            rows = _LIST_OR_ROW.match(sentence) is not None
            # The introduced block ends where its rows end (or at the first sentence when it has no rows).
            if (rows or len(pending) == 1) and len("\n  ".join([*pending, sentence])) <= UNIT_CHARS:
                pending.append(sentence)
                if not rows:
                    flush()
                continue
            flush()
        if sentence.endswith(("：", ":")):
            pending.append(sentence)
        else:
            units.append(sentence)
    flush()
    return units


def _best_sentences(
    parts: Sequence[QuestionPart], evidence: Sequence[Evidence], question: str, limit: int
) -> list[tuple[int, str]]:
    """(marker, sentence): for each part in turn its best sentence not yet quoted, preferring sentences that hold
    a value of the type the part asks for (the "5天/10天/15天" rows for "how many days"); then the best for the
    whole question."""
    candidates: list[tuple[int, int, str, TermIndex, TermIndex]] = []
    for marker, item in enumerate(evidence, start=1):
        heading = TermIndex(item.heading())
        for position, sentence in enumerate(_quotable_units(item.content)):
            candidates.append((marker, position, sentence, TermIndex(sentence), heading))
    chosen: list[tuple[int, str]] = []

    def pick(wanted_terms: Sequence[Term], slot: str = "") -> bool:
        best: tuple[float, int, int, str] | None = None
        for marker, position, sentence, index, heading in candidates:
            if (marker, sentence) in chosen:
                continue
            share = index.coverage(wanted_terms)
            if share <= 0:
                continue
            # The heading only breaks ties: a sentence must say the thing itself to be quoted for it.
            score = share + 0.1 * heading.coverage(wanted_terms)
            if slot and slot_satisfied(slot, sentence, wanted_terms):
                # Holding the value asked for, in a clause about the part, outweighs a missing word; a table or
                # list with several such values beats a single one ("5天/10天/15天" over "结转最多5天").
                rows = min(slot_matches(slot, sentence), 4) if "\n" in sentence else 0
                score += 0.5 + 0.05 * rows
            key = (score, -marker, -position, sentence)
            if best is None or key > best:
                best = key
        if best is not None:
            chosen.append((-best[1], best[3]))
        return best is not None

    active = list(parts)
    while active and len(chosen) < limit:
        active = [part for part in active if len(chosen) < limit and pick(part.terms, part.slot)]
    question_terms = terms(question)
    while len(chosen) < min(limit, len(candidates)):
        if not pick(question_terms):
            break
    return chosen


def compose_answer(question: str, evidence: Sequence[Evidence], spec: AnswerSpec) -> str:
    """The extractive answer: quoted sentences with ``[n]`` markers, then what stays unconfirmed."""
    texts = TEXTS[language_of(question)]
    parts = split_question(question)
    coverage: list[PartCoverage] = cover(parts, index_evidence(evidence)) if evidence else []
    gaps = [c.part.text for c in coverage if not c.covered] if evidence else [p.text for p in parts]
    answered = [c.part.text for c in coverage if c.covered]
    for extra in spec.missing:
        # What the assessor listed is re-checked here: a part the evidence answers is never called unconfirmed.
        pieces = [p for p in re.split(r"[；;]\s*", extra) if p.strip()]
        for piece in pieces:
            if piece in answered or any(piece in g or g in piece for g in gaps):
                continue
            gaps.append(piece)
    gap_line = f"{texts['unconfirmed']}{texts['sep'].join(gaps)}{texts['end']}" if gaps else ""

    quoted = _best_sentences(parts, evidence, question, MAX_QUOTED_SENTENCES) if evidence else []
    if not quoted:
        body = texts["nothing"]
        text = f"{body}\n\n{gap_line}" if gap_line and evidence else body
    else:
        lines = [texts["intro"]]
        budget = spec.max_chars - len(gap_line) - 2 if spec.max_chars else None
        for marker, sentence in quoted:
            # A quoted list item keeps its words, not its bullet: "- - Taxis ..." reads as a typo.
            line = f"- {_BULLET.sub('', sentence)} [{marker}]"
            if budget is not None and len("\n".join([*lines, line])) > budget and len(lines) > 1:
                break
            lines.append(line)
        text = "\n".join(lines) + (f"\n\n{gap_line}" if gap_line else "")
    if spec.max_chars and len(text) > spec.max_chars:
        text = text[: spec.max_chars]
    return text


class OfflineReasoner:
    """Extractive judgements; see the module docstring. Stateless and safe to share."""

    @property
    def name(self) -> str:
        return "offline"

    async def rewrite(self, question: str, history: History | None) -> str:
        return rewrite_offline(question, history)

    async def assess(self, question: str, evidence: Sequence[Evidence], asked: Sequence[str]) -> Assessment:
        return assess_offline(question, evidence, asked)

    async def decide(
        self, question: str, evidence: Sequence[Evidence], asked: Sequence[str], round_no: int, max_rounds: int
    ) -> Decision:
        assessment = assess_offline(question, evidence, asked)
        if assessment.sufficient:
            return Decision("FINAL", reason="every part of the question is covered by the evidence")
        if assessment.next_queries:
            return Decision("SEARCH", queries=assessment.next_queries, reason=f"missing: {assessment.missing}")
        return Decision("FINAL", reason=f"nothing left to search for: {assessment.missing}")

    async def answer(
        self, question: str, evidence: Sequence[Evidence], spec: AnswerSpec, history: History | None = None
    ) -> AsyncIterator[str]:
        text = compose_answer(question, evidence, spec)
        # Line by line, so a terminal or browser shows it arriving like a model's stream.
        for line in text.splitlines(keepends=True):
            yield line

    async def summarize(self, previous_summary: str, turns: Sequence[tuple[str, str]]) -> str:
        return summarize_offline(previous_summary, turns)
