"""Summarizing conversation turns without a model: keep what later questions depend on.

The summary is a few labelled lists (goals, constraints, corrections, facts, entities) merged with the previous
summary's lists, newest last, each list capped so the summary stays small. Facts with numbers and dates are kept
whole sentence by sentence, so an updated value ("budget 48, not 35") sits after the old one and the correction
list says it was corrected.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kbagent.reasoning.entities import find_entities, sentences
from kbagent.reasoning.terms import language_of
from kbagent.tokens import estimate_tokens, truncate_to_tokens

SUMMARY_TOKENS = 1500
_PER_SECTION = {"goals": 8, "constraints": 8, "corrections": 8, "facts": 12, "entities": 30}
_LABELS = {
    "zh": {
        "goals": "用户目标",
        "constraints": "约束条件",
        "corrections": "更正",
        "facts": "已确认的事实",
        "entities": "涉及的实体",
    },
    "en": {
        "goals": "User goals",
        "constraints": "Constraints",
        "corrections": "Corrections",
        "facts": "Facts stated",
        "entities": "Entities",
    },
}
_CONSTRAINT = re.compile(
    r"必须|不能|不得|不超过|至少|最多|只能|仅|限|截止|之前|以内|预算|要求|"
    r"\b(must|should|only|at most|at least|no more than|deadline|budget|limit|within|before|require[sd]?)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"不是|更正|改为|改成|应为|纠正|说错|修改|调整为|变更为|"
    r"\b(actually|correction|instead|not .* but|update[sd]?|changed? to|I meant)\b",
    re.IGNORECASE,
)
_NUMBERISH = re.compile(r"\d")
_MARKER = re.compile(r"\s*\[\d+\]")
_BULLET = re.compile(r"^\s*-\s+")


def _parse(previous: str) -> dict[str, list[str]]:
    """Sections of a summary this module wrote; any other text is kept as one goal so nothing is dropped."""
    sections: dict[str, list[str]] = {key: [] for key in _PER_SECTION}
    by_label = {label: key for labels in _LABELS.values() for key, label in labels.items()}
    current: str | None = None
    loose: list[str] = []
    for line in previous.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        header = stripped.rstrip(":：")
        if header in by_label:
            current = by_label[header]
            continue
        if current is None:
            loose.append(stripped)
            continue
        item = _BULLET.sub("", stripped)
        if current == "entities":
            sections[current].extend(e.strip() for e in re.split("[,，、]", item) if e.strip())
        else:
            sections[current].append(item)
    if loose:
        sections["goals"].insert(0, " ".join(loose))
    return sections


def _add(items: list[str], item: str) -> None:
    item = item.strip()
    if not item:
        return
    if item in items:
        items.remove(item)  # re-mentioned: move to the end, it is recent again
    items.append(item)


def summarize_offline(previous_summary: str, turns: Sequence[tuple[str, str]]) -> str:
    """Merge ``turns`` into ``previous_summary``; returns the previous summary when there is nothing new."""
    sections = _parse(previous_summary)
    language = language_of(previous_summary + " ".join(q for q, _ in turns))
    for question, answer in turns:
        question = question.strip()
        answer = _MARKER.sub("", answer.strip())
        if question:
            _add(sections["goals"], question[:300])
        for sentence in sentences(question):
            if _CORRECTION.search(sentence):
                _add(sections["corrections"], sentence)
            elif _CONSTRAINT.search(sentence):
                _add(sections["constraints"], sentence)
        kept = 0
        for sentence in sentences(answer):
            if _NUMBERISH.search(sentence) or _CONSTRAINT.search(sentence):
                _add(sections["facts"], _BULLET.sub("", sentence)[:300])
                kept += 1
            if kept >= 4:
                break
        for entity in find_entities(f"{question}\n{answer}")[:10]:
            _add(sections["entities"], entity)
    labels = _LABELS[language]
    for key, cap in _PER_SECTION.items():
        del sections[key][:-cap]

    def render() -> str:
        blocks: list[str] = []
        for key in _PER_SECTION:
            items = sections[key]
            if not items:
                continue
            if key == "entities":
                blocks.append(f"{labels[key]}:\n- {', '.join(items)}")
            else:
                blocks.append(f"{labels[key]}:\n" + "\n".join(f"- {item}" for item in items))
        return "\n\n".join(blocks)

    text = render()
    # Over budget: drop the oldest items, goals and entities first; corrections go last of all.
    for key in ("entities", "goals", "facts", "constraints", "corrections"):
        while estimate_tokens(text) > SUMMARY_TOKENS and len(sections[key]) > 1:
            del sections[key][0]
            text = render()
    return truncate_to_tokens(text, SUMMARY_TOKENS)
