"""The KnowledgeBase API end to end on both backends, with the deterministic test embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from kbagent.errors import Conflict, EmbeddingMismatch, InvalidInput, ModelError, NotFound
from kbagent.knowledge.parsers.base import Block, ParsedDocument
from kbagent.knowledge.records import SourceDocument
from kbagent.knowledge.service import KnowledgeBase
from kbagent.settings import Settings
from kbagent.storage import Database
from kbagent.storage.tables import Embedding, IngestJob, Paragraph

LEAVE_MD = """# 假期制度

## 年假

员工每年享有十五天带薪年假，需提前两周在系统中申请。

## 病假

病假需要提供医院开具的证明，三天以内由直属经理审批。
"""

EXPENSES_TXT = """Expense claims must be filed within thirty days, with the original receipts attached.

Travel is booked through the company portal; economy class is the default for flights under six hours.
"""

SECURITY_HTML = """<html><head><title>Security</title></head><body>
<h1>Information security</h1>
<p>Laptops must use full-disk encryption and lock after five minutes of inactivity.</p>
<h2>密码</h2>
<p>密码至少十二位，每九十天更换一次。</p>
</body></html>"""


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


@pytest.fixture
def handbook(tmp_path: Path) -> Path:
    folder = tmp_path / "handbook"
    write(folder, "leave.md", LEAVE_MD)
    write(folder, "expenses.txt", EXPENSES_TXT)
    write(folder, "policies/security.html", SECURITY_HTML)
    return folder


@pytest.fixture
def loaded(kb: KnowledgeBase, handbook: Path) -> KnowledgeBase:
    kb.create_dataset("hb", "the handbook")
    report = kb.ingest_paths("hb", [handbook])
    assert report.ok, report.failures
    assert report.added == 3
    return kb


def test_ingest_folder_then_find_chinese_and_english(loaded: KnowledgeBase) -> None:
    info = loaded.get_dataset("hb")
    assert (info.document_count, info.embedding_model, info.embedding_dim) == (3, "test-hashing-64", 64)
    assert info.paragraph_count >= 4

    for mode in ("keyword", "vector", "hybrid"):
        hit = loaded.search(["hb"], "年假有几天", top_k=3, mode=mode)[0]
        assert "十五天带薪年假" in hit.content, mode
        assert hit.document_name == "leave.md"
        assert hit.title_path == ("假期制度", "年假")

        hit = loaded.search(["hb"], "when must expense receipts be filed", top_k=3, mode=mode)[0]
        assert "Expense claims" in hit.content, mode

    hit = loaded.search(["hb"], "密码多久更换", top_k=1)[0]
    assert hit.document_name == "security.html" and "九十天" in hit.content


def test_results_contract_per_mode(loaded: KnowledgeBase) -> None:
    keyword = loaded.search(["hb"], "encryption laptops", top_k=5, mode="keyword")
    vector = loaded.search(["hb"], "encryption laptops", top_k=5, mode="vector")
    hybrid = loaded.search(["hb"], "encryption laptops", top_k=5, mode="hybrid")
    assert keyword and vector and hybrid
    assert all(h.vector_score is None and h.keyword_score == h.score for h in keyword)
    assert all(h.keyword_score is None and h.vector_score == h.score for h in vector)
    assert hybrid[0].keyword_score is not None and hybrid[0].vector_score is not None
    for hits in (keyword, vector, hybrid):
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert len({h.paragraph_id for h in hits}) == len(hits)
        assert all(h.dataset == "hb" and h.document_id > 0 and h.content for h in hits)
    assert len(vector) == 5  # vector search always fills top_k when the dataset has enough paragraphs


FUSIONS = [
    {"fusion": "rrf"},
    {"fusion": "weighted", "normalization": "zscore"},
    {"fusion": "weighted", "normalization": "minmax"},
]


@pytest.mark.parametrize("search", FUSIONS)
def test_every_fusion_ranks_the_paragraph_matching_both_first(
    loaded: KnowledgeBase, settings: Settings, search: dict[str, str]
) -> None:
    loaded.settings = settings.model_copy(update={"search": settings.search.model_copy(update=search)})
    hits = loaded.search(["hb"], "full-disk encryption", top_k=3, mode="hybrid")
    assert "full-disk encryption" in hits[0].content
    if search.get("normalization") == "minmax":
        assert all(0.0 <= h.score <= 1.0 for h in hits)


def test_unchanged_file_is_skipped_and_changed_file_replaces(
    loaded: KnowledgeBase, handbook: Path, embedder: Any, db: Database
) -> None:
    embedded = embedder.passages_embedded
    again = loaded.ingest_paths("hb", [handbook])
    assert (again.added, again.updated, again.skipped) == (0, 0, 3)
    assert loaded.ingest_paths("hb", handbook / "leave.md").skipped == 1  # a single path, not a list
    assert embedder.passages_embedded == embedded  # nothing sent to the model

    before = {d.source: d for d in loaded.list_documents("hb")}
    write(handbook, "expenses.txt", "Expense claims are now filed within fourteen days through the new app.\n")
    changed = loaded.ingest_paths("hb", [handbook])
    assert (changed.added, changed.updated, changed.skipped) == (0, 1, 2)

    after = {d.source: d for d in loaded.list_documents("hb")}
    source = str((handbook / "expenses.txt").resolve())
    assert after[source].id == before[source].id  # same document, new paragraphs
    assert after[source].paragraph_count == 1
    hits = loaded.search(["hb"], "expense claims filed", top_k=10, mode="keyword")
    expense_hits = [h for h in hits if h.document_name == "expenses.txt"]
    assert [h.content for h in expense_hits] == [
        "Expense claims are now filed within fourteen days through the new app."
    ]
    assert not loaded.search(["hb"], "economy class flights", top_k=10, mode="keyword")
    with db.read() as session:
        doc_paragraphs = session.scalars(select(Paragraph.id).where(Paragraph.document_id == after[source].id)).all()
        vectors = session.scalars(select(Embedding.paragraph_id).where(Embedding.paragraph_id.in_(doc_paragraphs)))
        assert len(doc_paragraphs) == 1 and list(vectors) == list(doc_paragraphs)


def test_delete_document_removes_it_from_every_index(loaded: KnowledgeBase, handbook: Path, db: Database) -> None:
    source = str((handbook / "leave.md").resolve())
    removed = loaded.delete_document("hb", source)
    assert removed.name == "leave.md"
    assert "leave.md" not in {d.name for d in loaded.list_documents("hb")}
    for mode in ("keyword", "vector", "hybrid"):
        hits = loaded.search(["hb"], "年假 病假", top_k=10, mode=mode)
        assert all(h.document_name != "leave.md" for h in hits), mode
    with db.read() as session:
        assert session.scalar(select(Paragraph.id).where(Paragraph.document_id == removed.id)) is None

    other = loaded.list_documents("hb")[0]
    loaded.delete_document("hb", str(other.id))  # by id, as the CLI passes it
    assert other.id not in {d.id for d in loaded.list_documents("hb")}
    with pytest.raises(NotFound, match="document 'nope.txt' is not in dataset 'hb'"):
        loaded.delete_document("hb", "nope.txt")


def test_folder_with_bad_files_carries_on_and_reports_each(
    kb: KnowledgeBase, tmp_path: Path, settings: Settings, db: Database
) -> None:
    folder = tmp_path / "mixed"
    write(folder, "good.md", "# 报销\n\n差旅报销需在三十天内提交发票。\n")
    write(folder, "binary.txt", bytes(range(256)) * 4)
    write(folder, "empty.txt", "")
    write(folder, "notes.xyz", "some text")
    write(folder, "huge.txt", "a" * (200 * 1024))
    write(folder, "gbk.txt", "出差住宿标准为每晚五百元。".encode("gb18030"))
    kb.settings = settings.model_copy(update={"ingest": settings.ingest.model_copy(update={"max_file_mb": 0.1})})
    kb.create_dataset("mixed")
    seen: list[tuple[int, int]] = []
    report = kb.ingest_paths("mixed", [folder, tmp_path / "missing.md"], progress=lambda d, t, _: seen.append((d, t)))

    assert report.added == 2
    reasons = {Path(f.source).name: f.reason for f in report.failures}
    assert set(reasons) == {"binary.txt", "empty.txt", "notes.xyz", "huge.txt", "missing.md"}
    assert "binary data" in reasons["binary.txt"]
    assert "empty" in reasons["empty.txt"]
    assert "unsupported file type" in reasons["notes.xyz"] and ".md" in reasons["notes.xyz"]
    assert "ingest.max_file_mb = 0.1" in reasons["huge.txt"]
    assert "no such file" in reasons["missing.md"]
    assert seen[-1] == (7, 7)
    assert {d.name for d in kb.list_documents("mixed")} == {"good.md", "gbk.txt"}
    assert kb.search(["mixed"], "住宿标准", top_k=1, mode="keyword")[0].document_name == "gbk.txt"
    with db.read() as session:
        job = session.scalars(select(IngestJob).where(IngestJob.id == report.job_id)).one()
    assert (job.status, job.done_files, job.failed_files, job.total_files) == ("done", 2, 5, 7)
    assert {Path(f["source"]).name for f in job.failures} == set(reasons)


def test_failed_embedding_leaves_no_partial_document(
    db: Database, settings: Settings, handbook: Path, embedder_class: type[Any]
) -> None:
    class BrokenEmbedder(embedder_class):  # type: ignore[misc,valid-type]
        def embed_passages(self, texts: Any) -> Any:
            raise ModelError("embedding endpoint http://127.0.0.1:9/v1 failed: 500")

    kb = KnowledgeBase(db, settings, BrokenEmbedder())
    kb.create_dataset("hb")
    report = kb.ingest_paths("hb", [handbook])
    assert report.added == 0 and report.failed == 3
    assert all("embedding failed" in f.reason for f in report.failures)
    assert kb.list_documents("hb") == []
    assert kb.search(["hb"], "年假", mode="keyword") == []
    with db.read() as session:
        assert session.scalar(select(Paragraph.id)) is None


def test_other_model_is_refused_until_reembed(
    loaded: KnowledgeBase, db: Database, settings: Settings, embedder_class: type[Any]
) -> None:
    other = KnowledgeBase(db, settings, embedder_class(dimension=32, model="other"))
    with pytest.raises(EmbeddingMismatch, match=r"run `kbagent reembed hb`"):
        other.search(["hb"], "年假", mode="vector")
    with pytest.raises(EmbeddingMismatch, match=r"test-hashing-64 \(64 dimensions\).*other-32 \(32 dimensions\)"):
        other.ingest_paths("hb", [])
    # Keyword search does not involve vectors, so it still works.
    assert other.search(["hb"], "年假", mode="keyword")

    info = other.reembed("hb")
    assert (info.embedding_model, info.embedding_dim) == ("other-32", 32)
    hit = other.search(["hb"], "年假有几天", top_k=1, mode="vector")[0]
    assert "年假" in hit.content
    with pytest.raises(EmbeddingMismatch):
        loaded.search(["hb"], "年假", mode="hybrid")


def test_embedding_cache_spares_the_model(kb: KnowledgeBase, handbook: Path, embedder: Any) -> None:
    kb.create_dataset("a")
    kb.create_dataset("b")
    kb.ingest_paths("a", [handbook])
    embedded = embedder.passages_embedded
    assert embedded > 0
    report = kb.ingest_paths("b", [handbook])
    assert report.added == 3
    assert embedder.passages_embedded == embedded
    assert kb.search(["b"], "年假有几天", top_k=1, mode="vector")[0].document_name == "leave.md"


def test_search_over_several_datasets(loaded: KnowledgeBase, tmp_path: Path) -> None:
    loaded.create_dataset("legal")
    write(tmp_path / "legal", "contract.txt", "The contract renews every year unless cancelled in writing.\n")
    loaded.ingest_paths("legal", [tmp_path / "legal"])
    for mode in ("keyword", "vector", "hybrid"):
        hits = loaded.search(["hb", "legal"], "contract renews in writing", top_k=10, mode=mode)
        assert hits[0].dataset == "legal", mode
        only_hb = loaded.search(["hb"], "contract renews in writing", top_k=10, mode=mode)
        assert all(h.dataset == "hb" for h in only_hb)


def test_bulk_documents_and_paragraph_lookup(kb: KnowledgeBase) -> None:
    kb.create_dataset("beir")
    docs = [
        SourceDocument(
            source=f"doc{i}",
            name=f"doc{i}",
            parsed=ParsedDocument(format="txt", blocks=[Block(f"Title {i}", kind="heading", level=1), Block(text)]),
        )
        for i, text in enumerate(["Aspirin reduces fever.", "Vitamin C and colds.", "Sleep and memory."])
    ]
    report = kb.ingest_documents("beir", docs)
    assert (report.added, report.paragraphs) == (3, 3)
    assert kb.ingest_documents("beir", docs).skipped == 3
    hits = kb.search(["beir"], "memory sleep", top_k=2)
    assert hits[0].document_name == "doc2" and hits[0].title_path == ("Title 2",)
    records = kb.paragraphs([hits[1].paragraph_id, hits[0].paragraph_id, 999_999])
    assert [r.paragraph_id for r in records] == [hits[1].paragraph_id, hits[0].paragraph_id]
    assert records[1].content == "Sleep and memory."


def test_hybrid_hits_carry_exact_vector_scores_under_an_ivf_index(
    db: Database, settings: Settings, embedder: Any
) -> None:
    """Above ``search.exact_max_vectors`` the IVF index reads only some of its lists; a paragraph the keyword
    index finds still gets its exact vector score in hybrid search, as an exact search would give it."""
    if db.dialect == "postgresql":
        pytest.skip("the in-process IVF index is the embedded backend's")
    topics = ["annual leave days", "expense receipts", "laptop encryption", "travel booking", "office parking"]
    docs = [
        SourceDocument(
            source=f"{topic}-{n}",
            name=f"{topic}-{n}",
            parsed=ParsedDocument(format="txt", blocks=[Block(f"Note {n} about {topic} and item{n}.")]),
        )
        for topic in topics
        for n in range(80)
    ]  # 400 paragraphs: an IVF index of sqrt(400)/4 = 5 lists
    exact = KnowledgeBase(db, settings, embedder)
    exact.create_dataset("notes")
    exact.ingest_documents("notes", docs)
    search = settings.search.model_copy(update={"exact_max_vectors": 10, "ivf_probes": 1})
    approximate = KnowledgeBase(db, settings.model_copy(update={"search": search}), embedder)
    query = "item7 parking"
    truth = {h.paragraph_id: h.vector_score for h in exact.search(["notes"], query, top_k=200, mode="vector")}
    reached = {h.paragraph_id for h in approximate.search(["notes"], query, top_k=200, mode="vector")}
    assert len(reached) < len(truth)  # the IVF read one list of several
    hits = approximate.search(["notes"], query, top_k=10, mode="hybrid")
    keyword_found = [h for h in hits if h.keyword_score is not None]
    assert any(h.paragraph_id not in reached for h in keyword_found)  # found by words in a list not read
    for hit in keyword_found:
        assert hit.vector_score == pytest.approx(truth[hit.paragraph_id], abs=1e-5)


def test_a_large_ingest_leaves_fresh_planner_statistics(kb: KnowledgeBase, db: Database) -> None:
    """On PostgreSQL keyword search plans badly on stale statistics (174 ms instead of 19 ms measured on a
    fresh corpus), so an ingest of 1,000 or more paragraphs analyses the tables before it reports done."""
    if db.dialect != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's; SQLite needs no refresh")

    def analysed() -> int:
        with db.read() as session:
            row = session.execute(
                text("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'paragraphs'")
            ).scalar()
            return int(row or 0)

    def notes(prefix: str, count: int) -> list[SourceDocument]:
        parsed = [ParsedDocument(format="txt", blocks=[Block(f"Policy {i} covers item {i}.")]) for i in range(count)]
        return [SourceDocument(source=f"{prefix}{i}", name=f"{prefix}{i}", parsed=p) for i, p in enumerate(parsed)]

    kb.create_dataset("bulk")
    before = analysed()
    kb.ingest_documents("bulk", notes("small", 5))
    assert analysed() == before  # a small ingest leaves it to autovacuum
    kb.ingest_documents("bulk", notes("large", 1000))
    assert analysed() > before


def test_bad_requests_name_the_field_and_limit(loaded: KnowledgeBase, settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="query: is empty"):
        loaded.search(["hb"], "   ")
    too_long = "年" * (settings.search.max_query_chars + 1)
    with pytest.raises(
        InvalidInput, match=r"query: 2001 characters is over the limit of search.max_query_chars = 2000"
    ):
        loaded.search(["hb"], too_long)
    for k in (0, settings.search.max_top_k + 1):
        with pytest.raises(InvalidInput, match=r"top_k: must be between 1 and search.max_top_k = 200"):
            loaded.search(["hb"], "年假", top_k=k)
    with pytest.raises(InvalidInput, match="mode: must be one of hybrid, keyword, vector"):
        loaded.search(["hb"], "年假", mode="fuzzy")
    with pytest.raises(NotFound, match="dataset 'nope' does not exist"):
        loaded.search(["hb", "nope"], "年假")
    with pytest.raises(InvalidInput, match="datasets: name at least one dataset"):
        loaded.search([], "年假")
    with pytest.raises(NotFound, match="dataset 'nope' does not exist"):
        loaded.ingest_paths("nope", [])
    with pytest.raises(Conflict, match="dataset 'hb' already exists"):
        loaded.create_dataset("hb")
    with pytest.raises(InvalidInput, match="dataset: name 'two words' must be"):
        loaded.create_dataset("two words")
    # Nothing stored was touched by the refused requests.
    assert loaded.get_dataset("hb").document_count == 3


def test_query_of_operators_and_punctuation_is_plain_text(loaded: KnowledgeBase) -> None:
    assert loaded.search(["hb"], '"AND OR NEAR( * :', mode="keyword") == []
    assert loaded.search(["hb"], "？！。", mode="keyword") == []
    assert loaded.search(["hb"], "？！。", mode="hybrid")  # the vector half still answers


def test_delete_dataset_removes_everything(loaded: KnowledgeBase, db: Database) -> None:
    loaded.delete_dataset("hb")
    assert loaded.list_datasets() == []
    with db.read() as session:
        assert session.scalar(select(Paragraph.id)) is None
        assert session.scalar(select(Embedding.paragraph_id)) is None
    with pytest.raises(NotFound):
        loaded.search(["hb"], "年假")
    loaded.create_dataset("hb")  # the name is free again, and the new dataset starts empty
    assert loaded.search(["hb"], "年假", mode="hybrid") == []


def test_keyword_only_knowledge_base(db: Database, settings: Settings, handbook: Path) -> None:
    kb = KnowledgeBase(db, settings, None)
    kb.create_dataset("kw")
    assert kb.ingest_paths("kw", [handbook]).added == 3
    assert kb.search(["kw"], "年假有几天", mode="keyword")[0].document_name == "leave.md"
    with pytest.raises(InvalidInput, match="mode: vector search needs an embedding model"):
        kb.search(["kw"], "年假", mode="vector")
    with db.read() as session:
        assert session.scalar(select(Embedding.paragraph_id)) is None


def test_ids_are_never_reused(loaded: KnowledgeBase, handbook: Path) -> None:
    # A citation stored with an answer names a paragraph id; after a delete it must not point at new text.
    old_dataset = loaded.get_dataset("hb").id
    old_paragraphs = {h.paragraph_id for h in loaded.search(["hb"], "年假 expense laptops 密码", top_k=50)}
    newest = max(d.id for d in loaded.list_documents("hb"))
    loaded.delete_document("hb", str(newest))
    loaded.delete_dataset("hb")
    assert loaded.create_dataset("hb").id > old_dataset
    loaded.ingest_paths("hb", [handbook])
    new_paragraphs = {h.paragraph_id for h in loaded.search(["hb"], "年假 expense laptops 密码", top_k=50)}
    assert min(new_paragraphs) > max(old_paragraphs)
    assert min(d.id for d in loaded.list_documents("hb")) > newest


def test_progress_moves_while_a_large_file_is_embedded(
    db: Database, settings: Settings, tmp_path: Path, embedder: Any
) -> None:
    small_batches = settings.model_copy(
        update={
            "embedding": settings.embedding.model_copy(update={"batch_size": 1}),
            "ingest": settings.ingest.model_copy(update={"chunk_tokens": 32, "min_chunk_tokens": 0}),
        }
    )
    kb = KnowledgeBase(db, small_batches, embedder)
    kb.create_dataset("big")
    paragraphs = [f"Rule {i}: every visitor signs the register at the front desk before entering." for i in range(30)]
    write(tmp_path, "rules.txt", "\n\n".join(paragraphs))
    seen: list[str] = []
    report = kb.ingest_paths("big", tmp_path / "rules.txt", progress=lambda d, t, what: seen.append(what))
    assert report.paragraphs >= 24
    embedding_steps = [w for w in seen if "embedding" in w]
    assert len(embedding_steps) >= 3 and embedding_steps[0].startswith("rules.txt: embedding 0/")
