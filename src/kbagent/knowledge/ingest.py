"""The ingestion pipeline: read, check size, parse, chunk, analyse, embed, write.

Embedding is the slow step (tens of short texts per second on the local model), so paragraphs of many
documents are gathered and embedded together in large batches, through the embedding cache. Each
group of documents is then written in one transaction: a document appears with all its paragraphs,
their keyword entries and their vectors, or not at all. A file that cannot be read or parsed is
recorded with its reason and the rest carries on.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kbagent.errors import KbagentError, UserError
from kbagent.knowledge.analysis import analyzed_text
from kbagent.knowledge.chunking import Chunk, chunk_document
from kbagent.knowledge.embeddings import EmbeddingProvider, cached_passage_vectors
from kbagent.knowledge.parsers import parse_document
from kbagent.knowledge.parsers.base import ParsedDocument, ParseLimits
from kbagent.knowledge.parsers.base import Progress as ParserProgress
from kbagent.knowledge.records import IngestFailure, IngestReport, Progress, SourceDocument
from kbagent.settings import Settings
from kbagent.storage import Database
from kbagent.storage.datasets import bump_revision
from kbagent.storage.documents import document_hashes, save_document
from kbagent.storage.ingest_jobs import finish_job, start_job
from kbagent.storage.paragraphs import refresh_statistics, replace_paragraphs
from kbagent.storage.vector_store import write_vectors

# Paragraphs gathered before one embed-and-write round, in multiples of the embedding batch size:
# big enough to keep the model busy across small documents, small enough that a crash loses little.
_FLUSH_BATCHES = 8
# An ingest that wrote this many paragraphs refreshes the planner's statistics (PostgreSQL) before it
# reports done; smaller ones are left to autovacuum, as they barely move the tables' shape.
_REFRESH_STATISTICS_AFTER = 1000


def embedding_text(title_path: Sequence[str], content: str) -> str:
    """What gets embedded and keyword-indexed for a paragraph: its headings give it context."""
    heading = " / ".join(t for t in title_path if t)
    return f"{heading}\n{content}" if heading else content


def walk_paths(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[IngestFailure]]:
    """Files to ingest, in a stable order: named files as given, folders walked recursively (hidden files
    and folders skipped). Files of unsupported types are kept: the parser registry decides by content, and
    what it cannot read is reported, not silently ignored."""
    files: list[Path] = []
    missing: list[IngestFailure] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            found: list[Path] = []
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found.extend(Path(root) / n for n in names if not n.startswith("."))
            candidates = sorted(found)
        elif path.is_file():
            candidates = [path]
        else:
            missing.append(IngestFailure(str(path), "no such file or folder"))
            continue
        for file in candidates:
            resolved = file.resolve()
            if resolved not in seen:
                seen.add(resolved)
                files.append(resolved)
    return files, missing


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parsed_hash(doc: ParsedDocument) -> str:
    """Content hash of an already-parsed document (its block texts and structure)."""
    digest = hashlib.sha256(doc.format.encode())
    for block in doc.blocks:
        digest.update(f"\x00{block.kind}\x00{block.level}\x00{block.page}\x00".encode())
        digest.update(block.text.encode("utf-8"))
    return digest.hexdigest()


@dataclass
class _Prepared:
    source: str
    name: str
    content_hash: str
    size_bytes: int
    format: str
    meta: dict[str, Any]
    document_id: int | None
    chunks: list[Chunk]
    texts: list[str] = field(default_factory=list)
    search_texts: list[str] = field(default_factory=list)


class Ingestion:
    """One ingest run into one dataset; use ``run_paths`` or ``run_documents`` once."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        embedder: EmbeddingProvider | None,
        dataset_id: int,
        dataset_name: str,
        progress: Progress | None = None,
        password: str | None = None,
    ) -> None:
        self.db = db
        self.password = password
        self.settings = settings
        self.embedder = embedder
        self.dataset_id = dataset_id
        self.progress = progress
        self.report = IngestReport(job_id=0, dataset=dataset_name)
        self._pending: list[_Prepared] = []
        self._done = 0
        self._total = 0
        self._flush_at = max(1, settings.embedding.batch_size * _FLUSH_BATCHES)
        with db.read() as session:
            self._existing = document_hashes(session, dataset_id)
        self._started = time.perf_counter()

    # -- entry points -------------------------------------------------------------------------------

    def run_paths(self, paths: Iterable[str | os.PathLike[str]]) -> IngestReport:
        files, missing = walk_paths(paths)
        self._begin(len(files) + len(missing))
        for failure in missing:
            self._fail(failure.source, failure.reason)
        try:
            for file in files:
                self._prepare_file(file)
            self._flush()
        except BaseException:
            self._end("failed")
            raise
        return self._end("done")

    def run_documents(self, docs: Iterable[SourceDocument], total: int | None = None) -> IngestReport:
        items: Iterator[SourceDocument] | list[SourceDocument]
        if total is None:
            items = list(docs)
            total = len(items)
        else:
            items = iter(docs)
        self._begin(total)
        try:
            for doc in items:
                self._prepare_parsed(doc)
            self._flush()
        except BaseException:
            self._end("failed")
            raise
        return self._end("done")

    # -- steps --------------------------------------------------------------------------------------

    def _begin(self, total: int) -> None:
        self._total = total
        with self.db.write() as session:
            self.report.job_id = start_job(session, self.dataset_id, total)
        self._tick("")

    def _end(self, status: str) -> IngestReport:
        self.report.seconds = time.perf_counter() - self._started
        with self.db.write() as session:
            if self.report.paragraphs >= _REFRESH_STATISTICS_AFTER:
                refresh_statistics(session)
            finish_job(
                session,
                self.report.job_id,
                status=status,
                done_files=self.report.added + self.report.updated,
                skipped_files=self.report.skipped,
                failed_files=self.report.failed,
                failures=[{"source": f.source, "reason": f.reason} for f in self.report.failures],
                seconds=self.report.seconds,
            )
        return self.report

    def _tick(self, what: str, count: int = 0) -> None:
        self._done += count
        if self.progress is not None:
            self.progress(self._done, self._total, what)

    def _fail(self, source: str, reason: str) -> None:
        self.report.failures.append(IngestFailure(source, reason))
        self._tick(source, 1)

    def _prepare_file(self, path: Path) -> None:
        source, name = str(path), path.name
        limit_mb = self.settings.ingest.max_file_mb
        max_bytes = int(limit_mb * 1024 * 1024)
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise UserError(
                    f"{name}: file is {size / 1048576:.1f} MB, over the limit of ingest.max_file_mb = {limit_mb:g}"
                )
            data = path.read_bytes()
        except OSError as exc:
            self._fail(source, f"{name}: cannot be read ({exc.strerror or exc})")
            return
        except UserError as exc:
            self._fail(source, exc.message)
            return
        digest = _sha256(data)
        if self._skip_unchanged(source, digest):
            return
        try:
            parsed = parse_document(data, name, self._limits(max_bytes), self._parser_progress(name))
        except KbagentError as exc:
            self._fail(source, exc.message)
            return
        except Exception as exc:  # a parser bug on one hostile file must not stop the folder
            self._fail(source, f"{name}: could not be parsed ({type(exc).__name__}: {exc})")
            return
        self._add(source, name, digest, len(data), parsed)

    def _limits(self, max_bytes: int) -> ParseLimits:
        ingest = self.settings.ingest
        return ParseLimits(
            max_bytes=max_bytes,
            max_pages=ingest.max_pages,
            max_image_pixels=ingest.max_image_pixels,
            max_rows=ingest.max_rows,
            max_archive_members=ingest.max_archive_members,
            max_archive_bytes=int(ingest.max_archive_mb * 1024 * 1024),
            max_archive_ratio=ingest.max_archive_ratio,
            password=self.password,
        )

    def _parser_progress(self, name: str) -> ParserProgress | None:
        """Slow parsers (PDF pages, OCR) report inside one file; the file counter stays where it is."""
        if self.progress is None:
            return None
        report = self.progress

        def forward(done: int, total: int, what: str) -> None:
            report(self._done, self._total, f"{name}: {what} {done}/{total}")

        return forward

    def _prepare_parsed(self, doc: SourceDocument) -> None:
        digest = parsed_hash(doc.parsed)
        if self._skip_unchanged(doc.source, digest):
            return
        size = sum(len(block.text.encode("utf-8")) for block in doc.parsed.blocks)
        self._add(doc.source, doc.name, digest, size, doc.parsed)

    def _skip_unchanged(self, source: str, digest: str) -> bool:
        known = self._existing.get(source)
        if known is not None and known[1] == digest:
            self.report.skipped += 1
            self._tick(source, 1)
            return True
        if any(p.source == source for p in self._pending):
            # The same source twice in one run (a folder and a file inside it): write the first copy
            # before preparing the second, so the second replaces it instead of clashing with it.
            self._flush()
        return False

    def _add(self, source: str, name: str, digest: str, size: int, parsed: ParsedDocument) -> None:
        try:
            chunks = chunk_document(parsed, self.settings.ingest.chunk_tokens, self.settings.ingest.min_chunk_tokens)
        except Exception as exc:
            self._fail(source, f"{name}: could not be split into paragraphs ({type(exc).__name__}: {exc})")
            return
        chunks = [c for c in chunks if c.content.strip()]
        if not chunks:
            self._fail(source, f"{name}: no text found")
            return
        known = self._existing.get(source)
        texts = [embedding_text(c.title_path, c.content) for c in chunks]
        prepared = _Prepared(
            source=source,
            name=name,
            content_hash=digest,
            size_bytes=size,
            format=parsed.format,
            meta={"title": parsed.title} if parsed.title else {},
            document_id=known[0] if known else None,
            chunks=chunks,
            texts=texts,
            # Analysed here, not inside the write transaction, so jieba never runs while holding the lock.
            search_texts=[analyzed_text(t) for t in texts],
        )
        self._pending.append(prepared)
        if sum(len(p.chunks) for p in self._pending) >= self._flush_at:
            self._flush()

    def _embed(self, texts: list[str], name: str) -> np.ndarray:
        """Vectors for ``texts`` in steps, reporting progress between them: one large file can hold
        thousands of paragraphs, and the bar should move while they are embedded, not only after."""
        assert self.embedder is not None
        parts = []
        for start in range(0, len(texts), self._flush_at):
            if len(texts) > self._flush_at:
                self._tick(f"{name}: embedding {start}/{len(texts)} paragraphs")
            parts.append(cached_passage_vectors(self.db, self.embedder, texts[start : start + self._flush_at]))
        return np.vstack(parts)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        texts = [t for p in pending for t in p.texts]
        try:
            # A keyword-only knowledge base (no embedder) stores paragraphs without vectors.
            vectors = None if self.embedder is None else self._embed(texts, pending[-1].name)
        except KbagentError as exc:
            for p in pending:
                self._fail(p.source, f"{p.name}: embedding failed: {exc.message}")
            return
        try:
            with self.db.write() as session:
                offset = 0
                for p in pending:
                    doc_id = save_document(
                        session,
                        dataset_id=self.dataset_id,
                        document_id=p.document_id,
                        name=p.name,
                        source=p.source,
                        content_hash=p.content_hash,
                        size_bytes=p.size_bytes,
                        format=p.format,
                        paragraph_count=len(p.chunks),
                        meta=p.meta,
                    )
                    rows: list[dict[str, Any]] = [
                        {
                            "position": i,
                            "title_path": list(c.title_path),
                            "content": c.content,
                            "search_text": p.search_texts[i],
                            "token_count": c.token_count,
                            "page": c.page,
                            "ocr": c.ocr,
                            "meta": {},
                        }
                        for i, c in enumerate(p.chunks)
                    ]
                    ids = replace_paragraphs(session, dataset_id=self.dataset_id, document_id=doc_id, rows=rows)
                    if vectors is not None:
                        write_vectors(session, self.dataset_id, ids, vectors[offset : offset + len(ids)])
                    offset += len(ids)
                    p.document_id = doc_id
                bump_revision(session, self.dataset_id)
        except KbagentError as exc:
            for p in pending:
                self._fail(p.source, f"{p.name}: could not be stored: {exc.message}")
            return
        for p in pending:
            assert p.document_id is not None
            if self._existing.get(p.source) is None:
                self.report.added += 1
            else:
                self.report.updated += 1
            self._existing[p.source] = (p.document_id, p.content_hash)
            self.report.paragraphs += len(p.chunks)
            self._tick(p.source, 1)
