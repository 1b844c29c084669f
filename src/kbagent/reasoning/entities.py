"""Bridge entities: names found in the evidence that the question does not mention yet.

A multi-hop question names one thing and asks about another that only the evidence connects ("the association
which published Journal Y" -> the paragraph about Journal Y names "American Psychological Association"). Searching
for such a name is how the offline reasoner takes the next hop. Found here: capitalised names, quoted titles,
Chinese proper nouns (jieba.posseg nr/ns/nt/nz), numbers with units and dates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import jieba.posseg as posseg

from kbagent.reasoning.terms import EN_STOP, Term, TermIndex, terms

_QUOTED = re.compile(r"《([^》]{1,40})》|“([^”]{2,60})”|\"([^\"]{2,60})\"|``([^']{2,60})''|「([^」]{1,40})」")
# A run of capitalised words, allowing short joiners inside ("University of Copenhagen", "Queen of the South").
# Initials belong to the name they precede ("M. Ward", "J. R. R. Tolkien"); a name never runs over a line break (a
# heading above a paragraph that opens with a name is two names).
_NAME_WORD = r"(?:(?:[A-Z]|Mr|Mrs|Ms|Dr|St)\.\s?)*[A-Z0-9][\w'\-]*(?:\.[\w'\-]+)*"
_JOINER = r"(?:of|the|de|la|van|von|der|and|for|du|del|di|da|&)"
_CAPITALISED = re.compile(rf"(?<![A-Za-z0-9])(?=[A-Z]){_NAME_WORD}(?:[ \t]+(?:{_JOINER}[ \t]+)*{_NAME_WORD})*")
_NUMBER_UNIT = re.compile(
    r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)|\d{4}年\d{1,2}月(?:\d{1,2}日)?|\d+(?:\.\d+)?\s*(?:%|％|元|万元|亿元|天|个工作日|工作日|小时|分钟|年|个月|月|日|周|次|人|"
    r"km|公里|kg|公斤|米|平方米|percent|days?|hours?|weeks?|months?|years?|dollars?|USD|RMB|CNY)"
    r"|\$\s?\d[\d,]*(?:\.\d+)?|\b(?:1[5-9]|20)\d{2}\b"
)
_UNIT_CHARS = frozenset("天年月日号时分秒周个次人元岁倍级层位名家项条块件只张页")
_NUMBER_PREFIX = frozenset("第满共约近超达每前后逾")
_ZH_DOTTED = re.compile(r"[\u4e00-\u9fff]{1,8}(?:[·•・][\u4e00-\u9fff]{1,8})+")
_ZH_PROPER = frozenset({"nr", "ns", "nt", "nz", "nrt", "nrfg"})
_LEADING_NUMBER = re.compile(r"[\d.,:/\-–]+")
# A full stop after an initial or a title ("M. Ward", "Dr. Smith") ends no sentence.
_SENTENCE = re.compile(
    r"(?<=[。！？；!?;])|(?<=[.])(?<!\b[A-Z]\.)(?<!\bMr\.)(?<!\bDr\.)(?<!\bSt\.)\s+(?=[A-Z\"“(])|\n+"
)


def sentences(text: str) -> list[str]:
    """Sentences of a paragraph (Chinese and Latin punctuation)."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _clean_name(name: str) -> str:
    # A possessive is not part of the name: "Corey Taylor's city" names Corey Taylor.
    name = re.sub(r"['’]s\b", "", name.strip()).strip(" .,'\"-")
    words = name.split()
    # Drop sentence-initial function words the capital-letter rule catches ("The", "In 1990 ...").
    while words and words[0].lower() in EN_STOP:
        words = words[1:]
    while words and words[-1].lower() in EN_STOP:
        words = words[:-1]
    # A number the capital-letter rule swept in before a name ("From 1945-1949 Dick Humbert played") is a date
    # or count beside it, not part of it; a number after a name stays ("Heinkel HD 23").
    while len(words) > 1 and _LEADING_NUMBER.fullmatch(words[0]):
        words = words[1:]
    return " ".join(words).strip(" .,'\"-")


