"""Function-call latency in the Docker sandbox against a bare container start, measured in the same run.

    python benchmarks/bench_sandbox.py [--calls 20] [--parallel 4] [--image kbagent-sandbox:latest]

Four workloads, each run ``--calls`` times one after another, interleaved with the others so that load from
other processes hits them alike (p50/p95 per call), and then ``--calls`` times with ``--parallel`` in flight
at once (calls/s):

- ``bare``: ``docker run --rm IMAGE true``, the engine's own floor (the baseline);
- ``hardened``: the same with every hardening flag of the runner, still ``true``;
- ``python``: the hardened container running ``python3 -c pass``;
- ``execute``: kbagent's ``execute()`` of a small function: harness, JSON in and out, nonce frame.

The ratios say what each layer costs on top of the bare start. Needs a Docker engine and the image
(scripts/ci/start-docker.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from kbagent.functions import define, execute
from kbagent.functions.docker_runner import DockerRunner
from kbagent.settings import load_settings

Call = Callable[[], Awaitable[None]]


async def _docker(argv: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} ... failed: {err.decode().strip()}")


async def interleaved(workloads: dict[str, Call], calls: int) -> dict[str, list[float]]:
    """Sequential calls, one of each workload in turn: load from other processes hits all of them alike."""
    for call in workloads.values():
        await call()  # warm-up: page cache, engine state
    seconds: dict[str, list[float]] = {label: [] for label in workloads}
    for _ in range(calls):
        for label, call in workloads.items():
            started = time.perf_counter()
            await call()
            seconds[label].append(time.perf_counter() - started)
    return seconds


async def parallel(call: Call, calls: int, width: int) -> float:
    gate = asyncio.Semaphore(width)

    async def one() -> None:
        async with gate:
            await call()

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    return calls / (time.perf_counter() - started)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--image", default="kbagent-sandbox:latest")
    args = parser.parse_args()

    settings = load_settings(config_path=None, environ={}, overrides={"python": {"image": args.image}}).python
    runner = DockerRunner(settings)
    await runner.check_ready()
    hardened = runner.run_args("unused")[:-5]  # the flags, without the name's uniqueness or the harness
    name_at = hardened.index("--name")
    del hardened[name_at : name_at + 2]
    function = define("def main(xs):\n    return {'sum': sum(xs), 'n': len(xs)}\n")

    async def run_execute() -> None:
        result = await execute(function, {"xs": list(range(100))}, runner)
        if not result.ok:
            raise SystemExit(f"execute failed: {result.status} {result.detail}")

    workloads: dict[str, Call] = {
        "bare": lambda: _docker([settings.docker, "run", "--rm", "--pull=never", args.image, "true"]),
        "hardened": lambda: _docker([*hardened, "true"]),
        "python": lambda: _docker([*hardened, "python3", "-c", "pass"]),
        "execute": run_execute,
    }
    print(f"{args.calls} calls each; parallel width {args.parallel}; image {args.image}")
    print(f"{'workload':<10} {'p50 ms':>8} {'p95 ms':>8} {'x bare':>7} {'calls/s':>8} {'x bare':>7}")
    sequential = await interleaved(workloads, args.calls)
    rates = {label: await parallel(call, args.calls, args.parallel) for label, call in workloads.items()}
    base_p50, base_rate = statistics.median(sequential["bare"]), rates["bare"]
    for label, seconds in sequential.items():
        p50, p95, rate = statistics.median(seconds), percentile(seconds, 0.95), rates[label]
        print(
            f"{label:<10} {p50 * 1000:>8.0f} {p95 * 1000:>8.0f} {p50 / base_p50:>7.2f} {rate:>8.2f} "
            f"{rate / base_rate:>7.2f}"
        )
    leftovers = await runner.leftover_containers()
    print(f"kbagent-fn-* containers on the engine after the run (other users' included): {len(leftovers)}")


if __name__ == "__main__":
    asyncio.run(main())
