"""Synthetic mixed Chinese/English paragraphs for the search benchmarks.

Chinese words are drawn from jieba's own dictionary by their corpus frequency (a Zipf-like spread, so some
terms are very common and most are rare, as in real text); English words from a fixed list of everyday and
domain words. About 70% of paragraphs are Chinese with English terms sprinkled in, 30% English. Sentences end
with 。！？ or ". ", so the text looks like what the chunker produces.

Segmenting a million paragraphs with jieba would take longer than the search measurements themselves, so the
analysed keyword text is assembled from the analysis of each vocabulary word, done once with the product's
analyser. Queries are analysed with the real analyser at search time, as the product does.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ENGLISH = """
policy employee leave annual sick holiday contract salary payment travel expense reimbursement approval manager
department office remote work schedule security password access account data privacy customer service support
product release version feature bug report review meeting project plan budget quarter revenue cost invoice tax
insurance health safety training onboarding handbook rule procedure request form deadline document file system
server database network cloud backup storage model search index query answer question team member lead director
legal compliance audit risk incident response notice termination probation overtime bonus benefit pension vacation
parental medical claim receipt hotel flight train taxi meal allowance limit exception escalation email phone
address location building floor room equipment laptop software license vendor supplier purchase order delivery
warranty return refund price discount market sales partner agreement confidential information copyright patent
trademark law regulation court dispute liability damage evidence witness judge appeal settlement clause section
article paragraph chapter appendix table figure example summary overview background scope purpose definition
protein cell gene expression patient clinical trial treatment dose effect risk cancer tumor virus infection
immune response blood pressure heart brain study analysis result method sample group control increase decrease
significant level rate ratio association mechanism pathway receptor signal tissue mouse human model disease
""".split()

_SENTENCE_ENDS_ZH = "。。。。！？；"


@dataclass
class Vocabulary:
    chinese: list[str]
    chinese_weights: np.ndarray
    english: list[str]

    @classmethod
    def load(cls, size: int = 30000) -> Vocabulary:
        import jieba

        path = Path(jieba.__file__).with_name("dict.txt")
        words: list[tuple[str, int]] = []
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) < 2:
                    continue
                word, freq = parts[0], int(parts[1])
                if 2 <= len(word) <= 4 and all("\u4e00" <= ch <= "\u9fff" for ch in word):
                    words.append((word, freq))
        words.sort(key=lambda item: -item[1])
        top = words[:size]
        weights = np.array([f for _, f in top], dtype=np.float64)
        return cls(chinese=[w for w, _ in top], chinese_weights=weights / weights.sum(), english=ENGLISH)


@dataclass
class SyntheticParagraph:
    content: str
    search_text: str


class ParagraphGenerator:
    """Deterministic for a given seed. ``analyse`` is the product's keyword analyser (text -> terms)."""

    def __init__(self, vocab: Vocabulary, analyse: Callable[[str], list[str]], seed: int = 7) -> None:
        self.vocab = vocab
        self.rng = np.random.default_rng(seed)
        self.pyrng = random.Random(seed)
        self._analysed: dict[str, str] = {}
        self._analyse = analyse
        self._cdf = np.cumsum(vocab.chinese_weights)
        self._pool: list[int] = []
        self._pool_at = 0

    def _terms(self, word: str) -> str:
        cached = self._analysed.get(word)
        if cached is None:
            cached = " ".join(self._analyse(word))
            self._analysed[word] = cached
        return cached

    def _chinese_words(self, n: int) -> list[str]:
        # Inverse-CDF sampling from a pre-drawn pool: rng.choice(p=...) rebuilds the CDF on every call.
        if self._pool_at + n > len(self._pool):
            self._pool = np.searchsorted(self._cdf, self.rng.random(1 << 20)).tolist()
            self._pool_at = 0
        picked = self._pool[self._pool_at : self._pool_at + n]
        self._pool_at += n
        words = [self.vocab.chinese[min(i, len(self.vocab.chinese) - 1)] for i in picked]
        # an English term in about a third of Chinese sentences (product names, abbreviations)
        if self.pyrng.random() < 0.35:
            words.insert(self.pyrng.randrange(len(words) + 1), self.pyrng.choice(self.vocab.english))
        return words

    def paragraph(self) -> SyntheticParagraph:
        parts: list[str] = []
        terms: list[str] = []
        chinese = self.pyrng.random() < 0.7
        for _ in range(self.pyrng.randint(2, 5)):
            if chinese:
                words = self._chinese_words(self.pyrng.randint(6, 18))
                sentence = ""
                for word in words:
                    if word.isascii() and sentence:
                        sentence += " " + word + " "
                    else:
                        sentence += word
                parts.append(sentence.strip() + self.pyrng.choice(_SENTENCE_ENDS_ZH))
            else:
                words = self.pyrng.choices(self.vocab.english, k=self.pyrng.randint(8, 20))
                parts.append(" ".join(words).capitalize() + ". ")
            terms.extend(self._terms(w) for w in words)
        return SyntheticParagraph(content="".join(parts).strip(), search_text=" ".join(t for t in terms if t))

    def query_from(self, paragraph: SyntheticParagraph) -> str:
        """A short query built from a few words of an existing paragraph (so it has real matches)."""
        words = [w for w in _rough_words(paragraph.content) if w]
        if len(words) <= 3:
            return paragraph.content[:40]
        start = self.pyrng.randrange(0, len(words) - 3)
        picked = words[start : start + self.pyrng.randint(2, 4)]
        return ("" if all(not w.isascii() for w in picked) else " ").join(picked)


def _rough_words(text: str) -> list[str]:
    import jieba

    return [w.strip() for w in jieba.lcut(text) if w.strip() and any(ch.isalnum() for ch in w)]


def unit_vectors(rng: np.random.Generator, count: int, dimension: int = 384) -> np.ndarray:
    matrix = rng.standard_normal((count, dimension), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def batches(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(size, total - start)
