"""The keyword index on both backends: ranking, dataset filtering, following changes to the paragraphs
(in this process and in another), and user text that looks like syntax."""

from __future__ import annotations

import threading

from kbagent.knowledge.analysis import analyze
from kbagent.knowledge.keyword_index import KeywordIndex
from kbagent.knowledge.records import DatasetRef
from kbagent.storage import Database
from kbagent.storage.datasets import bump_revision, dataset_by_name, insert_dataset
from kbagent.storage.documents import delete_document
from stored_documents import write_document


def _ref(db: Database, name: str) -> DatasetRef:
    with db.read() as session:
        row = dataset_by_name(session, name)
        assert row is not None
        return DatasetRef(row.id, row.revision, row.embedding_dim, row.embedding_model)


def _search(index: KeywordIndex, db: Database, names: list[str], query: str, limit: int = 10) -> list[int]:
    return [pid for pid, _ in index.search([_ref(db, n) for n in names], analyze(query), limit)]


def test_ranking_filtering_and_deletion(db: Database) -> None:
    index = KeywordIndex(db)
    with db.write() as session:
        insert_dataset(session, "a", "", "m", 2)
        insert_dataset(session, "b", "", "m", 2)
    a = _ref(db, "a").id
    doc, ids = write_document(
        db,
        a,
        "x",
        ["行政复议的申请期限为六十日。", "Refund policies for damaged goods.", "会议室预订请使用前台系统。"],
    )
    _, other = write_document(db, _ref(db, "b").id, "y", ["复议申请材料清单。"])
    assert _search(index, db, ["a"], "复议") == [ids[0]]  # jieba search mode: 复议 inside 行政复议
    assert _search(index, db, ["a"], "refund policy") == [ids[1]]  # stemming: policy ~ policies
    assert set(_search(index, db, ["a", "b"], "复议 申请")) == {ids[0], other[0]}
    assert _search(index, db, ["b"], "会议室") == []
    scored = index.search([_ref(db, "a")], analyze("会议室 预订 系统"), 10)
    assert scored[0][0] == ids[2] and scored[0][1] > 0
    with db.write() as session:
        delete_document(session, doc)
        bump_revision(session, a)
    assert _search(index, db, ["a"], "复议 refund 会议室") == []


def test_changes_are_followed_incrementally_and_across_processes(db: Database) -> None:
    index = KeywordIndex(db)
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 2).id
    doc, first = write_document(db, a, "leave.md", ["Annual leave is 15 days.", "Sick leave needs a note."])
    assert _search(index, db, ["a"], "annual leave")[0] == first[0]

    # The same source rewritten: the old text is gone, the new text is found, nothing is doubled.
    _, second = write_document(
        db, a, "leave.md", ["Annual leave is 20 days from 2026.", "Sick leave needs a note."], document_id=doc
    )
    found = _search(index, db, ["a"], "annual sick leave")
    assert sorted(found) == sorted(second) and not set(found) & set(first)

    # Another process (here: another index over the same database) sees what this one wrote, and this one
    # sees what the other removes.
    elsewhere = KeywordIndex(db)
    _, travel = write_document(db, a, "travel.md", ["Travel expenses are reimbursed within 30 days."])
    assert _search(elsewhere, db, ["a"], "travel reimbursed") == travel
    assert _search(index, db, ["a"], "travel reimbursed") == travel
    with db.write() as session:
        delete_document(session, doc)
        bump_revision(session, a)
    assert _search(elsewhere, db, ["a"], "annual leave") == []
    assert _search(index, db, ["a"], "annual leave days") == travel  # "days" is in the travel paragraph


def test_rare_terms_weigh_more_than_common_ones(db: Database) -> None:
    # "policy" is in every paragraph, twice in most; "escalation" in one. Counting occurrences alone would
    # rank the policy-heavy paragraphs first; BM25's inverse document frequency puts the rare word's first.
    index = KeywordIndex(db)
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 2).id
    common = [f"Policy {n}: the policy covers item {n}." for n in range(20)]
    _, ids = write_document(db, a, "p", [*common, "Escalation rules for incidents."])
    assert _search(index, db, ["a"], "policy escalation", limit=3)[0] == ids[-1]


def test_syntax_in_user_text_is_searched_as_words(db: Database) -> None:
    index = KeywordIndex(db)
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 2).id
    _, ids = write_document(db, a, "x", ['Use NEAR and OR operators carefully: it\'s a "quoted" note.'])
    assert _search(index, db, ["a"], 'NEAR( "quoted" OR') == ids
    assert _search(index, db, ["a"], "it's") == ids
    assert _search(index, db, ["a"], "\\ ' \" * ( ) : ^") == []
    ref = _ref(db, "a")
    assert index.search([ref], ["'", '"', "*"], 10) == []
    assert index.search([], ["note"], 10) == []
    assert index.search([ref], ["note"], 0) == []


def test_searches_from_many_threads_during_changes(db: Database) -> None:
    """Threads searching while documents arrive: no error, no duplicate, and every search after the last
    change finds everything (each waits for the one sync rather than serving a half-built index)."""
    index = KeywordIndex(db)
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 2).id
    errors: list[BaseException] = []

    def search_repeatedly() -> None:
        try:
            for _ in range(20):
                found = _search(index, db, ["a"], "handbook", limit=50)
                assert len(found) == len(set(found))
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=search_repeatedly) for _ in range(4)]
    for thread in threads:
        thread.start()
    written: list[int] = []
    for n in range(5):
        written += write_document(db, a, f"part-{n}.md", [f"Handbook part {n}, section {i}." for i in range(3)])[1]
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(_search(index, db, ["a"], "handbook", limit=50)) == sorted(written)


def test_an_empty_dataset_finds_nothing(db: Database) -> None:
    index = KeywordIndex(db)
    with db.write() as session:
        insert_dataset(session, "a", "", "m", 2)
    assert _search(index, db, ["a"], "anything") == []