def _sentence_initial(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \"'(“")
    return not before or before[-1] in ".!?。！？\n:："


def _unit_fragment(word: str, before: str, after: str) -> bool:
    """Whether jieba glued a unit to the next word and took it for a name: "15天加2天" gives "天加" tagged as a place,
    "满1年不满" gives "年不"; such a fragment, or anything with a digit in it, names nothing to search for."""
    if any(ch.isdigit() for ch in word):
        return True
    return (word[0] in _UNIT_CHARS and before[-1:].isdigit()) or (word[-1] in _NUMBER_PREFIX and after[:1].isdigit())


def _split_pair(name: str) -> list[str]:
    """Two names the capital-letter rule joined at "and" ("Edward Stanley and John Batman", "Never Cry Wolf and
    Big Hero 6") are two names; a short one stays whole ("Procter and Gamble", "Pride and Prejudice")."""
    pieces = [p.strip() for p in re.split(r"\s+and\s+", name)]
    if len(pieces) > 1 and all(len(p.split()) > 1 for p in pieces):
        return [_clean_name(p) for p in pieces if _clean_name(p)]
    return [name]


def find_entities(text: str, quantities: bool = True) -> list[str]:
    """Names, titles and (with ``quantities``) numbers with units and dates in ``text``, in order, no duplicates.

    A lone capitalised word opening a sentence ("Deadline is ...") is not taken for a name unless it is written
    in capitals or shows up capitalised mid-sentence elsewhere.
    """
    found: list[str] = []

    def add(name: str) -> None:
        name = name.strip()
        if name and name not in found:
            found.append(name)

    for match in _QUOTED.finditer(text):
        add(next(group for group in match.groups() if group))
    for match in _CAPITALISED.finditer(text):
        name = _clean_name(match.group(0))
        if not name or len(name) < 2 or name.isdigit():
            continue
        if " " not in name and not name.isupper() and _sentence_initial(text, match.start()):
            if not re.search(rf"(?<![.!?。！？\n]\s)(?<=\s){re.escape(name)}\b", text):
                continue
        for piece in _split_pair(name):
            add(piece)
    if re.search("[\u4e00-\u9fff]", text):
        # A transliterated name is one name across its middle dot ("詹姆斯·卡梅隆"), which jieba splits in two.
        for match in _ZH_DOTTED.finditer(text):
            add(match.group(0))
        pairs = [(pair.word, pair.flag) for pair in posseg.lcut(text)]
        for i, (word, flag) in enumerate(pairs):
            before = pairs[i - 1][0] if i else ""
            after = pairs[i + 1][0] if i + 1 < len(pairs) else ""
            if flag in _ZH_PROPER and len(word) > 1 and not _unit_fragment(word, before, after):
                add(word)
    if quantities:
        for match in _NUMBER_UNIT.finditer(text):
            add(match.group(0))
    return found


_DEMONYM = re.compile(r"[A-Z][a-z]+(?:ian|ish|ese|ican|ean)|English|French|German|Dutch|Greek|Thai|Swiss|Inc|Ltd")
_CURRENCY = re.compile(r"(?:CNY|RMB|USD|EUR|GBP|JPY|HKD)(?:\s+[\d.,]+)?")
_MONTH = re.compile(r"(?:January|February|March|April|May|June|July|August|September|October|November|December)\b")


def useful_bridge(name: str, passage: str) -> bool:
    """Whether ``name`` can lead to another paragraph: not a nationality word, a currency or a date, and not the subject
    that opens the passage (a full name or alias of what the passage is about, "Richard Elmer" for Dick Humbert)."""
    if _DEMONYM.fullmatch(name) or _MONTH.match(name) or _CURRENCY.fullmatch(name):
        return False
    body = passage.split("\n", 1)[-1].lstrip(" \"'“(")
    return not body.startswith(name)


