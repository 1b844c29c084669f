"""Reading a dataset's paragraphs back in batches and by id, on both backends."""

from __future__ import annotations

from kbagent.knowledge.analysis import analyzed_text
from kbagent.storage import Database
from kbagent.storage.datasets import insert_dataset
from kbagent.storage.paragraphs import iter_paragraph_texts, iter_search_texts, paragraph_ids, search_texts
from stored_documents import write_document


def test_batches_cover_the_dataset_in_id_order_and_no_other(db: Database) -> None:
    with db.write() as session:
        a = insert_dataset(session, "a", "", "m", 2).id
        b = insert_dataset(session, "b", "", "m", 2).id
    texts = [f"Rule {n}: travel claims within {n} days." for n in range(7)]
    _, first = write_document(db, a, "one", texts[:4])
    write_document(db, b, "elsewhere", ["Not this dataset."])
    _, second = write_document(db, a, "two", texts[4:])
    ids = first + second
    with db.read() as session:
        assert paragraph_ids(session, a) == ids
        keyword_batches = list(iter_search_texts(session, a, batch=3))
        content_batches = list(iter_paragraph_texts(session, a, batch=3))
        by_id = search_texts(session, [ids[5], ids[0], ids[5], 10**9])
    assert [len(batch) for batch in keyword_batches] == [3, 3, 1]
    assert [row for batch in keyword_batches for row in batch] == [
        (i, analyzed_text(t)) for i, t in zip(ids, texts, strict=True)
    ]
    assert [row for batch in content_batches for row in batch] == [(i, [], t) for i, t in zip(ids, texts, strict=True)]
    assert by_id == [(ids[0], analyzed_text(texts[0])), (ids[5], analyzed_text(texts[5]))]
