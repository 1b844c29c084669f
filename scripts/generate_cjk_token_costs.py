"""Regenerates src/kbagent/cjk_token_costs.txt from the tokenizers bundled in quicktok (no network).

Line 1: CJK characters that every one of cl100k, o200k and Qwen encodes as 1 token; line 2: those that cost at most
2 in each; every other character of the CJK ranges costs 3 or more. ``kbagent.tokens`` reads the file; a test
checks it is current.
"""

from __future__ import annotations

import sys
from pathlib import Path

import quicktok

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kbagent.tokens import CJK_RANGES, COST_TOKENIZERS  # noqa: E402


def costs() -> tuple[str, str]:
    chars = [chr(cp) for lo, hi in CJK_RANGES for cp in range(lo, hi + 1)]
    worst = [0] * len(chars)
    for name in COST_TOKENIZERS:
        for i, count in enumerate(quicktok.count_batch(quicktok.get_encoding(name), chars)):
            worst[i] = max(worst[i], int(count))
    one = "".join(c for c, w in zip(chars, worst, strict=True) if w <= 1)
    two = "".join(c for c, w in zip(chars, worst, strict=True) if w == 2)
    return one, two


if __name__ == "__main__":
    one, two = costs()
    target = Path(__file__).resolve().parents[1] / "src" / "kbagent" / "cjk_token_costs.txt"
    target.write_text(f"{one}\n{two}\n", encoding="utf-8")
    print(f"{target.name}: {len(one)} one-token and {len(two)} two-token characters")
