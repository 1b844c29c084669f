"""``kbagent eval``: measure quality on BEIR-layout datasets (see ../shared/eval in the development setup)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kbagent.cli.context import app_context
from kbagent.errors import InvalidInput

eval_app = typer.Typer(
    help="Measure retrieval and answer quality on BEIR-layout evaluation data.", no_args_is_help=True
)


@eval_app.command("retrieval")
def retrieval(
    ctx: typer.Context,
    data_dir: Annotated[Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.")],
    mode: Annotated[
        str, typer.Option("--mode", help="hybrid, keyword, vector, or all (the three in one run).")
    ] = "hybrid",
    split: Annotated[str, typer.Option("--split", help="qrels file to score against: qrels/<split>.tsv.")] = "test",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print JSON instead of a table: one object, or with --mode all a list of one object per mode.",
        ),
    ] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Evaluate only the first N judged queries.")
    ] = None,
    max_passages: Annotated[
        int | None,
        typer.Option(
            "--max-passages",
            min=1,
            help="Index only the first N passages and score only the queries whose relevant passages are all "
            "among them (when embedding the whole corpus takes too long; not comparable with full-corpus scores).",
        ),
    ] = None,
) -> None:
    """Ingest DATA_DIR into a cached throwaway index and report nDCG@10, Recall@10/@100, MRR@10 and latency.

    The index is cached under <data_dir>/eval-cache/ by the corpus's SHA-256 and the embedding and chunk
    settings, so only the first run pays for embedding the corpus. Keyword mode alone needs no vectors and
    uses a keyword-only index. Latency is the search alone; the query embedding is reported separately.
    """
    from kbagent.evaluation.beir import load_beir
    from kbagent.evaluation.retrieval import MODES, ModeResult, prepare_index, run_mode

    app = app_context(ctx)
    if mode not in ("hybrid", "keyword", "vector", "all"):
        raise InvalidInput("--mode", f"must be hybrid, keyword, vector or all, got {mode!r}")
    modes = list(MODES) if mode == "all" else [mode]
    data = load_beir(data_dir, split)
    if max_passages is not None:
        data = data.corpus_prefix(max_passages)
    if limit is not None:
        data.queries = data.queries[:limit]
    with_vectors = modes != ["keyword"]
    console = app.err
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(f"indexing {len(data.corpus)} passages", total=len(data.corpus))

        def progress(done: int, total: int, _what: str) -> None:
            bar.update(task, completed=done, total=total)

        index = prepare_index(data, app.settings, with_vectors=with_vectors, progress=progress)
    try:
        if index.built_seconds:
            console.print(f"indexed {index.documents} passages in {index.built_seconds:.0f} s ({index.path})")
        results: list[ModeResult] = []
        for one in modes:
            results.append(run_mode(index, data, one, app.settings))  # type: ignore[arg-type]
    finally:
        index.close()

    if as_json:
        payload = [r.to_json() for r in results]
        typer.echo(json.dumps(payload if mode == "all" else payload[0], ensure_ascii=False))
        return
    scope = f"first {index.documents} passages" if data.prefix else f"{index.documents} passages"
    table = Table(title=f"{data_dir.name} ({split}, {len(data.queries)} queries, {scope})")
    # Short headers: the table must fit an 80-column terminal without cutting them.
    for column in ("mode", "nDCG@10", "R@10", "R@100", "MRR@10", "p50 ms", "p95 ms", "embed p50"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for r in results:
        m = r.metrics
        table.add_row(
            r.mode,
            f"{m['ndcg@10']:.4f}",
            f"{m['recall@10']:.4f}",
            f"{m['recall@100']:.4f}",
            f"{m['mrr@10']:.4f}",
            f"{r.latency_ms_p50:.2f}",
            f"{r.latency_ms_p95:.2f}",
            "-" if r.embed_ms_p50 is None else f"{r.embed_ms_p50:.1f}",
        )
    app.console.print(table)
    app.console.print(
        "p50/p95: search latency without the query embedding; embed p50: the query embedding alone (ms)",
        highlight=False,
    )
    hybrid = next((r for r in results if r.mode == "hybrid"), None)
    if hybrid is not None:
        s = hybrid.settings
        if s["fusion"] == "weighted":
            detail = f"{s['normalization']}, keyword_weight={s['keyword_weight']}"
        else:
            detail = f"rrf_k={s['rrf_k']}"
        detail += f", {s['candidates']} candidates per index"
        app.console.print(f"hybrid fusion: {s['fusion']} ({detail})", highlight=False)


@eval_app.command("multihop")
def multihop(
    ctx: typer.Context,
    data_dir: Annotated[
        Path, typer.Argument(help="BEIR folder of a multi-hop set (musique_hippo100, hotpotqa_hippo100).")
    ],
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1, max=10, help="Most retrieval rounds.")] = 3,
    strategy: Annotated[str, typer.Option("--strategy", help="verify or decide.")] = "verify",
    mode: Annotated[
        str, typer.Option("--mode", help="Search mode of each query: keyword (BM25), hybrid or vector.")
    ] = ("keyword"),
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, max=50, help="Paragraphs per query.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Evaluate only the first N questions.")] = None,
) -> None:
    """Run the agent's retrieval loop over a multi-hop set: Recall@5 and AllGold@10 of the evidence, rounds used,
    stop reasons. The reasoner is the configured one (offline when no model is configured)."""
    from kbagent.evaluation.multihop import run_multihop
    from kbagent.llm.factory import build_chat_model
    from kbagent.reasoning import build_reasoner

    app = app_context(ctx)
    if strategy not in ("verify", "decide"):
        raise InvalidInput("--strategy", f"must be verify or decide, got {strategy!r}")
    if mode not in ("hybrid", "keyword", "vector"):
        raise InvalidInput("--mode", f"must be hybrid, keyword or vector, got {mode!r}")
    reasoner = build_reasoner(build_chat_model(app.settings), app.settings.agent.queries_per_round)
    result = run_multihop(
        data_dir,
        app.settings,
        max_rounds=max_rounds,
        strategy=strategy,
        top_k=top_k,
        mode=mode,
        reasoner=reasoner,
        limit=limit,
    )
    if as_json:
        typer.echo(json.dumps(result.to_json(), ensure_ascii=False))
        return
    table = Table(title=f"{result.dataset}: {result.queries} questions, {result.strategy}, {result.reasoner}")
    for column in ("max rounds", "Recall@5", "AllGold@10", "rounds mean", "stop reasons", "overhead p50 ms"):
        table.add_column(column, justify="left" if column == "stop reasons" else "right")
    stops = ", ".join(f"{k} {v}" for k, v in sorted(result.stop_reasons.items()))
    table.add_row(
        str(result.max_rounds),
        f"{result.recall_at_5:.3f}",
        f"{result.all_gold_at_10:.3f}",
        f"{result.rounds_mean:.2f}",
        stops,
        f"{result.overhead_ms_p50:.1f}",
    )
    app.console.print(table)
    app.console.print(
        "p50/p95: search latency without the query embedding; embed p50: the query embedding alone (ms)",
        highlight=False,
    )
