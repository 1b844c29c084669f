"""Does iterating pay? The agent's retrieval loop scored on multi-hop datasets (MuSiQue, HotpotQA subsets).

The corpus is ingested once into the cached evaluation index of ``kbagent eval retrieval`` (one passage per
document, its title as heading), and every question runs through ``Agent.gather``: the same loop, stop reasons
and limits as a real question, without writing the answer. The evidence, in the order the agent found it, is the
ranking scored:

- ``recall@5``: supporting passages among the first 5 paragraphs of evidence, over the query's supporting passages;
- ``all_gold@10``: 1 when every supporting passage is among the first 10 paragraphs of evidence (averaged);
- ``rounds_mean`` and ``stop_reasons`` (how many questions stopped for each reason).

Timing: ``agent_ms_p50`` is the whole loop per question; ``search_ms_p50`` the wall time of its rounds' searches
(the trace's ``retrieve_ms``); ``overhead_ms_p50`` their difference per question: what the agent itself costs
(offline judgements, dedupe, bookkeeping). With a model configured the model's time would sit in the overhead;
the offline reasoner makes no model call.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbagent.agent.loop import Agent
from kbagent.agent.retrieval import Evidence, KnowledgeRetriever
from kbagent.evaluation.beir import load_beir
from kbagent.evaluation.metrics import all_gold_at_k, recall_at_k
from kbagent.evaluation.retrieval import DATASET, percentile_ms, prepare_index
from kbagent.reasoning.base import Reasoner
from kbagent.reasoning.offline import OfflineReasoner
from kbagent.settings import Settings

Progress = Callable[[int, int, str], None]


@dataclass
class MultihopResult:
    dataset: str
    strategy: str
    max_rounds: int
    top_k: int
    mode: str
    reasoner: str
    queries: int
    recall_at_5: float
    all_gold_at_10: float
    rounds_mean: float
    stop_reasons: dict[str, int]
    agent_ms_p50: float
    search_ms_p50: float
    overhead_ms_p50: float
    rankings: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "recall@5": round(self.recall_at_5, 4),
            "all_gold@10": round(self.all_gold_at_10, 4),
            "rounds_mean": round(self.rounds_mean, 3),
            "stop_reasons": dict(sorted(self.stop_reasons.items())),
            "queries": self.queries,
            "strategy": self.strategy,
            "max_rounds": self.max_rounds,
            "top_k": self.top_k,
            "mode": self.mode,
            "reasoner": self.reasoner,
            "agent_ms_p50": round(self.agent_ms_p50, 2),
            "search_ms_p50": round(self.search_ms_p50, 2),
            "overhead_ms_p50": round(self.overhead_ms_p50, 2),
        }


def evidence_ranking(evidence: list[Evidence]) -> list[str]:
    """Corpus ids in the order the agent found them (the evaluation index names each document by its id)."""
    return list(dict.fromkeys(item.document for item in evidence))


def run_multihop(
    data_dir: Path,
    settings: Settings,
    *,
    max_rounds: int,
    strategy: str = "verify",
    top_k: int | None = None,
    mode: str = "keyword",
    reasoner: Reasoner | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
) -> MultihopResult:
    """Run every judged query of ``data_dir`` (BEIR layout, ``test`` split) through the agent's loop."""
    data = load_beir(Path(data_dir), "test")
    if limit is not None:
        data.queries = data.queries[:limit]
    index = prepare_index(data, settings, with_vectors=mode != "keyword", progress=progress)
    judge = reasoner or OfflineReasoner()
    try:
        retriever = KnowledgeRetriever(index.kb, [DATASET], mode=mode)
        agent = Agent(settings.agent, judge, [retriever])
        k = top_k or settings.agent.top_k
        rankings: dict[str, list[str]] = {}
        rounds: list[int] = []
        stops: Counter[str] = Counter()
        agent_s: list[float] = []
        search_s: list[float] = []
        overhead_s: list[float] = []

        async def run_all() -> None:
            for number, query in enumerate(data.queries, start=1):
                start = time.perf_counter()
                gathered = await agent.gather(
                    query.text,
                    max_rounds=max_rounds,
                    top_k=k,
                    strategy=strategy,  # type: ignore[arg-type]
                )
                total = time.perf_counter() - start
                # Wall time of each round's searches (queries of a round run concurrently).
                searched = sum(r.retrieve_ms for r in gathered.trace) / 1000
                agent_s.append(total)
                search_s.append(searched)
                overhead_s.append(total - searched)
                rankings[query.id] = evidence_ranking(gathered.evidence)
                rounds.append(len(gathered.trace))
                stops[gathered.stop_reason] += 1
                if progress is not None:
                    progress(number, len(data.queries), query.id)

        asyncio.run(run_all())
    finally:
        index.close()
    n = len(data.queries)
    return MultihopResult(
        dataset=Path(data_dir).name,
        strategy=strategy,
        max_rounds=max_rounds,
        top_k=k,
        mode=mode,
        reasoner=judge.name,
        queries=n,
        recall_at_5=sum(recall_at_k(rankings[q.id], data.qrels[q.id], 5) for q in data.queries) / n,
        all_gold_at_10=sum(all_gold_at_k(rankings[q.id], data.qrels[q.id], 10) for q in data.queries) / n,
        rounds_mean=sum(rounds) / n,
        stop_reasons=dict(stops),
        agent_ms_p50=percentile_ms(agent_s, 50),
        search_ms_p50=percentile_ms(search_s, 50),
        overhead_ms_p50=percentile_ms(overhead_s, 50),
        rankings=rankings,
    )
