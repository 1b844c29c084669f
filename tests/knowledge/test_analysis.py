"""Keyword analysis: the terms documents and queries are matched on, and their trip through the index tokenizers."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from kbagent.knowledge.analysis import analyze, analyzed_text
from kbagent.knowledge.keyword_index import KeywordIndex
from kbagent.knowledge.records import DatasetRef
from kbagent.storage import open_database
from kbagent.storage.datasets import bump_revision, insert_dataset
from kbagent.storage.documents import save_document
from kbagent.storage.paragraphs import replace_paragraphs
from kbagent.storage.tables import Dataset


def test_chinese_compound_and_its_parts_are_both_terms() -> None:
    terms = analyze("申请行政复议的期限是六十日")
    assert "行政复议" in terms
    assert "复议" in terms and "行政" in terms
    # a query for the short word meets the document's terms
    assert set(analyze("复议期限")) <= set(terms)


def test_workplace_words_jieba_lacks_are_whole_terms() -> None:
    # Without them 年假 would be 年 + 假, and 年 matches half of every Chinese policy.
    assert "年假" in analyze("员工年假天数按工龄计算")
    assert {"年假", "带薪年假"} <= set(analyze("带薪年假"))
    assert "年" not in analyze("年假")


def test_latin_words_are_lowercased_and_stemmed_alike() -> None:
    assert analyze("Reimbursement Policies") == analyze("reimbursement policy")
    assert analyze("RUNNING") == analyze("runs")


def test_stopwords_are_dropped_but_meaningful_short_words_stay() -> None:
    assert analyze("the policy of the company") == analyze("policy company")
    assert "的" not in analyze("公司的制度")
    assert "不" in analyze("不 报销")  # negation changes meaning: not a stopword
    assert analyze("IT security") == ["it", "secur"]  # "it" is a department here, not a stopword


def test_numbers_are_kept_and_decimals_stay_one_term() -> None:
    terms = analyze("2026年报销上限3.5万元")
    assert "2026" in terms
    assert "3p5" in terms and "3" not in terms and "5" not in terms
    assert analyze("3.5") == analyze("３．５")  # full-width digits and point normalise to the same term


def test_punctuation_separates_terms() -> None:
    assert analyze("COVID-19 (2026-01-15)") == ["covid", "19", "2026", "01", "15"]
    assert analyze("e-mail: hr@qinglan.example") == ["e", "mail", "hr", "qinglan", "exampl"]


def test_full_width_latin_normalises() -> None:
    assert analyze("ＶＰＮ") == analyze("vpn")


def test_empty_and_punctuation_only_text_has_no_terms() -> None:
    assert analyze("") == []
    assert analyze("。，！？ -- ...") == []
    assert analyzed_text("  ") == ""


def test_analyzed_text_is_terms_joined_by_single_spaces() -> None:
    source = "员工年假天数 depends on Seniority"
    assert analyzed_text(source) == " ".join(analyze(source))
    assert "  " not in analyzed_text(source)


_TERM = re.compile(r"^[^\W_]+$")
# Mixed text: Chinese, Latin, digits, punctuation of both languages, spaces and line breaks.
_mixed = st.text(
    alphabet=st.sampled_from(
        list("行政复议年假报销差旅的是了员工制度和天")
        + list("abcXYZéß019")
        + list(" \n\t.,;:!?-_/@#()[]'\"。，、；：！？（）《》“”")
    ),
    max_size=80,
)


@given(_mixed)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_every_term_is_letters_and_digits_only(source: str) -> None:
    for term in analyze(source):
        assert _TERM.match(term), term


def test_every_term_of_a_paragraph_finds_it_in_the_embedded_index(tmp_path: Path) -> None:
    # The embedded index splits the stored text on whitespace: each analysed term of a paragraph must find that
    # paragraph again, or a query term would never meet a document term.
    db = open_database(f"sqlite:///{tmp_path / 'terms.db'}")
    index = KeywordIndex(db)
    with db.write() as session:
        dataset = insert_dataset(session, "t", "", "m", 2).id
    number = iter(range(10**6))

    @given(_mixed)
    @settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    def check(source: str) -> None:
        terms = analyze(source)
        with db.write() as session:
            n = next(number)
            doc = save_document(
                session, dataset_id=dataset, document_id=None, name=f"d{n}", source=f"d{n}", content_hash=str(n),
                size_bytes=1, format="txt", paragraph_count=1, meta={},
            )  # fmt: skip
            row = {"position": 0, "title_path": [], "content": source, "search_text": analyzed_text(source),
                   "token_count": 1, "page": None, "ocr": False, "meta": {}}  # fmt: skip
            [pid] = replace_paragraphs(session, dataset_id=dataset, document_id=doc, rows=[row])
            bump_revision(session, dataset)
            revision = session.get(Dataset, dataset).revision
        ref = DatasetRef(dataset, revision, 2, "m")
        for term in set(terms):
            assert pid in {hit for hit, _ in index.search([ref], [term], 10_000)}, term

    try:
        check()
    finally:
        db.close()


@pytest.mark.postgres
def test_terms_pass_through_postgres_simple_tsvector_unchanged() -> None:
    url = os.environ.get("KBAGENT_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("KBAGENT_TEST_POSTGRES_URL is not set (scripts/ci/start-postgres.sh starts a server)")
    engine = create_engine(url)
    samples = [
        "申请行政复议的期限是六十日",
        "Reimbursement claims over 5,000 CNY need the finance director (v2.1, 2026-03-01).",
        "年假 annual leave 3.5 天 COVID-19 ＶＰＮ café",
    ]
    try:
        with engine.connect() as conn:
            for source in samples:
                vector = conn.execute(text("SELECT to_tsvector('simple', :t)::text"), {"t": analyzed_text(source)})
                lexemes = set(re.findall(r"'([^']+)'", vector.scalar_one()))
                assert lexemes == set(analyze(source)), source
    finally:
        engine.dispose()
