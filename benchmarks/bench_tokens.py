"""Token estimate: throughput and error against the real cl100k, o200k and Qwen tokenizers (quicktok, offline).

    .venv/bin/python benchmarks/bench_tokens.py [--limit 2000]

Corpora: Chinese and English passages from ../shared/eval (rgb zh/en, hotpotqa) when present, Python source from
the installed packages, and mixed text built from them (Chinese + English + code + emoji + numbers + URLs).
For each: the ratio estimate / max(real counts) per passage (min, median, p99, share under 1.0), for this estimate
and for the baseline formula ``ceil(1.35 * CJK + other / 4)`` it replaced. Throughput: cl100k tokens per second of
estimating, against counting with quicktok itself (native BPE) in the same run.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import quicktok

from kbagent.tokens import COST_TOKENIZERS, estimate_tokens

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval"
_OLD_HEAVY = re.compile("[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3200-\u9fff\uac00-\ud7af\uff00-\uffef]")


def baseline_estimate(text: str) -> int:
    heavy = len(_OLD_HEAVY.findall(text))
    return math.ceil(1.35 * heavy + (len(text) - heavy) / 4)


def _jsonl_texts(path: Path, limit: int) -> list[str]:
    texts: list[str] = []
    if not path.is_file():
        return texts
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            for value in json.loads(line).values():
                values = value if isinstance(value, list) else [value]
                texts += [v for v in values if isinstance(v, str) and len(v) > 20]
            if len(texts) >= limit:
                break
    return texts[:limit]


def corpora(limit: int) -> dict[str, list[str]]:
    zh = _jsonl_texts(EVAL / "rgb" / "zh_fact.jsonl", limit // 2) + _jsonl_texts(
        EVAL / "rgb" / "zh_int.jsonl", limit // 2
    )
    en = _jsonl_texts(EVAL / "hotpotqa_hippo100" / "corpus.jsonl", limit // 2)
    en += _jsonl_texts(EVAL / "rgb" / "en_fact.jsonl", limit // 2)
    site = Path(quicktok.__file__).resolve().parents[1]
    code: list[str] = []
    for path in sorted(site.glob("*/*.py"))[: limit // 3]:
        text = path.read_text(encoding="utf-8", errors="ignore")
        code += [text[i : i + 1500] for i in range(0, min(len(text), 4500), 1500)]
    out = {"zh": zh, "en": en, "code": code[:limit]}
    rng = random.Random(7)
    emoji = ["👍", "🎉", "😀", "🚀", "👨\u200d👩\u200d👧", "🇨🇳", "❤️", "✅"]
    if zh and en:
        mixed = []
        for _ in range(min(limit, 500)):
            parts = [rng.choice(zh)[:200], rng.choice(en)[:200], rng.choice(emoji), rng.choice(code)[:200]]
            parts += [str(rng.randint(0, 10**9)), f"https://example.com/kb/{rng.randint(0, 99999)}?page=2"]
            rng.shuffle(parts)
            mixed.append(" ".join(parts))
        out["mixed"] = mixed
    return {k: v for k, v in out.items() if v}


def ratios(texts: Iterable[str], real: list[int], estimate: Callable[[str], int]) -> list[float]:
    return sorted(estimate(t) / r for t, r in zip(texts, real, strict=True) if r)


def summary(values: list[float]) -> str:
    under = sum(v < 1 for v in values) / len(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return f"min {values[0]:.2f}  median {statistics.median(values):.2f}  p99 {p99:.2f}  under {under:6.2%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=2000, help="passages per corpus")
    args = parser.parse_args()
    if not EVAL.is_dir():
        print(f"note: {EVAL} not found; only the code corpus is measured", file=sys.stderr)
    encodings = [quicktok.get_encoding(name) for name in COST_TOKENIZERS]
    estimate_tokens("warm up")  # builds the class table once
    for name, texts in corpora(args.limit).items():
        real = [max(len(e.encode_ordinary(t)) for e in encodings) for t in texts]
        print(f"{name:6s} {len(texts):5d} passages")
        print(f"   estimate  {summary(ratios(texts, real, estimate_tokens))}")
        print(f"   baseline  {summary(ratios(texts, real, baseline_estimate))}")

    texts = [t for corpus in corpora(args.limit).values() for t in corpus]
    cl100k = encodings[0]
    tokens = sum(len(cl100k.encode_ordinary(t)) for t in texts)
    chars = sum(map(len, texts))

    def rate(fn: Callable[[str], object]) -> float:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            for text in texts:
                fn(text)
            runs.append(time.perf_counter() - start)
        return tokens / statistics.median(runs)

    ours = rate(estimate_tokens)
    exact = rate(lambda t: len(cl100k.encode_ordinary(t)))
    three = rate(lambda t: [len(e.encode_ordinary(t)) for e in encodings])
    print(f"throughput over {chars:,} chars / {tokens:,} cl100k tokens (median of 3):")
    print(f"   estimate_tokens          {ours / 1e6:6.2f} M tokens/s")
    print(f"   quicktok cl100k count    {exact / 1e6:6.2f} M tokens/s  (estimate is {ours / exact:.2f}x)")
    print(f"   quicktok max of three    {three / 1e6:6.2f} M tokens/s  (estimate is {ours / three:.2f}x)")


if __name__ == "__main__":
    main()