def question_anchors(question: str) -> set[str]:
    """Term keys of the names the question itself mentions (what the first hop is about)."""
    return {t.key for name in find_entities(question, quantities=False) for t in terms(name)}


def bridge_entities(question: str, passages: Iterable[str], limit: int = 4, focus: str = "") -> list[str]:
    """Entities in ``passages`` that the question does not mention, best bridge first.

    A good bridge sits in a passage about something the question names (its anchors, "Dick Humbert"), in a
    sentence that shares the question's other words ("played for the Philadelphia Eagles"). Better-ranked
    passages win ties. ``focus`` holds the words of the hop still open ("directed film"): a name in a sentence
    that uses them is likelier to be the next hop than one in the passage's opening line.
    """
    question_terms = terms(question)
    question_index = TermIndex(question)
    anchors = [t for t in question_terms if t.key in question_anchors(question)]
    focus_terms = terms(focus)
    best: dict[str, float] = {}
    order: dict[str, int] = {}
    for rank, passage in enumerate(passages):
        anchored = TermIndex(passage).coverage(anchors) if anchors else 0.0
        for sentence in sentences(passage):
            overlap = TermIndex(sentence).coverage(question_terms) if question_terms else 0.0
            if overlap <= 0 and anchored <= 0:
                continue
            for name in find_entities(sentence, quantities=False):
                name_terms = terms(name)
                if not name_terms or all(question_index.has(t) for t in name_terms):
                    continue
                if not useful_bridge(name, passage):
                    continue
                focused = TermIndex(sentence).coverage(focus_terms) if focus_terms else 0.0
                score = 2 * anchored + overlap + focused - 0.1 * rank
                if score > best.get(name, float("-inf")):
                    best[name] = score
                order.setdefault(name, len(order))
    ranked = sorted(best, key=lambda name: (-best[name], order[name]))
    return ranked[:limit]


def nearest_names(text: str, description: Sequence[Term], names: Sequence[str]) -> list[str]:
    """Of ``names``, the ones written closest to the words of ``description`` in ``text`` (the fewest words
    apart, in a sentence using those words): "the Australian soap opera "Neighbours", played by Ashleigh Brewer"
    gives Neighbours for "soap opera"."""
    best: dict[str, int] = {}
    for sentence in sentences(text):
        words = list(re.finditer(r"\S+", sentence))
        hits = [k for k, word in enumerate(words) if any(TermIndex(word.group(0)).has(t) for t in description)]
        if not hits:
            continue
        for name in names:
            at = sentence.find(name)
            if at < 0:
                continue
            first = sum(1 for word in words if word.end() <= at)
            last = first + len(name.split()) - 1
            distance = min(max(first - k, k - last, 0) for k in hits)
            best[name] = min(distance, best.get(name, distance))
    if not best:
        return []
    closest = min(best.values())
    return [name for name in names if best.get(name) == closest]


# Between two names: an optional few lower-case words ("Tampa Bay Buccaneers draft history and Lee Roy Selmon"),
# then the conjunction.
_PAIRING = re.compile(
    r"(?:\s+[a-z][\w\-]*){0,3}\s*,?\s*(?:and|or|vs\.?|versus|和|与|跟|或|及|、)\s*(?:the\s+)?", re.IGNORECASE
)


def paired_names(text: str, names: Sequence[str]) -> list[str]:
    """Of ``names`` (in the order ``text`` gives them), the ones joined to another by "and"/"or"/"和"/"与":
    the things a question compares or connects ("Between Iain Banks and Irwin Shaw, who ...")."""
    paired: list[str] = []
    for first, second in zip(names, names[1:], strict=False):
        start = text.find(first)
        end = text.find(second, start + len(first)) if start >= 0 else -1
        if end >= 0 and _PAIRING.fullmatch(text[start + len(first) : end]):
            paired.extend(n for n in (first, second) if n not in paired)
    return paired
