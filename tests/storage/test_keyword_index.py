"""The keyword index on both backends: ranking, dataset filtering, and user text that looks like syntax."""

from __future__ import annotations

from kbagent.knowledge.analysis import analyze, analyzed_text
from kbagent.storage import Database
from kbagent.storage.datasets import insert_dataset
from kbagent.storage.documents import delete_document, save_document
from kbagent.storage.keyword_index import keyword_search
from kbagent.storage.paragraphs import replace_paragraphs


def _document(db: Database, dataset_id: int, source: str, paragraphs: list[str]) -> tuple[int, list[int]]:
    with db.write() as session:
        doc = save_document(
            session,
            dataset_id=dataset_id,
            document_id=None,
            name=source,
            source=source,
            content_hash=source,
            size_bytes=1,
            format="txt",
            paragraph_count=len(paragraphs),
            meta={},
        )
        rows = [
            {"position": i, "title_path": [], "content": p, "search_text": analyzed_text(p), "token_count": 1,
             "page": None, "ocr": False, "meta": {}}
            for i, p in enumerate(paragraphs)
        ]  # fmt: skip
        return doc, replace_paragraphs(session, dataset_id=dataset_id, document_id=doc, rows=rows)


def _search(db: Database, dataset_ids: list[int], query: str, limit: int = 10) -> list[int]:
    with db.read() as session:
        return [pid for pid, _ in keyword_search(session, dataset_ids, analyze(query), limit)]


def test_ranking_filtering_and_deletion(db: Database) -> None:
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 2).id
        b = insert_dataset(session, "b", "", "m", 2).id
    doc, ids = _document(
        db,
        a,
        "x",
        ["行政复议的申请期限为六十日。", "Refund policies for damaged goods.", "会议室预订请使用前台系统。"],
    )
    _, other = _document(db, b, "y", ["复议申请材料清单。"])
    assert _search(db, [a], "复议") == [ids[0]]  # jieba search mode: 复议 inside 行政复议
    assert _search(db, [a], "refund policy") == [ids[1]]  # stemming: policy ~ policies
    assert set(_search(db, [a, b], "复议 申请")) == {ids[0], other[0]}
    assert _search(db, [b], "会议室") == []
    with db.read() as session:
        scored = keyword_search(session, [a], analyze("会议室 预订 系统"), 10)
    assert scored[0][0] == ids[2] and scored[0][1] > 0
    with db.write() as session:
        delete_document(session, doc)
    assert _search(db, [a], "复议 refund 会议室") == []


def test_syntax_in_user_text_is_searched_as_words(db: Database) -> None:
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 2).id
    _, ids = _document(db, a, "x", ['Use NEAR and OR operators carefully: it\'s a "quoted" note.'])
    assert _search(db, [a], 'NEAR( "quoted" OR') == ids
    assert _search(db, [a], "it's") == ids
    assert _search(db, [a], "\\ ' \" * ( ) : ^") == []
    with db.read() as session:
        assert keyword_search(session, [a], ["'", '"', "*"], 10) == []
        assert keyword_search(session, [], ["note"], 10) == []
