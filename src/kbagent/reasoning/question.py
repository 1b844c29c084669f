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
from kbagent.reasoning.entities import find_entities
from kbagent.reasoning.terms import EN_STOP, Term, is_cjk, terms


@dataclass(frozen=True, slots=True)
class QuestionPart:
    """``hop`` marks a part split off at a relative clause ("the film that was shot in Leland"): its answer
    is expected in a paragraph linked to another part's paragraph, not beside it. ``bridge`` marks the hop that
    asks about something the question only describes ("a singer-songwriter from what state"): it needs that
    link even when it mentions a name of the question ("an NFL team based in what state")."""

    text: str
    terms: tuple[Term, ...]
    hop: bool = False
    slot: str = ""
    hint: str = ""
    bridge: bool = False


_ZH_CLAUSE = re.compile(r"[，,；;？?。！!\n]+")
_ZH_CONJ = frozenset({"和", "及", "以及", "与", "、", "跟", "或", "或者", "还有"})
_ZH_QUESTION_WORDS = ("什么", "怎么", "多少", "如何", "哪", "几", "吗", "是否", "谁", "何")

_EN_SENTENCE = re.compile(r"[?;!\n]+|(?<=[a-z0-9])\.\s+")
_WH = r"(?:what|who|whom|whose|when|where|why|how|which|is|are|was|were|does|do|did|can|could|should|will)"
# ", and when ...", " and how ...": a new clause starts after the conjunction.
_EN_CLAUSE_SPLIT = re.compile(rf",?\s+(?:and|but|or)\s+(?={_WH}\b)", re.IGNORECASE)
# A relative clause in the middle of a question is a hop of its own ("... the association which published ...").
_EN_RELATIVE = re.compile(r"(?<=\w),?\s+(?=(?:which|that|who|whom|whose|where)\s+\w)", re.IGNORECASE)
_EN_NOUN_CONJ = re.compile(r"\s+(?:and|or)\s+", re.IGNORECASE)
_EN_VERBISH = re.compile(rf"\b(?:{_WH[3:-1]}|has|have|had|be|been)\b", re.IGNORECASE)
_EN_ASKING = re.compile(r"\b(?:what|which|who|whom|whose|when|where|how)\b", re.IGNORECASE)
# "... by a singer-songwriter from what state": an indefinite noun phrase after a verb or preposition.
_EN_INDEFINITE = re.compile(
    r"\b(?:by|from|for|of|in|with|on|at|to|as|into|is|was|are|were)\s+(an?)\s+(?=[\w\"“])", re.IGNORECASE
)
# "the director of (the film) Titanic": a role of something the question names.
_EN_ROLE_OF = re.compile(r"\bthe\s+((?:[a-z][\w\-]*\s+){0,2}[a-z][\w\-]*)(?=\s+of\s)")
# A lower-case word right after a name that still belongs to its noun phrase ("the Shanghai office"); a participle
# ("the founder of Acme born when") starts what is asked instead.
_EN_PARTICIPLE = re.compile(r"\w+(?:ed|ing|own|orn|tten|aken|oken|iven)")
# Words of an English noun phrase that end it: a participle after its first word ("a team based in"), a function
# word, or a capitalised word after lower-case ones ("a demon Lilu is ...": Lilu starts something else). What a
# possessive names is short ("Acme's founder", "his alma mater"): past two words a verb has begun.
_MAX_POSSESSED_WORDS = 2


def _part(text: str, hop: bool = False, role: str = "") -> QuestionPart | None:
    text = text.strip(" ,，、")
    reading = read_slot(text)
    found = tuple(terms(reading.content))
    if not found:
        return None
    return QuestionPart(text, found, hop, reading.slot, reading.hint, role == "bridge")


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


