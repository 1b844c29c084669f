"""Content terms of Chinese and English text, for the offline reasoner's coverage checks.

Kept here rather than borrowed from ``knowledge``'s index analyzer: ``reasoning`` sits below ``agent`` and may not
depend on the knowledge base, and coverage wants different things from an index (Chinese terms are matched as
substrings of the evidence, so segmentation differences between question and paragraph do not hide a match).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import jieba
import Stemmer

jieba.setLogLevel(logging.WARNING)

_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_NUMBER = re.compile(r"^\d+([.,]\d+)?$")

EN_STOP = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as than that this these
    those there here is are was were be been being am do does did done doing have has had having will would shall
    should can could may might must not no nor so such too very just also only own same other any some each every
    all both few more most many much what which who whom whose when where why how whether it its it's they them their
    theirs he him his she her hers we us our ours you your yours i me my mine one ones s t up down out over under again
    further once during before after above below between through while until because against per via vs please tell
    know give find list name describe explain whats there's get gets got getting""".split()
)

ZH_STOP = frozenset(
    """的 了 是 在 有 和 与 及 以及 或 或者 吗 呢 吧 啊 么 什么 怎么 怎么办 怎样 如何 哪些
    哪个 哪里 哪 多少 几 几个 请问 请 一下 分别 是否 可以 能否 能 会 需要 要 这个 那个 这 那 其
    之 为 对 于 中 上 下 等 个 就 都 也 还 又 被 把 让 给 从 到 向 由
    以 而 并 且 但 但是 如果 因为 所以 关于 对于 我 我们 你 你们 他 她 它 他们 公司的 哪一 多久
    多长 何时 何 为什么 谁 时候 情况 问题 规定 相关 一般 有关 具体 应该 应当""".split()
)

_stemmer = Stemmer.Stemmer("english")


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def language_of(text: str) -> str:
    """``zh`` when Chinese characters make up a fair share of the letters, else ``en``."""
    cjk = len(_CJK.findall(text))
    latin = sum(len(w) for w in _LATIN_WORD.findall(text))
    return "zh" if cjk and cjk * 3 >= latin else "en"


@dataclass(frozen=True, slots=True)
class Term:
    """``key`` is what is matched: a Chinese word as it is, a Latin word's stem, a number as written."""

    surface: str
    key: str
    cjk: bool


def _dashes(text: str) -> str:
    """En and em dashes read as hyphens: "1945–1949" in a paragraph is the "1945-1949" a question types."""
    return text.replace("–", "-").replace("—", "-")


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def _chinese_terms(segment: str) -> list[str]:
    """jieba words of a Chinese run; consecutive single characters that are not stop words are joined, because
    jieba often splits a domain word it does not know (年假 -> 年 / 假)."""
    out: list[str] = []
    pending = ""
    for word in jieba.lcut(segment):
        if not _CJK.search(word):
            continue
        if len(word) == 1 and word not in ZH_STOP:
            pending += word
            continue
        if len(pending) > 1:
            out.append(pending)
        pending = ""
        if word not in ZH_STOP and len(word) > 1:
            out.append(word)
    if len(pending) > 1:
        out.append(pending)
    return out


def terms(text: str) -> list[Term]:
    """Content terms of ``text`` in order, duplicates removed; stop words and question words dropped."""
    seen: set[str] = set()
    out: list[Term] = []

    def add(term: Term) -> None:
        if term.key and term.key not in seen:
            seen.add(term.key)
            out.append(term)

    for run in re.split(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)", _dashes(text)):
        if not run:
            continue
        if _CJK.match(run):
            for word in _chinese_terms(run):
                add(Term(word, word, True))
            continue
        for word in _LATIN_WORD.findall(run):
            lowered = word.lower().strip("'-")
            if lowered.endswith("'s"):
                lowered = lowered[:-2]
            if not lowered or lowered in EN_STOP:
                continue
            if _NUMBER.match(lowered):
                add(Term(word, lowered, False))
            elif len(lowered) > 1:
                add(Term(word, _stem(lowered), False))
    return out


class TermIndex:
    """One text (a paragraph, or several joined) prepared for ``has(term)`` lookups."""

    __slots__ = ("_lowered", "_stems")

    def __init__(self, text: str) -> None:
        self._lowered = text.lower()
        self._stems: set[str] = set()
        for word in _LATIN_WORD.findall(_dashes(text)):
            lowered = word.lower().strip("'-")
            if lowered.endswith("'s"):
                lowered = lowered[:-2]
            self._stems.add(lowered if _NUMBER.match(lowered) else _stem(lowered))

    @property
    def text(self) -> str:
        """The indexed text, lower-cased."""
        return self._lowered

    def has(self, term: Term) -> bool:
        if term.cjk:
            return term.key in self._lowered
        if term.key in self._stems:
            return True
        return any(form in self._stems for form in _agent_forms(term.key))

    def coverage(self, wanted: Iterable[Term]) -> float:
        """Share of ``wanted`` terms present; 1.0 for no terms (nothing to look for)."""
        wanted = list(wanted)
        if not wanted:
            return 1.0
        return sum(1 for term in wanted if self.has(term)) / len(wanted)


def _agent_forms(key: str) -> tuple[str, ...]:
    """The verb of an agent noun and back: "the director of Titanic" is answered by "directed by James Cameron"
    ("founder"/"founded", "creator"/"created"), which the stemmer keeps apart. Short words are left alone
    ("water" is not "wat")."""
    if not key.isalpha():
        return ()
    if key.endswith(("or", "er")) and len(key) >= 6:
        return (key[:-2],)
    if len(key) >= 4:
        return (key + "or", key + "er")
    return ()


def query_key(query: str) -> str:
    """What makes two queries the same search: their content terms, order and case aside.

    ``"年假 多少天"`` and ``"年假多少天？"`` are one query; a query without content terms keys on its folded text.
    """
    keys = sorted({t.key for t in terms(query)})
    return " ".join(keys) if keys else " ".join(query.lower().split())
