"""The token estimate against the real cl100k, o200k and Qwen tokenizers (bundled offline in quicktok)."""

from __future__ import annotations

import pytest
import quicktok
from hypothesis import given, settings
from hypothesis import strategies as st

from kbagent.tokens import CJK_RANGES, COST_TOKENIZERS, estimate_tokens, truncate_to_tokens

ENCODINGS = [quicktok.get_encoding(name) for name in COST_TOKENIZERS]


def real_counts(text: str) -> list[int]:
    return [len(encoding.encode_ordinary(text)) for encoding in ENCODINGS]


CHINESE = [
    "根据公司《员工手册》第三章的规定，正式员工每年享有带薪年假十五天。",
    "报销流程：员工提交申请后，由部门负责人审批，财务部在五个工作日内完成付款。",
    "本合同自双方签字盖章之日起生效，有效期为三年，期满前三十日内任何一方可书面提出续签。",
    "如发生不可抗力事件，受影响一方应及时通知对方，并在十五日内提供相关证明。",
    "数据安全管理办法要求对个人信息进行分级分类保护，严禁未经授权的访问和传输。",
    "伊丽莎白二世在温莎城堡的圣乔治教堂下葬，与丈夫菲利普亲王毗邻而眠。",
    "澳大利亚组合科基纳基斯和克耶高斯获得男子双打冠军；诺瓦克·乔科维奇卫冕。",
    "产品经理需要在需求评审会上说明用户画像、核心场景和验收标准。",
    "请问差旅住宿标准是多少？一线城市每晚不超过六百元。",
    "龘靐齉爩——这些生僻字在名字里偶尔会出现。",
]
ENGLISH = [
    "Employees accrue paid annual leave at a rate of 1.25 days per month of continuous service.",
    "The Supplier shall indemnify the Customer against all claims arising from a breach of this Agreement.",
    "Konstantin Vakulovsky and Cryptantha pterocarya appear in the appendix of the survey.",
    "Toccata, Adagio and Fugue in C major, BWV 564, was written by Johann Sebastian Bach.",
    "Our retrieval agent iterates until the evidence covers every part of the question.",
    "Please reimburse the attached receipts (total: $1,284.50) before 2026-03-31.",
]
CODE = [
    "def accrue(days: float, months: int) -> float:\n    return round(days * months / 12, 2)\n",
    "for (let i = 0; i < items.length; i++) { total += items[i].price * items[i].qty; }",
    "SELECT id, title FROM paragraphs WHERE dataset_id = $1 ORDER BY score DESC LIMIT 10;",
    "    if not self._queue:\n        raise ScriptExhausted(f'no reply queued for call {index + 1}')\n",
    '{"sufficient": false, "missing": ["reimbursement limit"], "next_queries": ["差旅 标准"]}',
    "curl -s https://api.example.com/v1/chat/completions -H 'Authorization: Bearer $KEY'",
]
EMOJI = ["👍", "🎉", "😀", "🚀", "👨‍👩‍👧‍👦", "🇨🇳", "❤️", "✅", "🙏🏽"]
JOINERS = [" ", "\n", "\n\n", "，", "。", ", ", ": ", " - ", "\t", ""]

_fragment = st.one_of(
    st.sampled_from(CHINESE),
    st.sampled_from(ENGLISH),
    st.sampled_from(CODE),
    st.sampled_from(EMOJI),
    st.integers(0, 10**12).map(str),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: f"{x:.2f}"),
    st.dates().map(lambda d: d.isoformat()),
    st.sampled_from(ENGLISH).map(lambda s: "_".join(s.lower().split()[:4])),
    st.sampled_from(CHINESE).map(lambda s: s[: len(s) // 2]),
)


@st.composite
def mixed_texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_fragment, min_size=1, max_size=12))
    out = parts[0]
    for part in parts[1:]:
        out += draw(st.sampled_from(JOINERS)) + part
    return out


@pytest.mark.parametrize("text", CHINESE + ENGLISH + CODE + ["".join(EMOJI)])
def test_estimate_is_not_below_any_real_tokenizer(text: str) -> None:
    estimate = estimate_tokens(text)
    assert estimate >= max(real_counts(text)), (estimate, real_counts(text))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(text=mixed_texts())
def test_estimate_is_not_below_real_tokenizers_on_generated_mixed_text(text: str) -> None:
    counts = real_counts(text)
    assert estimate_tokens(text) >= max(counts), (estimate_tokens(text), counts)


def test_estimate_does_not_overshoot_wildly_on_prose() -> None:
    # A budget that is mostly slack wastes the context window: stay within 2x of the largest real count.
    for text in CHINESE[:5] + ENGLISH[:2]:
        assert estimate_tokens(text) <= 2 * max(real_counts(text)), text


def test_empty_and_whitespace() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(" ") >= 0


@settings(max_examples=60, derandomize=True, deadline=None)
@given(text=mixed_texts(), budget=st.integers(0, 300))
def test_truncate_gives_the_longest_prefix_within_budget(text: str, budget: int) -> None:
    cut = truncate_to_tokens(text, budget)
    assert text.startswith(cut)
    assert estimate_tokens(cut) <= max(budget, 0)
    if cut != text:
        assert estimate_tokens(text[: len(cut) + 1]) > budget


def test_cjk_cost_table_matches_the_tokenizers() -> None:
    """The shipped table (scripts/generate_cjk_token_costs.py) must agree with the vocabularies it came from."""
    from importlib import resources

    one, two = (resources.files("kbagent") / "cjk_token_costs.txt").read_text(encoding="utf-8").split("\n")[:2]
    chars = [chr(cp) for lo, hi in CJK_RANGES for cp in range(lo, hi + 1)]
    worst = [0] * len(chars)
    for encoding in ENCODINGS:
        for i, count in enumerate(quicktok.count_batch(encoding, chars)):
            worst[i] = max(worst[i], int(count))
    assert one == "".join(c for c, w in zip(chars, worst, strict=True) if w <= 1)
    assert two == "".join(c for c, w in zip(chars, worst, strict=True) if w == 2)
