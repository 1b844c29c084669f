"""Chunking: title paths, packing, page and atomic boundaries, sentence-aware splitting, and its invariants."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbagent.knowledge.chunking import Chunk, chunk_document, split_sentences
from kbagent.knowledge.parsers.base import Block, ParsedDocument
from kbagent.tokens import estimate_tokens


def doc(*blocks: Block) -> ParsedDocument:
    return ParsedDocument(format="txt", blocks=list(blocks))


def h(text: str, level: int) -> Block:
    return Block(text, "heading", level=level)


def p(text: str, **kw: object) -> Block:
    return Block(text, "paragraph", **kw)  # type: ignore[arg-type]


def non_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


# --- title paths ----------------------------------------------------------------------------------------


def test_headings_become_title_paths_and_a_new_top_heading_resets() -> None:
    chunks = chunk_document(
        doc(
            h("员工手册", 1),
            p("总则内容。"),
            h("年假", 2),
            p("年假按工龄计算。"),
            h("病假", 2),
            p("病假需提供证明。"),
            h("Expenses", 1),
            p("Claims within 30 days."),
        ),
        target_tokens=200,
    )
    assert [(c.title_path, c.content) for c in chunks] == [
        (("员工手册",), "总则内容。"),
        (("员工手册", "年假"), "年假按工龄计算。"),
        (("员工手册", "病假"), "病假需提供证明。"),
        (("Expenses",), "Claims within 30 days."),
    ]


def test_a_deeper_heading_after_a_skipped_level_and_back() -> None:
    chunks = chunk_document(doc(h("A", 1), h("A.1.1", 3), p("x y z"), h("A.2", 2), p("w")), target_tokens=50)
    assert [c.title_path for c in chunks] == [("A", "A.1.1"), ("A", "A.2")]


def test_a_heading_without_body_is_kept_as_its_own_chunk() -> None:
    chunks = chunk_document(doc(h("Intro", 1), h("Appendix", 1), p("body")), target_tokens=50)
    assert [(c.title_path, c.content) for c in chunks] == [(("Intro",), "Intro"), (("Appendix",), "body")]


def test_a_heading_with_subsections_is_carried_in_their_paths_not_repeated() -> None:
    chunks = chunk_document(doc(h("Handbook", 1), h("Leave", 2), p("text")), target_tokens=50)
    assert [(c.title_path, c.content) for c in chunks] == [(("Handbook", "Leave"), "text")]


# --- packing --------------------------------------------------------------------------------------------


def test_small_blocks_under_one_path_are_packed_up_to_the_target() -> None:
    blocks = [p(f"Paragraph number {i} is short.") for i in range(10)]
    chunks = chunk_document(doc(*blocks), target_tokens=30)
    assert len(chunks) < len(blocks)
    assert all(c.token_count <= 30 for c in chunks)
    assert non_space("".join(c.content for c in chunks)) == non_space("".join(b.text for b in blocks))
    assert "\n\n" in chunks[0].content  # packed blocks stay separated by a blank line


def test_a_block_that_fits_alone_is_not_split_across_chunks() -> None:
    first = "First paragraph with several words in it."
    second = "Second paragraph, also complete, that would not fit after the first one."
    chunks = chunk_document(doc(p(first), p(second)), target_tokens=estimate_tokens(second) + 2)
    assert [c.content for c in chunks] == [first, second]


def test_atomic_blocks_are_never_merged() -> None:
    rows = [Block(f"| {i} | row |", "row", atomic=True) for i in range(3)]
    chunks = chunk_document(doc(p("intro"), *rows, p("outro")), target_tokens=500)
    assert [c.content for c in chunks] == ["intro", "| 0 | row |", "| 1 | row |", "| 2 | row |", "outro"]


def test_a_chunk_never_spans_two_pages_and_keeps_its_page() -> None:
    chunks = chunk_document(
        doc(p("one", page=1), p("two", page=1), p("three", page=2), Block("ocr text", page=3, ocr=True)),
        target_tokens=500,
    )
    assert [(c.content, c.page, c.ocr) for c in chunks] == [
        ("one\n\ntwo", 1, False),
        ("three", 2, False),
        ("ocr text", 3, True),
    ]


def test_no_empty_chunks_from_blank_blocks() -> None:
    chunks = chunk_document(doc(p("  "), h("T", 1), p("\n"), p("real")), target_tokens=50)
    assert [c.content for c in chunks] == ["real"]
    assert chunk_document(doc(), target_tokens=50) == []


def test_target_must_be_positive() -> None:
    with pytest.raises(ValueError, match="target_tokens"):
        chunk_document(doc(p("x")), target_tokens=0)


def test_token_count_is_the_estimate_of_the_content() -> None:
    (chunk,) = chunk_document(doc(p("年假 annual leave")), target_tokens=50)
    assert chunk.token_count == estimate_tokens("年假 annual leave")
    assert isinstance(chunk, Chunk)


# --- sentence-aware splitting ---------------------------------------------------------------------------


def test_long_chinese_paragraph_is_cut_only_at_sentence_ends() -> None:
    sentences = [f"第{i}条规定员工每年可以享受带薪年假，具体天数按工龄计算。" for i in range(1, 30)]
    chunks = chunk_document(doc(p("".join(sentences))), target_tokens=60)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.token_count <= 60
        assert chunk.content.endswith("。")
        assert chunk.content.startswith("第")


def test_long_english_paragraph_is_cut_at_sentence_ends_not_abbreviations() -> None:
    text = " ".join(
        f"Dr. Lee approved claim {i} for 3.5 days, e.g. travel to Shenzhen. Mr. Wang agreed." for i in range(20)
    )
    chunks = chunk_document(doc(p(text)), target_tokens=45)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.token_count <= 45
        assert chunk.content.endswith(".")
        assert not chunk.content.endswith(("Dr.", "e.g.", "Mr.", "3."))
        assert chunk.content.startswith(("Dr.", "Mr."))


def test_split_sentences_chinese_and_latin() -> None:
    assert split_sentences("他说：“好的。”然后走了？是的；嗯！") == ["他说：“好的。”", "然后走了？", "是的；", "嗯！"]
    assert split_sentences("Dr. Smith paid 3.5 CNY, e.g. for tea. He left! Did he? yes") == [
        "Dr. Smith paid 3.5 CNY, e.g. for tea.",
        "He left!",
        "Did he? yes",
    ]
    assert split_sentences("See the U.S. Office. Then go.") == ["See the U.S. Office.", "Then go."]
    assert split_sentences("") == []


def test_an_over_long_sentence_is_cut_at_commas_then_spaces_never_inside_a_word() -> None:
    words = [f"word{i:03d}" for i in range(120)]
    sentence = ", ".join(" ".join(words[i : i + 6]) for i in range(0, 120, 6)) + "."
    chunks = chunk_document(doc(p(sentence)), target_tokens=25)
    assert len(chunks) > 1
    pieces = " ".join(c.content for c in chunks).replace(",", " ").replace(".", " ").split()
    assert pieces == words  # every word intact and in order
    assert all(c.token_count <= 25 for c in chunks)


def test_an_over_long_chinese_sentence_is_cut_at_commas() -> None:
    clauses = [f"第{i}项费用须附发票" for i in range(40)]
    chunks = chunk_document(doc(p("，".join(clauses) + "。")), target_tokens=40)
    assert len(chunks) > 1
    for chunk in chunks[:-1]:
        assert chunk.content.endswith("，")


def test_an_unbreakable_string_is_cut_by_characters_as_a_last_resort() -> None:
    token = "x" * 400
    chunks = chunk_document(doc(p(token)), target_tokens=20)
    assert "".join(c.content for c in chunks) == token
    assert all(c.token_count <= 20 for c in chunks)


def test_min_tokens_keeps_a_long_paragraph_from_ending_in_a_scrap() -> None:
    sentences = [f"Sentence {i} has exactly seven words here. " for i in range(10)]
    cost = max(estimate_tokens(s) for s in sentences)
    target, minimum = 3 * cost + 1, 2 * cost - 2  # three sentences fit a chunk; ten leave one alone at the end
    text = "".join(sentences).strip()
    without = chunk_document(doc(p(text)), target_tokens=target)
    with_min = chunk_document(doc(p(text)), target_tokens=target, min_tokens=minimum)
    assert without[-1].token_count < minimum  # the scrap the setting exists for
    assert all(minimum <= c.token_count <= target for c in with_min)
    assert non_space("".join(c.content for c in with_min)) == non_space(text)
    assert all(c.content.endswith("here.") for c in with_min)  # still cut at sentence ends


# --- invariants -----------------------------------------------------------------------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)
_HAN = st.text(alphabet="年假报销差旅员工制度审批", min_size=1, max_size=12)
_PUNCT = st.sampled_from([" ", " ", " ", ", ", ". ", "! ", "? ", "。", "，", "；", "\n", "e.g. ", "3.5 "])


@st.composite
def _texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(st.one_of(_WORD, _HAN), _PUNCT), min_size=1, max_size=60))
    return "".join(a + b for a, b in parts)


@st.composite
def _documents(draw: st.DrawFn) -> ParsedDocument:
    blocks: list[Block] = []
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            blocks.append(h(draw(_WORD), draw(st.integers(1, 3))))
        blocks.append(Block(draw(_texts()), page=draw(st.sampled_from([None, 1, 2])), atomic=draw(st.booleans())))
    return ParsedDocument(format="txt", blocks=blocks)


def _body_and_empty_headings(document: ParsedDocument) -> str:
    """Expected chunk text: body blocks, plus headings that have no body of their own."""
    out: list[str] = []
    blocks = [b for b in document.blocks if b.text.strip()]
    for i, block in enumerate(blocks):
        if block.kind != "heading":
            out.append(block.text)
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        if following is None or (following.kind == "heading" and following.level <= block.level):
            out.append(block.text)
    return "".join(out)


@given(_documents(), st.integers(min_value=8, max_value=120), st.integers(min_value=0, max_value=30))
@settings(max_examples=300, deadline=None)
def test_chunks_fit_the_target_and_lose_no_characters(document: ParsedDocument, target: int, min_tokens: int) -> None:
    chunks = chunk_document(document, target, min_tokens)
    for chunk in chunks:
        assert chunk.content.strip() == chunk.content != ""
        assert chunk.token_count <= target or len(chunk.content) == 1
    assert non_space("".join(c.content for c in chunks)) == non_space(_body_and_empty_headings(document))


@given(st.lists(_WORD, min_size=1, max_size=200), st.integers(min_value=0, max_value=60))
@settings(max_examples=200, deadline=None)
def test_no_word_is_cut_when_every_word_fits_the_target(words: list[str], slack: int) -> None:
    target = max(estimate_tokens(w) for w in words) + slack  # every word fits alone: none needs a character cut
    chunks = chunk_document(doc(p(" ".join(words))), target)
    assert [w for c in chunks for w in c.content.split()] == words
