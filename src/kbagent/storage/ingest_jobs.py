"""Ingestion job rows: status and counters of one `ingest` run, with each failure and its reason."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kbagent.storage.tables import IngestJob, utcnow


def start_job(session: Session, dataset_id: int, total_files: int) -> int:
    job = IngestJob(dataset_id=dataset_id, status="running", total_files=total_files, failures=[])
    session.add(job)
    session.flush()
    return job.id


def finish_job(
    session: Session,
    job_id: int,
    *,
    status: str,
    done_files: int,
    skipped_files: int,
    failed_files: int,
    failures: list[dict[str, Any]],
    seconds: float,
) -> None:
    job = session.get(IngestJob, job_id)
    if job is None:  # the dataset (and its jobs) was deleted while the ingest ran
        return
    job.status = status
    job.done_files = done_files
    job.skipped_files = skipped_files
    job.failed_files = failed_files
    job.failures = failures
    job.seconds = seconds
    job.finished_at = utcnow()


def recent_jobs(session: Session, dataset_id: int, limit: int = 20) -> list[IngestJob]:
    return list(
        session.scalars(
            select(IngestJob).where(IngestJob.dataset_id == dataset_id).order_by(IngestJob.id.desc()).limit(limit)
        )
    )
