"""Keeping a model's reasoning out of its answer, and switching reasoning off per provider.

Reasoning arrives two ways: a separate ``reasoning_content`` (or ``reasoning``) field, which the client reads
apart, or ``<think>...</think>`` blocks inside the content, which ``ThinkSplitter`` separates, also when a tag is
split across stream chunks. Models whose chat template opens ``<think>`` inside the prompt (so the reply has only
the closing tag) must be served with a reasoning parser (vLLM ``--reasoning-parser``, llama.cpp
``--reasoning-format``); a stray closing tag is still never shown as text.
"""

from __future__ import annotations

from typing import Any, Literal

from kbagent.settings import ThinkingSwitch

OPEN = "<think>"
CLOSE = "</think>"

Piece = tuple[Literal["text", "reasoning"], str]


def thinking_off_params(switch: ThinkingSwitch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(top-level params, extra_body) that ask a provider to skip reasoning for an auxiliary call."""
    match switch:
        case "thinking_type":  # DeepSeek, Zhipu GLM, Volcengine Doubao, MiniMax, Moonshot
            return {}, {"thinking": {"type": "disabled"}}
        case "enable_thinking":  # DashScope / Qwen, SiliconFlow
            return {}, {"enable_thinking": False}
        case "chat_template":  # vLLM, SGLang, llama.cpp serving Qwen3-style templates
            return {}, {"chat_template_kwargs": {"enable_thinking": False}}
        case "reasoning_effort":  # OpenAI o-series / gpt-5, Gemini's OpenAI endpoint
            return {"reasoning_effort": "low"}, {}
        case "none":
            return {}, {}


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag`` (a tag cut by a chunk edge)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ThinkSplitter:
    """Feed content chunks; get ("text" | "reasoning", piece) pairs with the tags removed."""

    def __init__(self) -> None:
        self._buffer = ""
        self._in_think = False

    def feed(self, chunk: str) -> list[Piece]:
        self._buffer += chunk
        out: list[Piece] = []
        while self._buffer:
            tag = CLOSE if self._in_think else OPEN
            index = self._buffer.find(tag)
            stray = -1 if self._in_think else self._buffer.find(CLOSE)
            if stray != -1 and (index == -1 or stray < index):
                # A closing tag without an opening one: drop the tag, keep the text around it as text.
                self._emit(out, self._buffer[:stray])
                self._buffer = self._buffer[stray + len(CLOSE) :]
                continue
            if index == -1:
                keep = max(
                    _partial_suffix(self._buffer, tag), 0 if self._in_think else _partial_suffix(self._buffer, CLOSE)
                )
                ready, self._buffer = self._buffer[: len(self._buffer) - keep], self._buffer[len(self._buffer) - keep :]
                self._emit(out, ready)
                break
            self._emit(out, self._buffer[:index])
            self._buffer = self._buffer[index + len(tag) :]
            self._in_think = not self._in_think
        return out

    def flush(self) -> list[Piece]:
        """What is left at the end (a cut-off tag prefix is kept as the content it was)."""
        out: list[Piece] = []
        self._emit(out, self._buffer)
        self._buffer = ""
        return out

    def _emit(self, out: list[Piece], text: str) -> None:
        if text:
            out.append(("reasoning" if self._in_think else "text", text))


def split_think(content: str) -> tuple[str, str]:
    """(text, reasoning) of a complete reply."""
    splitter = ThinkSplitter()
    pieces = splitter.feed(content) + splitter.flush()
    text = "".join(p for kind, p in pieces if kind == "text")
    reasoning = "".join(p for kind, p in pieces if kind == "reasoning")
    return text, reasoning
