"""The KnowledgeBase the knowledge commands share, and how they show its progress and results."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kbagent.cli.context import app_context
from kbagent.knowledge.records import IngestReport, SearchHit
from kbagent.knowledge.records import Progress as ProgressCallback

if TYPE_CHECKING:
    from kbagent.knowledge.service import KnowledgeBase


def open_knowledge_base(ctx: typer.Context) -> KnowledgeBase:
    """Built from the command's settings: the database (migrated on open) and the configured embedder."""
    # Imported here so `kbagent --help` and unrelated commands do not load the search stack.
    from kbagent.knowledge.embeddings import build_embedder
    from kbagent.knowledge.service import KnowledgeBase

    app = app_context(ctx)
    db = app.db
    # Close the pool when the command ends: pooled connections must not outlive it (tests run many commands).
    ctx.call_on_close(db.close)
    return KnowledgeBase(db, app.settings, build_embedder(app.settings))


@contextmanager
def progress_bar(console: Console, label: str) -> Iterator[ProgressCallback]:
    """A rich progress bar fed by the knowledge base's ``progress(done, total, what)`` callbacks."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[what]}", markup=False),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=None, what="")

        def update(done: int, total: int, what: str) -> None:
            short = what if len(what) <= 50 else "…" + what[-49:]
            bar.update(task, completed=done, total=total or None, what=short)

        yield update


def print_ingest_report(console: Console, err: Console, report: IngestReport) -> None:
    console.print(
        f"dataset [bold]{escape(report.dataset)}[/]: {report.added} added, {report.updated} updated, "
        f"{report.skipped} unchanged, {report.failed} failed; {report.paragraphs} paragraphs written "
        f"in {report.seconds:.1f} s (job {report.job_id})",
        soft_wrap=True,
    )
    for failure in report.failures:
        # soft_wrap: one line per failure, whole, so it can be grepped and copied.
        err.print(f"[red]failed[/] {escape(failure.source)}: {escape(failure.reason)}", soft_wrap=True)


def print_hits(console: Console, hits: list[SearchHit], width: int = 400) -> None:
    if not hits:
        console.print("[dim]no results[/]")
        return
    for rank, hit in enumerate(hits, start=1):
        where = " › ".join([hit.dataset, hit.document_name, *hit.title_path])
        parts = [f"score {hit.score:.3f}"]
        if hit.keyword_score is not None:
            parts.append(f"keyword {hit.keyword_score:.3f}")
        if hit.vector_score is not None:
            parts.append(f"vector {hit.vector_score:.3f}")
        if hit.page is not None:
            parts.append(f"page {hit.page}")
        console.print(f"[bold cyan]{rank}.[/] [bold]{escape(where)}[/]  [dim]({', '.join(parts)})[/]")
        text = " ".join(hit.content.split())
        console.print("   " + escape(text if len(text) <= width else text[: width - 1] + "…"), highlight=False)
