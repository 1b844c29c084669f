"""The agent's own cost per question, beside the search it runs, on a large synthetic dataset.

    python benchmarks/bench_agent.py                    # SQLite, 1M paragraphs (built once, cached)
    python benchmarks/bench_agent.py --sizes 100000 --queries 50

Reuses bench_search.py's cached synthetic databases (same generator, same cache folder). Each question runs
through ``Agent.run`` (3 rounds at most, keyword search, answer included) in two configurations:

- ``offline``: the offline reasoner, no model at all;
- ``llm-instant``: the LLM reasoner over a scripted model that answers instantly (assessments say "insufficient"
  with one new query until the round cap, then a short answer), so prompts, JSON parsing and the answer stream
  are timed but no model time exists.

Per question: ``total`` (the whole run), ``search`` (wall time of the rounds' searches, from the trace) and
``overhead = total - search``: everything the agent does besides searching (rewrite, judgements, dedupe,
answer, events), with no model time. The baseline is one ``KnowledgeBase.search`` of the question (single-round
BM25), measured in the same run; ratios are against it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench_search import DATASET, make_queries, open_bench, sqlite_url
from kbagent.agent import Agent, DoneEvent, KnowledgeRetriever
from kbagent.knowledge.service import KnowledgeBase
from kbagent.llm import CallInfo, Message, ScriptedModel
from kbagent.reasoning import LLMReasoner, OfflineReasoner
from kbagent.settings import load_settings


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000.0


def instant_model() -> ScriptedModel:
    def reply(messages: Sequence[Message], info: CallInfo) -> str:
        if info.streaming:
            return "The knowledge base says what the cited paragraphs say [1]. " * 3
        # A new query from the question's own words, so every round can find something new.
        question = messages[-1].content.split("\n", 1)[0].removeprefix("Question: ").split()
        shift = info.index % max(len(question), 1)
        follow_up = " ".join((question[shift:] + question[:shift])[:3])
        return json.dumps({"sufficient": False, "missing": "more", "next_queries": [follow_up]})

    return ScriptedModel(reply)


async def run_agent(agent: Agent, queries: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"total": [], "search": [], "overhead": [], "rounds": []}
    for query in queries:
        start = time.perf_counter()
        result = None
        async for event in agent.run(query, strategy="verify", max_rounds=3):
            if isinstance(event, DoneEvent):
                result = event.result
        total = time.perf_counter() - start
        assert result is not None
        search = sum(r.retrieve_ms for r in result.trace) / 1000.0
        out["total"].append(total)
        out["search"].append(search)
        out["overhead"].append(total - search)
        out["rounds"].append(float(result.rounds_used))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000", help="comma-separated paragraph counts")
    parser.add_argument("--queries", type=int, default=50)
    # A folder of its own: building a database another benchmark is still filling would start it over.
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "kbagent-bench-agent")
    args = parser.parse_args()
    args.cache_dir.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    for size in (int(s) for s in args.sizes.split(",")):
        url = sqlite_url(args.cache_dir, size)
        log(f"SQLite, {size:,} paragraphs")
        db = open_bench(url, size, log)
        settings = load_settings(environ={}, overrides={"database": {"url": url}, "search": {"mode": "keyword"}})
        kb = KnowledgeBase(db, settings, None)
        queries = make_queries(args.queries, size)
        kb.search([DATASET], queries[0], top_k=5, mode="keyword")  # warm-up: jieba, caches
        baseline: list[float] = []
        for query in queries:
            start = time.perf_counter()
            kb.search([DATASET], query, top_k=5, mode="keyword")
            baseline.append(time.perf_counter() - start)
        retriever = KnowledgeRetriever(kb, [DATASET], mode="keyword")
        base = p50_ms(baseline)
        print(f"\n== SQLite, {size:,} paragraphs, {len(queries)} questions, at most 3 rounds, keyword search ==")
        print(f"baseline: one search of the question, p50 {base:.2f} ms")
        header = ("rounds", "total p50", "search p50", "overhead p50", "total/base")
        print(f"{'reasoner':<12} " + " ".join(f"{h:>12}" for h in header))
        for label, reasoner in (("offline", OfflineReasoner()), ("llm-instant", LLMReasoner(instant_model()))):
            agent = Agent(settings.agent, reasoner, [retriever])
            timings = asyncio.run(run_agent(agent, queries))
            total = p50_ms(timings["total"])
            row = (statistics.mean(timings["rounds"]), total, p50_ms(timings["search"]), p50_ms(timings["overhead"]))
            print(f"{label:<12} " + " ".join(f"{v:>12.2f}" for v in (*row, total / base)))
        sys.stdout.flush()
        db.close()


if __name__ == "__main__":
    main()