def _asks_more(text: str, about: str) -> bool:
    """Whether ``text`` asks something of ``about`` beyond naming it ("Which country is the director from" does;
    "What is the capital" does not)."""
    own = {t.key for t in terms(about)}
    # The kind of answer counts as asked ("from what state"), so the words come before the slot reading.
    return any(t.key not in own for t in terms(text))


def _noun_phrase_end(text: str, start: int, most: int = 4) -> int:
    """End of the noun phrase of at most ``most`` words starting at ``start`` (after its article), 0 when there
    is none."""
    end = 0
    for count, match in enumerate(re.finditer(r"[\w\-'\"“”]+", text[start:])):
        word = match.group(0).strip("\"“”'")
        lowered = word.lower()
        if count >= most or lowered in EN_STOP or _EN_ASKING.fullmatch(lowered):
            break
        if count and (_EN_PARTICIPLE.fullmatch(lowered) or (word[:1].isupper() and not text[start:][:1].isupper())):
            break
        if count and text[start + end : start + match.start()].strip():
            break  # punctuation between words ends the phrase
        end = match.end()
    return start + end if end else 0


def _split_description(piece: str) -> list[str] | None:
    """A question that asks about something it only describes, split into the description and what is asked.

    "Transfiguration of Vincent is the third studio album by a singer-songwriter from what state" describes the
    singer-songwriter (a hop: the album's paragraph names them) and asks their state (another paragraph, about
    that name): ["... the third studio album by a singer-songwriter", "a singer-songwriter from what state"].
    "Which country is the director of Titanic from" gives ["the director of Titanic", "Which country is the
    director from"]. Nothing is split when the rest asks nothing beyond the description ("What is the capital of
    France").
    """
    if not _EN_ASKING.match(piece.strip()):
        for match in reversed(list(_EN_INDEFINITE.finditer(piece))):
            end = _noun_phrase_end(piece, match.end())
            if end and _EN_ASKING.search(piece[end:]):
                described = piece[match.start(1) : end]
                rest = piece[match.start(1) :]
                if _asks_more(rest, described):
                    return [piece[:end], rest]
    names = find_entities(piece, quantities=False)
    for match in reversed(list(_EN_ROLE_OF.finditer(piece))):
        for name in names:
            at = piece.find(name, match.end(1))
            between = piece[match.end(1) : at] if at >= 0 else ""
            # The name follows "of" directly or after a word or two ("of the film Titanic").
            if at < 0 or not re.fullmatch(r"\s+of(?:\s+[a-z]+){0,2}\s+[\"“]?", between):
                continue
            end = at + len(name)
            end += 1 if piece[end : end + 1] in '"”' and piece[end : end + 1] else 0
            following = re.match(r"\s+([a-z][\w\-]*)", piece[end:])
            if following and following.group(1) not in EN_STOP and not _EN_PARTICIPLE.fullmatch(following.group(1)):
                continue
            remainder = f"{piece[: match.start()]}the {match.group(1)}{piece[end:]}"
            if _asks_more(remainder, match.group(1)):
                return [piece[match.start() : end], remainder]
    for name in names:
        # The same with a possessive: "Akinoshu Kenji's birthplace", "Hello Love's performer".
        owner = re.sub(r"['’]s$", "", name)
        at = piece.find(owner)
        mark = re.match(r"['’]s\s+", piece[at + len(owner) :]) if at >= 0 else None
        if mark is None:
            continue
        start = at + len(owner) + mark.end()
        end = _noun_phrase_end(piece, start, _MAX_POSSESSED_WORDS)
        # "Corey Taylor's city of birth": a role may go on with "of" and one word.
        more = re.match(r"\s+of\s+[a-z]+\b", piece[end:]) if end else None
        end += more.end() if more else 0
        if end and not piece[start].isupper():
            lead = piece[:at]
            article = "" if lead.lower().endswith("the ") else "the "
            remainder = f"{lead}{article}{piece[start:end]}{piece[end:]}"
            if _asks_more(remainder, piece[start:end]):
                return [piece[at:end], remainder]
    return None


