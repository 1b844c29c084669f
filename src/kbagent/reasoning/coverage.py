"""Which parts of a question the evidence covers, and what to search next: the offline assessor's core.

A part counts as covered when every one of its content terms occurs somewhere in the evidence and one paragraph
holds at least three quarters of them (so scattered words from unrelated paragraphs do not pass), and that same
paragraph fills the part's answer-type slot (for "年假有几天", a number of days). The check is lexical, never
knowledge: the offline reasoner cannot know an answer it has not read.

A hop (a part split off at a relative clause, "the film that was shot in Leland") needs more: the words of
"who directed the film" sit in the Leland paragraph too, yet the director is named elsewhere. So a hop part that
names nothing from the question counts only when a paragraph other than the ones covering the other hops covers
it, and one of the two is about a name the other gives and the question does not mention (the bridge: "Maximum
Overdrive"). A bridge part ("a singer-songwriter from what state") needs that link even when it names something
of the question, through the name its description points at. Things a question compares or connects ("Between
Iain Banks and Irwin Shaw") each need a paragraph about them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kbagent.reasoning.answer_slots import slot_satisfied
from kbagent.reasoning.entities import (
    bridge_entities,
    find_entities,
    nearest_names,
    paired_names,
    question_anchors,
    useful_bridge,
)
from kbagent.reasoning.evidence import Evidence
from kbagent.reasoning.question import QuestionPart
from kbagent.reasoning.terms import Term, TermIndex, query_key, terms

BEST_PARAGRAPH_SHARE = 0.75
# Words of the uncovered part kept beside a bridge name: enough to say what is asked about it.
MAX_RESIDUAL_TERMS = 6
# Share of shared content terms (intersection over union) above which a proposed query counts as already run:
# "Titanic director born" after "Titanic director born date" finds nothing new.
NEAR_DUPLICATE = 0.75


@dataclass(frozen=True, slots=True)
class PartCoverage:
    part: QuestionPart
    best_share: float
    best_index: int | None
    missing_terms: tuple[Term, ...]
    candidates: tuple[int, ...] = ()
    linked: bool = True
    slot_filled: bool = True
    subjects_found: bool = True

    @property
    def words_found(self) -> bool:
        """Every term found, most of them in one paragraph (the answer's type aside)."""
        return not self.missing_terms and self.best_share >= BEST_PARAGRAPH_SHARE

    @property
    def lexical(self) -> bool:
        """Every term found, most of them in one paragraph that also holds a value of the type asked for."""
        return self.words_found and self.slot_filled

    @property
    def covered(self) -> bool:
        return self.lexical and self.linked and self.subjects_found


def evidence_text(item: Evidence) -> str:
    """What a paragraph says, under its own heading (the innermost title often names the entity a hop needs;
    the document's top title, "Leave policy", would make every paragraph look like it covers "leave")."""
    return f"{item.title_path[-1]}\n{item.content}" if item.title_path else item.content


def index_evidence(evidence: Sequence[Evidence]) -> list[TermIndex]:
    return [TermIndex(evidence_text(item)) for item in evidence]


def cover(
    parts: Sequence[QuestionPart],
    indexes: Sequence[TermIndex],
    evidence: Sequence[Evidence] = (),
    question: str = "",
) -> list[PartCoverage]:
    """Coverage of each part; with ``evidence`` and ``question`` given, hop parts are also checked for a link."""
    out: list[PartCoverage] = []
    names = find_entities(question, quantities=False) if question else []
    lowered = [evidence_text(item).lower() for item in evidence] if names else []
    # Things the question compares or connects ("Between Iain Banks and Irwin Shaw, ..."): each needs a paragraph
    # about it; a mention inside a paragraph about the other says too little to compare.
    compared = paired_names(question, names) if evidence else []
    for part in parts:
        # A name the part mentions must appear whole: "Mark" and "King" in a paragraph about King Mark are not
        # "Mark King".
        phrases = [n.lower() for n in names if n in part.text]
        shares: list[tuple[int, float, bool]] = []
        for i, index in enumerate(indexes):
            if phrases and lowered and not all(phrase in lowered[i] for phrase in phrases):
                continue
            # A paragraph with the words but no value of the asked type ("年假以半天为最小单位" for "how many
            # days") is still the best lead to search from, but only one holding such a value covers the part.
            shares.append((i, index.coverage(part.terms), slot_satisfied(part.slot, index.text, part.terms)))
        candidates = [i for i, share, answers in shares if share >= BEST_PARAGRAPH_SHARE and answers]
        pool = [s for s in shares if s[0] in candidates] or shares
        best_index, best_share = None, 0.0
        for i, share, _ in pool:
            if share > best_share:
                best_index, best_share = i, share
        missing = tuple(t for t in part.terms if not any(index.has(t) for index in indexes))
        subjects = [n for n in compared if n in part.text]
        out.append(
            PartCoverage(
                part,
                best_share,
                best_index,
                missing,
                tuple(candidates),
                slot_filled=not part.slot or bool(candidates),
                subjects_found=all(any(_is_about(item, n) for item in evidence) for n in subjects),
            )
        )
    if evidence and question and sum(1 for c in out if c.part.hop) > 1:
        out = _link_hops(out, evidence, question)
    return out


def _is_about(item: Evidence, name: str) -> bool:
    """Whether a paragraph is about ``name``: its heading names it, or its text opens with it ("Neighbours is an
    Australian soap opera ..."); a paragraph that merely mentions the name is about something else."""
    heading = item.title_path[-1] if item.title_path else item.document
    body = item.content.lstrip(" \"'“(")
    body = body[4:] if body[:4].lower() == "the " else body
    # Whole words, and the whole name: the heading "Lee Roy Selmon's" (a restaurant) and the opening "The Lee Roy
    # Selmon Expressway is ..." are about something else.
    whole = re.compile(rf"(?<![\w'’]){re.escape(name)}(?![\w'’]|(?-i:\s+[A-Z]))", re.IGNORECASE)
    return bool(whole.search(heading) or whole.match(body))


def _link_hops(coverage: list[PartCoverage], evidence: Sequence[Evidence], question: str) -> list[PartCoverage]:
    anchors = question_anchors(question)
    question_index = TermIndex(question)
    texts = [evidence_text(item) for item in evidence]
    names: dict[int, list[str]] = {}

    def bridges(i: int) -> list[str]:
        if i not in names:
            found = find_entities(texts[i], quantities=False)
            names[i] = [n for n in found if not all(question_index.has(t) for t in terms(n)) and useful_bridge(n, "")]
        return names[i]

    def linked(i: int, j: int, description: Sequence[Term]) -> bool:
        # One paragraph names something the other is about ("... by singer-songwriter M. Ward" and "M. Ward is an
        # American singer-songwriter ..."); a name both merely mention ("National Football League") links nothing.
        # For a bridge the name must be the one the description points at: in "a character from the Australian
        # soap opera Neighbours, played by Ashleigh Brewer" the soap opera is Neighbours, not the actress.
        names_i = nearest_names(texts[i], description, bridges(i)) if description else bridges(i)
        names_j = nearest_names(texts[j], description, bridges(j)) if description else bridges(j)
        return any(_is_about(evidence[j], n) for n in names_i) or any(_is_about(evidence[i], n) for n in names_j)

    out: list[PartCoverage] = []
    for c in coverage:
        named = any(t.key in anchors for t in c.part.terms)
        if not c.part.hop or not c.lexical or (named and not c.part.bridge):
            out.append(c)
            continue
        siblings = [d for d in coverage if d is not c and d.part.hop]
        shared = {t.key for d in siblings for t in d.part.terms}
        description = [t for t in c.part.terms if t.key in shared] if c.part.bridge else []
        others = {j for d in siblings for j in d.candidates}
        ok = any(i != j and linked(i, j, description) for i in c.candidates for j in others if j != i)
        out.append(replace(c, linked=ok))
    return out


def _near_duplicate(keys: set[str], asked: Sequence[set[str]]) -> bool:
    """Whether a query's term keys overlap an asked query's so much that it would find the same paragraphs.

    A strict subset is not a repeat: dropping the words of the parts already covered focuses the search."""
    return any(
        len(keys & other) / len(keys | other) >= NEAR_DUPLICATE and not keys < other for other in asked if keys | other
    )


def _query(words: Sequence[str], extra: str = "") -> str:
    text = " ".join(w for w in words if w)
    return f"{text} {extra}".strip() if extra else text


def follow_up_queries(
    question: str, coverage: Sequence[PartCoverage], evidence: Sequence[Evidence], asked: Sequence[str], limit: int = 4
) -> list[str]:
    """Searches aimed at the uncovered parts: each part's terms, joined with a bridge entity found in the evidence.

    A part whose words were found but not a value of the type it asks for ("年假" but no number of days) is
    searched first by its own words and the slot's hint ("年假 天数"). Queries already asked, or near repeats of
    one (content terms overlapping by ``NEAR_DUPLICATE`` or more), go last, so a caller that drops them still sees
    whether every proposal was a repeat (the agent's ``duplicate_query``).
    """
    uncovered = [c for c in coverage if not c.covered]
    if not uncovered:
        return []
    # Entities come from the paragraphs that matched the question best: the ones covering its other parts first.
    order: list[int] = []
    for c in coverage:
        if c.covered and c.best_index is not None and c.best_index not in order:
            order.append(c.best_index)
    for c in uncovered:
        if c.best_index is not None and c.best_index not in order:
            order.append(c.best_index)
    order.extend(i for i in range(min(len(evidence), 5)) if i not in order)
    passages = [evidence_text(evidence[i]) for i in order]
    anchors = question_anchors(question)
    focus = " ".join(t.surface for c in uncovered for t in c.part.terms if t.key not in anchors)
    entities = bridge_entities(question, passages, limit=3, focus=focus)

    # Terms naming what the question is about pull back the paragraphs already found; a bridge query keeps
    # the hop's other words ("played team based state") next to the new name ("Philadelphia Eagles").
    candidates: list[str] = []
    # A part naming something no paragraph is about yet ("the Cotula" in "Pterocarya or the Cotula") is searched
    # by that name first: its own paragraph is the one to find, no bridge needed.
    for c in uncovered:
        if c.words_found and not c.slot_filled:
            candidates.append(_query([t.surface for t in c.part.terms], c.part.hint))
    for c in uncovered:
        own = [
            name
            for name in find_entities(c.part.text, quantities=False)
            if not any(_is_about(item, name) for item in evidence) and useful_bridge(name, "")  # not "Australian"
        ]
        if own:
            residual = [t.surface for t in c.part.terms if t.key not in anchors]
            candidates.append(_query([*own, *residual[:MAX_RESIDUAL_TERMS]]))
    # Each bridge name is searched with the words of the first open part only: the same name beside another
    # part's words finds mostly the same paragraphs and would crowd out the next name.
    for pass_parts in (uncovered[:1], uncovered[1:]):
        for rank in range(max(1, len(entities))):
            for c in pass_parts:
                entity = entities[rank] if rank < len(entities) else ""
                residual = [t.surface for t in c.part.terms if t.key not in anchors] or [
                    t.surface for t in c.part.terms
                ]
                candidates.append(_query([entity, *residual[:MAX_RESIDUAL_TERMS]]) if entity else _query(residual))
    for c in uncovered:
        candidates.append(_query([t.surface for t in c.part.terms], c.part.hint))

    asked_keys = {query_key(q) for q in asked} | {query_key(question)}
    asked_sets = [set(key.split()) for key in asked_keys]
    fresh: list[str] = []
    repeats: list[str] = []
    seen: set[str] = set()
    for candidate in candidates:
        key = query_key(candidate)
        if not candidate or key in seen:
            continue
        seen.add(key)
        repeat = key in asked_keys or _near_duplicate(set(key.split()), asked_sets)
        (repeats if repeat else fresh).append(candidate)
    return (fresh + repeats)[:limit] if fresh else repeats[:limit]
