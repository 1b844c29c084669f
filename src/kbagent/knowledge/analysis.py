"""Text analysis shared by the keyword index and by queries: text in, search terms out.

Documents and queries must go through the same function, or their terms will not meet. The terms are stored
as ``analyzed_text`` (terms joined by spaces), which the embedded tantivy index splits on whitespace and
PostgreSQL's ``to_tsvector('simple', ...)`` on anything that is not a letter or a digit; every term here is
made only of letters and digits, so it passes through both unchanged:

- Chinese (Han) runs are segmented by jieba in search mode, which also emits the shorter words inside a long
  one: 行政复议 gives 行政, 复议 and 行政复议, so a query for 复议 finds it.
- Latin words are NFKC-normalised (full-width ＡＢＣ１２ -> abc12), lower-cased and Snowball-stemmed
  (policies -> polici); words with digits are kept whole (h2o, gpt4).
- Numbers are kept. A decimal number is one term with its point spelled ``p`` (3.5 -> ``3p5``) because both
  backends would split "3.5" into "3" and "5", which match any 3 and any 5. Other punctuation separates
  terms: covid-19 -> covid, 19; 2026-01-15 -> 2026, 01, 15.
- A small English and Chinese stopword list is dropped: BM25 over words like "the" or 的 adds noise only.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

# Han ideographs (basic, extension A, compatibility, extensions B and beyond).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_TOKEN = re.compile(
    rf"(?P<han>[{_HAN}]+)"
    r"|(?P<decimal>\d+(?:\.\d+)+)"
    rf"|(?P<word>(?:(?![{_HAN}])[^\W_])+)"
)
_HAN_CHAR = re.compile(f"[{_HAN}]")

ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be been but by for from had has have he her his i if in into is its of on or our she
    so than that the their them then there these they this those to was we were what when where which while who
    will with would you your""".split()
)
# Only function words: a term like 不 (negation) changes meaning and stays.
CHINESE_STOPWORDS = frozenset(
    "的 了 着 是 在 和 与 及 或 而 之 其 把 被 对 从 于 就 都 也 又 吗 呢 吧 啊 呀 该 这 那 个".split()
)

# Words of the documents kbagent is for (HR, finance, legal) that jieba's dictionary lacks: without them
# 年假 is indexed as 年 + 假, and 年 matches half of every Chinese policy. Added to jieba's shared default
# dictionary once; changing this list changes indexed terms, so re-index after editing it.
WORKPLACE_WORDS = (
    "年假 带薪年假 陪产假 育儿假 护理假 调休 五险一金 竞业限制 竞业协议 经济补偿金 报销单 差旅费 "
    "出差补贴 住宿标准 备用金 值班费 司龄 工龄 转正 离职证明"
).split()

_lock = threading.Lock()
_state: dict[str, Any] = {}
_local = threading.local()


def analyze(text: str) -> list[str]:
    """Search terms of ``text`` in order (duplicates kept: term frequency matters to BM25)."""
    terms: list[str] = []
    normalized = unicodedata.normalize("NFKC", text).lower()
    for match in _TOKEN.finditer(normalized):
        kind = match.lastgroup
        token = match.group()
        if kind == "han":
            terms.extend(t for t in _segment(token) if t not in CHINESE_STOPWORDS)
        elif kind == "decimal":
            terms.append(token.replace(".", "p"))
        elif token not in ENGLISH_STOPWORDS:
            terms.append(_stem(token) if token.isalpha() else token)
    return terms


def analyzed_text(text: str) -> str:
    """``analyze(text)`` joined by single spaces: what the keyword index stores for a paragraph."""
    return " ".join(analyze(text))


def _segment(han: str) -> list[str]:
    if len(han) == 1:
        return [han]
    segmented: list[str] = _jieba().lcut_for_search(han)
    # Search mode can emit non-Han pieces for odd input; keep only what the index tokenizers keep whole.
    return [t for t in segmented if _HAN_CHAR.match(t)]


def _jieba() -> Any:
    """jieba's default tokenizer, loaded once on first use (about 0.5 s) with its log messages silenced."""
    tokenizer = _state.get("jieba")
    if tokenizer is None:
        with _lock:
            tokenizer = _state.get("jieba")
            if tokenizer is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                tokenizer = jieba.dt
                for word in WORKPLACE_WORDS:
                    tokenizer.add_word(word)
                _state["jieba"] = tokenizer
    return tokenizer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # A PyStemmer object must not be shared between threads: one per thread.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    stemmed: str = stemmer.stemWord(word)
    return stemmed
