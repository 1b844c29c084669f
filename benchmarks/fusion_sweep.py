"""Choose the hybrid fusion by measurement: keyword, vector and a few fusion settings on BEIR folders.

    python benchmarks/fusion_sweep.py ../shared/eval/scifact:train ../shared/eval/scifact:test \
        ../shared/eval/rgb/zh_refine_retrieval:test

Each argument is FOLDER[:SPLIT[:MAX_PASSAGES]]; MAX_PASSAGES indexes only the first passages and scores
only the queries whose relevant passages are all among them (``--max-passages`` of the CLI). The index
comes from the same cache as ``kbagent eval retrieval`` (under ``data_dir/eval-cache``), so a folder
already evaluated costs no embedding. Prints nDCG@10, Recall@10,
Recall@100 and MRR@10 for keyword, vector, and hybrid with RRF (k = 10, 60) and weighted fusion under both
normalisations (min-max, z-score; keyword_weight 0.3 .. 0.6), plus the best single mode for comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kbagent.evaluation.beir import load_beir
from kbagent.evaluation.retrieval import prepare_index, run_mode
from kbagent.settings import Settings, load_settings

FUSIONS: list[dict[str, Any]] = [{"fusion": "rrf", "rrf_k": k} for k in (10, 60)] + [
    {"fusion": "weighted", "normalization": n, "keyword_weight": w}
    for n in ("minmax", "zscore")
    for w in (0.3, 0.4, 0.5, 0.6)
]


def with_search(settings: Settings, **changes: Any) -> Settings:
    return settings.model_copy(update={"search": settings.search.model_copy(update=changes)})


def label(fusion: dict[str, Any]) -> str:
    if fusion["fusion"] == "rrf":
        return f"rrf k={fusion['rrf_k']}"
    return f"{fusion['normalization']} w={fusion['keyword_weight']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", help="FOLDER[:SPLIT[:MAX_PASSAGES]] (split default: test)")
    parser.add_argument("--json", action="store_true", help="also print one JSON line per measurement")
    args = parser.parse_args()
    settings = load_settings()
    for spec in args.folders:
        folder, _, rest = spec.partition(":")
        split, _, max_passages = rest.partition(":")
        data = load_beir(Path(folder), split or "test")
        if max_passages:
            data = data.corpus_prefix(int(max_passages))
        index = prepare_index(data, settings, with_vectors=True)
        print(f"\n{folder} [{data.split}] {len(data.queries)} queries, {index.documents} passages", flush=True)
        print(f"{'setting':<20} {'nDCG@10':>8} {'R@10':>8} {'R@100':>8} {'MRR@10':>8} {'p50 ms':>8}")
        rows: list[tuple[str, dict[str, float], float]] = []
        try:
            for mode in ("keyword", "vector"):
                result = run_mode(index, data, mode, settings)
                rows.append((mode, result.metrics, result.latency_ms_p50))
            for fusion in FUSIONS:
                result = run_mode(index, data, "hybrid", with_search(settings, **fusion))
                rows.append((label(fusion), result.metrics, result.latency_ms_p50))
        finally:
            index.close()
        for name, m, p50 in rows:
            print(
                f"{name:<20} {m['ndcg@10']:>8.4f} {m['recall@10']:>8.4f} {m['recall@100']:>8.4f} "
                f"{m['mrr@10']:>8.4f} {p50:>8.2f}"
            )
            if args.json:
                out = {"folder": folder, "split": data.split, "setting": name, **m, "latency_ms_p50": p50}
                print(json.dumps(out), file=sys.stderr)
        best_single = max(rows[:2], key=lambda r: r[1]["ndcg@10"])
        best_fused = max(rows[2:], key=lambda r: r[1]["ndcg@10"])
        print(
            f"best single: {best_single[0]} {best_single[1]['ndcg@10']:.4f}; "
            f"best fusion: {best_fused[0]} {best_fused[1]['ndcg@10']:.4f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