def _split_zh_description(text: str) -> list[str] | None:
    """The Chinese form: "《泰坦尼克号》的导演是哪国人" -> ["《泰坦尼克号》的导演", "导演是哪国人"].

    Only a title or proper name before 的 counts ("年假的天数是多少" asks one thing of one paragraph), and the rest
    must ask more than the role ("张三的经理是谁" is one question)."""
    for name in find_entities(text, quantities=False):
        at = text.find(name)
        end = at + len(name)
        end += 1 if text[end : end + 1] == "》" else 0
        if at < 0 or text[end : end + 1] != "的":
            continue
        rest = text[end + 1 :]
        words = jieba.lcut(rest)
        if not words or not is_cjk(words[0]) or len(words[0]) < 2:
            continue
        role = words[0]
        predicate = rest[len(role) :]
        asking = read_slot(predicate)
        if (asking.slot or asking.content != predicate) and _asks_more(predicate, role):
            return [text[: end + 1 + len(role)], role + predicate]
    return None


def _relative_pieces(clause: str) -> list[str]:
    """``clause`` split before its relative clauses; "which date" closing a question asks, it starts nothing."""
    pieces: list[str] = []
    for piece in (p for p in _EN_RELATIVE.split(clause) if p.strip()):
        if pieces and len(piece.split()) <= 2 and piece.split()[0].lower() in ("which", "what", "whose"):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces


# (text, hop, role) of a part before its terms are read; role is "anchor", "bridge" or "".
_Piece = tuple[str, bool, str]


def _split_en_sentence(sentence: str) -> list[_Piece]:
    out: list[_Piece] = []
    for clause in _EN_CLAUSE_SPLIT.split(sentence):
        pieces: list[tuple[str, str]] = []
        for piece in _relative_pieces(clause):
            split = _split_description(piece)
            pieces.extend([(split[0], "anchor"), (split[1], "bridge")] if split else [(piece, "")])
        hop = len(pieces) > 1
        for piece, bridge in pieces:
            conjuncts = [c for c in _EN_NOUN_CONJ.split(piece) if c.strip()]
            if len(conjuncts) < 2:
                out.append((piece, hop, bridge))
                continue
            first_words = conjuncts[0].split()
            out.append((conjuncts[0], hop, bridge))
            for extra in conjuncts[1:]:
                words = extra.split()
                # "the capital of France and Germany": a short bare noun phrase borrows the first conjunct's lead.
                if len(words) <= 4 and not _EN_VERBISH.search(extra) and len(first_words) > len(words):
                    out.append((" ".join(first_words[: len(first_words) - len(words)] + words), hop, bridge))
                else:
                    out.append((extra, hop, bridge))
    return out


def split_question(question: str) -> list[QuestionPart]:
    """The parts of ``question`` (at least one when it has any content term)."""
    texts: list[_Piece] = []
    if is_cjk(question):
        for clause in _ZH_CLAUSE.split(question):
            if not clause.strip():
                continue
            if is_cjk(clause):
                for text in _split_zh_clause(clause):
                    described = _split_zh_description(text)
                    if described:
                        texts.extend([(described[0], True, "anchor"), (described[1], True, "bridge")])
                    else:
                        texts.append((text, False, ""))
            else:
                texts.extend(_split_en_sentence(clause))
    else:
        for sentence in _EN_SENTENCE.split(question):
            if sentence.strip():
                texts.extend(_split_en_sentence(sentence))
    parts = [p for p in (_part(*piece) for piece in texts) if p is not None]
    # A part whose terms are all inside another part adds nothing to check, unless it asks for a value the other
    # does not ("年假有几天" beside "年假怎么申请"), or it is a hop: "Which country is the director from" asks about
    # someone "the director of Titanic" only describes.
    unique: list[QuestionPart] = []
    for part in parts:
        keys = {t.key for t in part.terms}
        if not part.hop and any(
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
