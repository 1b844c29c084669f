"""Guard overhead: how long the context guard takes to shrink a ~200k-token request, against measuring it.

    .venv/bin/python benchmarks/bench_guard.py [--tokens 200000] [--window 32000] [--runs 7]

Prints medians (ms) of: the baseline (estimating the request's tokens once, which any budget check must do),
the pre-trim to a known window, and a full recovery (no window known; a scripted server rejects anything over the
window, so the guard goes through explicit overflow errors and retries). Ratios are against the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from kbagent.llm import (
    AssistantMessage,
    ChatRequest,
    GuardedModel,
    Message,
    ModelLimits,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    estimate_request_tokens,
)
from kbagent.settings import LLMSettings

ZH = "根据公司《员工手册》第三章，正式员工每年享有带薪年假十五天，报销需在三十日内提交。"
EN = "The Supplier shall indemnify the Customer against all claims arising from a breach of this Agreement. "


def build_request(target_tokens: int) -> ChatRequest:
    messages: list[Message] = [SystemMessage("You answer from the handbook and cite paragraph ids.")]
    turn = 0
    while True:
        turn += 1
        messages.append(UserMessage(f"Question {turn}: " + ZH * 3 + EN * 3))
        call = ToolCall(f"call_{turn}", "search", '{"query": "年假 annual leave"}')
        messages.append(AssistantMessage("", (call,)))
        messages.append(ToolMessage(call.id, (ZH * 20 + EN * 20)))
        messages.append(AssistantMessage("Answer: " + ZH * 4 + EN * 4))
        request = ChatRequest(messages=(*messages, UserMessage("最后的问题：年假怎么算？")))
        if turn % 10 == 0 and estimate_request_tokens(request) >= target_tokens:
            return request


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    request = build_request(args.tokens)
    estimate = estimate_request_tokens(request)
    print(f"request: {len(request.messages)} messages, {estimate} estimated tokens; window {args.window}")

    baseline = median_ms(lambda: estimate_request_tokens(request), args.runs)
    known = GuardedModel(ScriptedModel(), ModelLimits(args.window, 1024), LLMSettings())
    pretrim = median_ms(lambda: known.prepare(request), args.runs)
    trimmed = known.prepare(request)

    calls: list[int] = []

    def recover() -> None:
        inner = ScriptedModel(lambda messages, info: "ok", context_window=args.window)
        result = asyncio.run(GuardedModel(inner, ModelLimits(None, 1024), LLMSettings()).complete(request))
        calls.append(inner.calls)
        assert result.recoveries >= 1

    recovery = median_ms(recover, args.runs)
    print(f"baseline  estimate request once      {baseline:8.1f} ms  (1.00x)")
    print(
        f"pre-trim  to the known window        {pretrim:8.1f} ms  ({pretrim / baseline:.2f}x)  "
        f"-> {estimate_request_tokens(trimmed)} tokens, {len(trimmed.messages)} messages"
    )
    print(
        f"recovery  from explicit errors       {recovery:8.1f} ms  ({recovery / baseline:.2f}x)  "
        f"{calls[-1]} scripted calls (first + {calls[-1] - 1} recoveries)"
    )


if __name__ == "__main__":
    main()
