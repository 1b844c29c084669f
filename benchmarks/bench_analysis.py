"""Keyword analysis throughput (characters per second) against plain segmentation in the same run.

    python benchmarks/bench_analysis.py [--eval ../shared/eval] [--chars 2000000] [--repeat 5]

Texts: Chinese passages from ``rgb/zh_refine_retrieval`` and English abstracts from ``scifact`` when the eval
folder is there, otherwise the sample handbook repeated. For each language it prints the median over
``--repeat`` runs of:

- baseline: the least a keyword index must do (Chinese: ``jieba.lcut`` in default mode; English: a regex
  word split and lower-casing);
- ``analyze``: what kbagent stores and queries with (NFKC, search-mode segmentation, stemming, numbers,
  stopwords), with its ratio to the baseline;
- ``chunk_document`` at 400 tokens on the same text in paragraphs, and as one single block (a file with no
  blank lines), for scale.

jieba's one-off dictionary load is timed separately and excluded from the rates.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from kbagent.knowledge.analysis import analyze  # noqa: E402
from kbagent.knowledge.chunking import chunk_document  # noqa: E402
from kbagent.knowledge.parsers.base import Block, ParsedDocument  # noqa: E402


def load_texts(corpus: Path, limit: int) -> list[str]:
    texts: list[str] = []
    total = 0
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            text = ((row.get("title") or "") + "\n" + row["text"]).strip()
            texts.append(text)
            total += len(text)
            if total >= limit:
                break
    return texts


def handbook_texts(chinese: bool, limit: int) -> list[str]:
    from kbagent.knowledge.parsers import parse_document
    from kbagent.knowledge.parsers.base import ParseLimits
    from kbagent.sample import handbook_dir

    blocks: list[str] = []
    for path in sorted(handbook_dir().iterdir()):
        if ("zh" in path.stem) == chinese:
            doc = parse_document(path.read_bytes(), path.name, ParseLimits())
            blocks.extend(b.text for b in doc.blocks)
    out: list[str] = []
    while sum(map(len, out)) < limit:
        out.extend(blocks)
    return out


def rate(fn: Callable[[list[str]], object], texts: list[str], repeat: int) -> float:
    chars = sum(map(len, texts))
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(texts)
        seconds.append(time.perf_counter() - start)
    return chars / statistics.median(seconds)


_WORD = re.compile(r"\w+")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval", type=Path, default=REPO.parent / "shared" / "eval")
    parser.add_argument("--chars", type=int, default=2_000_000, help="characters of text per language")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import jieba

    jieba.setLogLevel(60)
    start = time.perf_counter()
    analyze("初始化分词词典")  # loads jieba's dictionary once, as the first ingestion or query would
    print(f"jieba dictionary load (first analyze call): {time.perf_counter() - start:.2f} s")

    zh_corpus = args.eval / "rgb" / "zh_refine_retrieval" / "corpus.jsonl"
    en_corpus = args.eval / "scifact" / "corpus.jsonl"
    sets = {
        "zh": load_texts(zh_corpus, args.chars) if zh_corpus.exists() else handbook_texts(True, args.chars),
        "en": load_texts(en_corpus, args.chars) if en_corpus.exists() else handbook_texts(False, args.chars),
    }
    baselines: dict[str, Callable[[list[str]], object]] = {
        "zh": lambda texts: [jieba.lcut(t) for t in texts],
        "en": lambda texts: [[w.lower() for w in _WORD.findall(t)] for t in texts],
    }
    source = {
        "zh": zh_corpus if zh_corpus.exists() else "handbook",
        "en": en_corpus if en_corpus.exists() else "handbook",
    }
    print(f"repeat={args.repeat}, median rates in characters per second")
    for lang, texts in sets.items():
        chars = sum(map(len, texts))
        base = rate(baselines[lang], texts, args.repeat)
        ours = rate(lambda ts: [analyze(t) for t in ts], texts, args.repeat)
        chunking = rate(
            lambda ts: chunk_document(ParsedDocument("txt", [Block(t) for t in ts]), 400, 40), texts, args.repeat
        )
        print(f"[{lang}] {len(texts)} texts, {chars:,} chars from {source[lang]}")
        label = "jieba.lcut" if lang == "zh" else "regex split + lower"
        print(f"  {'baseline (' + label + ')':34} {base:12,.0f} chars/s")
        print(f"  {'analyze':34} {ours:12,.0f} chars/s  ({ours / base:.2f}x baseline)")
        # One huge paragraph (a file with no blank lines): sentence splitting must stay linear in its length.
        one_block = rate(
            lambda ts: chunk_document(ParsedDocument("txt", [Block("\n".join(ts))]), 400, 40), texts, args.repeat
        )
        print(f"  {'chunk_document (400 tokens)':34} {chunking:12,.0f} chars/s")
        print(f"  {'  the same as a single block':34} {one_block:12,.0f} chars/s")


if __name__ == "__main__":
    main()
