"""The reasoner backed by a language model: prompts and JSON schemas through the llm client.

Rewrite, assess, decide and summarize are auxiliary calls (non-streaming, thinking off; a reply cut at its output
limit is an error, never a result). Replies are parsed robustly (code fences, prose around the object) and
validated; what does not validate raises ``StructuredOutputError`` so the agent records ``assessment_error``
instead of trusting a guess. The answer is streamed; reasoning deltas never reach it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kbagent.errors import IncompleteOutput, StructuredOutputError
from kbagent.llm.messages import (
    AssistantMessage,
    ChatRequest,
    JsonSchema,
    Message,
    StreamEnd,
    SystemMessage,
    TextDelta,
    UserMessage,
)
from kbagent.llm.model import ChatModel
from kbagent.llm.structured import complete_auxiliary, extract_json_object, validate_json
from kbagent.reasoning import prompts
from kbagent.reasoning.base import AnswerSpec, Assessment, Decision, History
from kbagent.reasoning.evidence import Evidence
from kbagent.reasoning.offline import compose_answer
from kbagent.reasoning.usage import record_usage

SUMMARY_WORDS = 400


class LLMReasoner:
    """Judgements by ``model``. ``max_queries`` is what the prompts allow per round (``agent.queries_per_round``)."""

    def __init__(self, model: ChatModel, max_queries: int = 2) -> None:
        self.model = model
        self.max_queries = max_queries

    @property
    def name(self) -> str:
        return self.model.name

    async def _json(
        self, messages: Sequence[Message], schema: Mapping[str, Any], name: str, max_output_tokens: int
    ) -> dict[str, Any]:
        request = ChatRequest(
            messages=tuple(messages),
            max_output_tokens=max_output_tokens,
            response_format=JsonSchema(name=name, schema=schema, strict=False),
            thinking=False,
            temperature=0,
        )
        result = await complete_auxiliary(self.model, request)
        record_usage(result.usage.input_tokens, result.usage.output_tokens)
        value = extract_json_object(result.text)
        validate_json(value, schema)
        return value

    @staticmethod
    def _with_history(history: History | None, content: str) -> list[Message]:
        block = prompts.history_block(history)
        return [UserMessage(block), UserMessage(content)] if block else [UserMessage(content)]

    async def rewrite(self, question: str, history: History | None) -> str:
        if history is None or history.empty:
            return question
        messages: list[Message] = [SystemMessage(prompts.REWRITE_SYSTEM)]
        messages += self._with_history(history, f"Latest message: {question}")
        value = await self._json(messages, prompts.REWRITE_SCHEMA, "rewrite", 256)
        query = str(value["query"]).strip()
        if not query:
            raise StructuredOutputError("the rewrite returned an empty query")
        return query

    async def assess(self, question: str, evidence: Sequence[Evidence], asked: Sequence[str]) -> Assessment:
        if not evidence:
            # Nothing to judge: empty evidence is never sufficient, and no model is asked to pretend otherwise.
            return Assessment(False, missing=question, next_queries=(question,) if question not in asked else ())
        system = prompts.ASSESS_SYSTEM.replace("{max_queries}", str(self.max_queries))
        user = f"Question: {question}\n{prompts.queries_line(asked)}\n\n{prompts.paragraphs_block(evidence)}"
        value = await self._json([SystemMessage(system), UserMessage(user)], prompts.ASSESS_SCHEMA, "assessment", 512)
        queries = tuple(q.strip() for q in value["next_queries"] if isinstance(q, str) and q.strip())
        sufficient = bool(value["sufficient"])
        missing = str(value["missing"]).strip()
        if sufficient and missing and queries:
            # "sufficient" with a gap named and searches proposed contradicts itself: not a judgement to trust.
            raise StructuredOutputError("the assessment says sufficient but names missing parts and next queries")
        return Assessment(sufficient, missing="" if sufficient else missing, next_queries=() if sufficient else queries)

    async def decide(
        self, question: str, evidence: Sequence[Evidence], asked: Sequence[str], round_no: int, max_rounds: int
    ) -> Decision:
        system = (
            prompts.DECIDE_SYSTEM.replace("{max_queries}", str(self.max_queries))
            .replace("{round_no}", str(round_no))
            .replace("{max_rounds}", str(max_rounds))
        )
        user = f"Question: {question}\n{prompts.queries_line(asked)}\n\n{prompts.paragraphs_block(evidence)}"
        value = await self._json([SystemMessage(system), UserMessage(user)], prompts.DECIDE_SCHEMA, "decision", 768)
        queries = tuple(q.strip() for q in value.get("queries", []) if isinstance(q, str) and q.strip())
        action = value["action"]
        if action == "SEARCH" and not queries:
            raise StructuredOutputError("the decision is SEARCH but names no query")
        return Decision(
            action=action,
            queries=queries if action == "SEARCH" else (),
            answer=str(value.get("answer", "")),
            reason=str(value.get("reason", "")),
        )

    def _answer_request(
        self, question: str, evidence: Sequence[Evidence], spec: AnswerSpec, history: History | None
    ) -> ChatRequest:
        system = prompts.ANSWER_SYSTEM
        if spec.max_chars:
            system += prompts.ANSWER_LIMIT.replace("{max_chars}", str(spec.max_chars))
        gaps = ""
        if spec.missing:
            gaps = "\nThe search could not find: " + "; ".join(spec.missing)
        user = f"{prompts.paragraphs_block(evidence)}{gaps}\n\nQuestion: {question}"
        return ChatRequest(messages=(SystemMessage(system), *self._with_history(history, user)))

    async def _stream(self, request: ChatRequest) -> AsyncIterator[str]:
        ended = False
        async for event in self.model.stream(request):
            if isinstance(event, TextDelta):
                if event.text:
                    yield event.text
            elif isinstance(event, StreamEnd):
                ended = True
                record_usage(event.usage.input_tokens, event.usage.output_tokens)
        if not ended:
            raise IncompleteOutput("the answer stream ended without a finish reason")

    async def answer(
        self, question: str, evidence: Sequence[Evidence], spec: AnswerSpec, history: History | None = None
    ) -> AsyncIterator[str]:
        if not evidence:
            # No paragraph to cite: the fixed extractive wording says so without inviting the model to improvise.
            yield compose_answer(question, evidence, spec)
            return
        request = self._answer_request(question, evidence, spec, history)
        parts: list[str] = []
        async for text in self._stream(request):
            parts.append(text)
            yield text
        answer = "".join(parts)
        if spec.min_chars and len(answer.strip()) < spec.min_chars:
            # Seed 001: an answer that is too short gets one request to complete it, never more.
            follow = prompts.COMPLETE_SHORT.replace("{max_chars}", str(spec.max_chars or 800))
            again = replace(request, messages=(*request.messages, AssistantMessage(answer), UserMessage(follow)))
            async for text in self._stream(again):
                yield text

    async def summarize(self, previous_summary: str, turns: Sequence[tuple[str, str]]) -> str:
        system = prompts.SUMMARIZE_SYSTEM.replace("{max_words}", str(SUMMARY_WORDS))
        shown = "\n\n".join(f"Q: {q}\nA: {a}" for q, a in turns)
        previous = previous_summary.strip() or "(none yet)"
        user = f"Previous summary:\n{previous}\n\n<turns>\n{shown}\n</turns>"
        request = ChatRequest(messages=(SystemMessage(system), UserMessage(user)), thinking=False, temperature=0)
        result = await complete_auxiliary(self.model, request)
        record_usage(result.usage.input_tokens, result.usage.output_tokens)
        summary = result.text.strip()
        if not summary:
            raise IncompleteOutput("the summarizer returned no text")
        return summary
