"""Question words as answer-type slots, for the offline reasoner.

"年假有几天" does not ask for the word "几天" to appear in the handbook; it asks for a number of days next to
"年假". So a question word is never a required term: it is removed from the part's terms and turned into a slot
that the evidence must fill (a number with 天/日/days, an amount with 元/CNY, a date or time, any number).
Words that ask something without naming a type (什么, 怎么, 如何, 是否, 吗, which, how) are simply dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kbagent.reasoning.terms import Term, TermIndex

DAYS = "days"
DURATION = "duration"
MONEY = "money"
TIME = "time"
NUMBER = "number"

# (slot, pattern, hint): the first pattern that matches decides the slot; every match is removed from the text the
# part's terms come from. ``hint`` is a word a follow-up search may add to say what is wanted ("年假 天数").
_ZH_SLOTS: tuple[tuple[str, str, str], ...] = (
    (DAYS, r"多少个?(?:工作日|天|日)|几个?(?:工作日|天|日)", "天数"),
    (DURATION, r"多久|多长时间|多少时间", "时长"),
    (MONEY, r"多少钱|多少元|几元|金额|费用是多少", "金额"),
    (TIME, r"什么时候|什么时间|何时|哪一?天|哪一?年|几月几[日号]|几号|几点", "时间"),
    (NUMBER, r"多少|几(?![乎])个?|上限|最多", ""),
    # "哪国人" asks a nationality; split as 哪 + 国人 it would leave "国人", a word no answer contains.
    ("", r"哪一?国人?", ""),
    ("", r"什么|哪些|哪个|哪里|哪|怎么样|怎么办|怎么|怎样|如何|是否|为什么|吗|呢|谁", ""),
)
_EN_SLOTS: tuple[tuple[str, str, str], ...] = (
    (DAYS, r"\bhow\s+many\s+(?:(?:working|business|calendar|paid)\s+)?days\b", "days"),
    (DURATION, r"\bhow\s+long\b", ""),
    (
        MONEY,
        r"\bhow\s+much\s+(?:money|does|did|do|is|was|are|will)\b|\bhow\s+much\b(?=.*\b(?:cost|pay|paid|price)\b)",
        "",
    ),
    (TIME, r"\bwhen\b|\b(?:what|which)\s+(?:year|date|time|day|month)\b", ""),
    (NUMBER, r"\bhow\s+(?:many|much)\b", ""),
    (NUMBER, r"\b(?:limit|maximum|cap)\b", "limit"),
)

# "半天" is a unit of taking leave, not a number of days: a half alone does not answer "几天".
_NUM = r"(?:\d+(?:[.,]\d+)?|[一二两三四五六七八九十百千万]+)"
_EN_NUM = r"(?:\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty)"
_DAY_COUNT = (
    rf"(?<![\d.月]){_NUM}\s*个?(?:工作日|天|日)|\b{_EN_NUM}\s+(?:(?:working|business|calendar|paid)\s+)?days?\b"
)
_SATISFIERS: dict[str, re.Pattern[str]] = {
    DAYS: re.compile(_DAY_COUNT, re.IGNORECASE),
    DURATION: re.compile(
        rf"{_DAY_COUNT}|{_NUM}\s*个?(?:小时|分钟|周|星期|月|年)(?![\d])|\b{_EN_NUM}\s+(?:hours?|minutes?|weeks?|months?|years?)\b",
        re.IGNORECASE,
    ),
    MONEY: re.compile(
        r"\d[\d,]*(?:\.\d+)?\s*(?:元|万元|亿元|块|CNY|RMB|USD|EUR|dollars?|yuan)|[$¥￥€£]\s?\d|\b(?:CNY|RMB|USD|EUR)\s?\d",
        re.IGNORECASE,
    ),
    TIME: re.compile(
        r"\d{4}\s*[-/年]\s*\d{1,2}|\d{1,2}月(?:\d{1,2}[日号])?|\d{1,2}\s*[:：]\d{2}|[上下]午|每[月年周]|\d{4}年"
        r"|\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\b"
        r"|\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b|\b(?:1[0-9]|20)\d{2}\b"
        r"|\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}\s*[ap]\.?m\b",
        re.IGNORECASE,
    ),
    NUMBER: re.compile(
        rf"\d|[一二两三四五六七八九十百千万]+\s*[个天年月日元次人名家项条周倍]|\b{_EN_NUM}\b", re.IGNORECASE
    ),
}


_CLAUSE = re.compile(r"[，；。！？;!?]|,\s|(?<=[a-z0-9)])\.\s")


@dataclass(frozen=True, slots=True)
class SlotReading:
    """A part's text with its question words taken out, and the slot they asked for (``""``: none)."""

    content: str
    slot: str
    hint: str


def read_slot(text: str) -> SlotReading:
    """Remove question words from ``text``; the first typed one found names the slot."""
    slot, hint = "", ""
    content = text
    table = _ZH_SLOTS if re.search("[\u4e00-\u9fff]", text) else ()
    for name, pattern, word in (*table, *_EN_SLOTS):
        regex = re.compile(pattern, re.IGNORECASE)
        if regex.search(content):
            if name and not slot:
                slot, hint = name, word
            # A space keeps the words on either side from being read as one ("年假有几天" -> "年假有 ").
            content = regex.sub(" ", content)
    return SlotReading(content, slot, hint)


def slot_matches(slot: str, text: str) -> int:
    """How many values of the slot's type ``text`` holds (0 when it cannot answer; 1 for no slot)."""
    if not slot:
        return 1
    return len(_SATISFIERS[slot].findall(text))


def clauses(text: str) -> list[str]:
    """Clauses of ``text`` (split at commas, semicolons and sentence ends); a table's rows stay together with
    their header, which is where the words naming their values are ("法定年假 | 公司年假")."""
    out: list[str] = []
    table: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            out.append("\n".join(table))
            table = []
        out.extend(c for c in _CLAUSE.split(line) if c.strip())
    if table:
        out.append("\n".join(table))
    return out


def slot_satisfied(slot: str, text: str, about: Sequence[Term] = ()) -> bool:
    """Whether ``text`` holds a value of the type the slot asks for (always true without a slot).

    With ``about`` (the part's terms), the value must sit in a clause naming one of them: in
    "当年未休完的年假可以结转到次年3月31日，结转最多5天" the 5 days are the carry-over cap, not the leave itself.
    """
    if not slot:
        return True
    pattern = _SATISFIERS[slot]
    if not about:
        return pattern.search(text) is not None
    return any(pattern.search(clause) and TermIndex(clause).coverage(about) > 0 for clause in clauses(text))
