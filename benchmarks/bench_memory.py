"""Conversation memory: how often the summarizer runs, what reading history costs, how fast trimming is.

    python benchmarks/bench_memory.py [--repeat 30]

Runs the real ChatService over a SQLite file in a temporary folder, with a deterministic summarizer (short,
extractive) and a stand-in answerer whose answers have a chosen length, so only memory's own work is measured.

1. Summarizer calls per 100 turns at ``context.recent_tokens`` = 6000, for conversations that differ in length
   and in turn size. Baseline in the same run: a turn-count trigger (archive whenever more than 6 raw turns are
   held, as the Kotaemon article's DialogueManager does), whose calls grow with turns whatever their size.
2. Context assembly per turn with 500 stored turns (median of ``--repeat`` reads after the first compaction),
   against loading all 500 records raw in the same run.
3. Trimming 1,000 units to a 6,000-token budget with every scorer (embedding relevance from a cached vector
   table, keywords, recency, role, pins), against keeping the newest units that fit.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from kbagent.memory import ChatService, ConversationContext, TurnResult  # noqa: E402
from kbagent.memory.history import Turn, fit_recent  # noqa: E402
from kbagent.memory.trimming import EmbeddingCache, Unit, default_scorers, trim  # noqa: E402
from kbagent.settings import load_settings  # noqa: E402
from kbagent.storage import chat as store  # noqa: E402
from kbagent.storage import open_database  # noqa: E402


class ShortSummarizer:
    """Extractive and bounded: the previous summary's last lines plus each new question's first words."""

    prompt_tokens = 300

    def __init__(self) -> None:
        self.calls = 0

    async def summarize(self, previous_summary: str, turns: Sequence[tuple[str, str]]) -> str:
        self.calls += 1
        lines = previous_summary.splitlines()[-60:] + [q[:40] for q, _ in turns]
        return "\n".join(lines)


def sentence(i: int, tokens: int) -> str:
    base = f"第{i}轮：关于差旅报销和年假安排的问题与说明。"
    return (base * (tokens // 25 + 1))[: max(tokens * 2 // 3, 10)]


async def converse(turns: int, turn_tokens: int, workdir: Path) -> tuple[int, int, int]:
    """Summarizer calls of our rules and of a turn-count trigger, and the conversation's estimated tokens."""
    db = open_database(f"sqlite:///{workdir / f'calls_{turns}_{turn_tokens}.db'}")
    settings = load_settings(environ={}, overrides={"context": {"recent_tokens": 6000}})
    summarizer = ShortSummarizer()
    service = ChatService(db, settings, summarizer)
    sid = service.create_session()

    async def answerer(question: str, context: ConversationContext) -> AsyncIterator[Any]:
        yield TurnResult(answer=sentence(len(question), turn_tokens // 2))

    for i in range(turns):
        async for _ in service.ask(sid, sentence(i, turn_tokens // 2), answerer):
            pass
    with db.read() as s:
        measured = sum(Turn(*t).tokens for t in store.record_turns(s, sid))
    db.close()
    baseline = max(0, turns - 6)  # one archive call per turn once more than 6 raw turns are held
    return summarizer.calls, baseline, measured


async def assembly(workdir: Path, repeat: int) -> tuple[float, float, float, int]:
    db = open_database(f"sqlite:///{workdir / 'assembly.db'}")
    settings = load_settings(environ={}, overrides={"context": {"recent_tokens": 6000}})
    summarizer = ShortSummarizer()
    service = ChatService(db, settings, summarizer)
    sid = service.create_session()
    with db.write() as s:
        for i in range(500):
            store.insert_record(
                s,
                sid,
                question=sentence(i, 60),
                answer=sentence(i, 140),
                citations=[{"marker": 1, "document": "policy.md", "paragraph_id": str(i)}],
                agent_trace=[{"round": 1, "queries": [sentence(i, 20)], "sufficient": True}],
                agent_stop_reason="sufficient",
                context_info={},
                usage={"prompt_tokens": 100},
                timings={},
                status="ok",
            )
    start = time.perf_counter()
    await service.compactor.context(sid)  # the first read compacts 500 turns
    first_ms = (time.perf_counter() - start) * 1000
    steady = []
    for _ in range(repeat):
        start = time.perf_counter()
        await service.compactor.context(sid)
        steady.append((time.perf_counter() - start) * 1000)
    raw = []
    for _ in range(repeat):
        start = time.perf_counter()
        with db.read() as s:
            rows = store.records(s, sid)
            _ = [(r.question, r.answer) for r in rows]
        raw.append((time.perf_counter() - start) * 1000)
    db.close()
    return first_ms, statistics.median(steady), statistics.median(raw), summarizer.calls


class TableEmbedder:
    """Random unit vectors per text, fixed per run: stands for a model whose passage vectors are cached."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(7)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._rows(len(texts))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._rows(len(texts))

    def _rows(self, n: int) -> np.ndarray:
        m = self.rng.standard_normal((n, 384)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def trimming(repeat: int) -> tuple[float, float, int]:
    units = [
        Unit(
            sentence(i, 40 + (i * 37) % 120) + (" 电话 13812345678" if i % 97 == 0 else ""),
            i,
            "user" if i % 2 == 0 else "assistant",
        )
        for i in range(1000)
    ]
    scorers = default_scorers(TableEmbedder(), EmbeddingCache())
    trim(units, "差旅报销的期限", budget_tokens=6000, scorers=scorers)  # warms the vector cache
    ours, base = [], []
    kept = 0
    for _ in range(repeat):
        start = time.perf_counter()
        kept = len(trim(units, "差旅报销的期限", budget_tokens=6000, reserve_tokens=1200, scorers=scorers).kept)
        ours.append((time.perf_counter() - start) * 1000)
        turns = [Turn(u.position, u.text, "") for u in units]
        start = time.perf_counter()
        fit_recent(turns, 4800)
        base.append((time.perf_counter() - start) * 1000)
    return statistics.median(ours), statistics.median(base), kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print("1. summarizer calls at recent_tokens=6000 (ours vs a turn-count trigger)")
        header = (
            f"{'turns':>6} {'tok/turn':>8} {'total tok':>10} {'over 6000':>10} {'calls':>6} {'calls/100 turns':>16}"
        )
        print(header + f" {'calls/10k tok over':>19} {'baseline/100 turns':>19}")
        for turns, size in [(100, 100), (200, 100), (400, 100), (800, 100), (200, 40), (200, 400), (50, 400)]:
            calls, baseline, total = asyncio.run(converse(turns, size, work))
            over = max(total - 6000, 0)
            per_over = f"{calls * 10000 / over:.1f}" if over else "-"
            print(
                f"{turns:>6} {total // turns:>8} {total:>10} {over:>10} {calls:>6} {calls * 100 / turns:>16.1f} "
                f"{per_over:>19} {baseline * 100 / turns:>19.1f}"
            )
        first, steady, raw, calls = asyncio.run(assembly(work, args.repeat))
        print("\n2. context assembly with 500 stored turns (~200 tokens each)")
        print(f"first read (compacts, {calls} summarizer calls): {first:.1f} ms")
        print(
            f"per turn afterwards, median of {args.repeat}: {steady:.2f} ms; loading all 500 records raw: {raw:.2f} ms"
        )
        print(f"ratio ours/raw-load: {steady / raw:.2f}")
        ours, base, kept = trimming(args.repeat)
        print("\n3. trimming 1,000 units to 6,000 tokens (reserve 1,200), cached vectors")
        print(f"smart trim median {ours:.2f} ms ({kept} kept); newest-that-fit baseline {base:.2f} ms")
        print(f"ratio smart/baseline: {ours / base:.1f}")


if __name__ == "__main__":
    main()
