#!/usr/bin/env python
"""The exhaustive search (kafkalab.explore): states per second, memory per state, and the time
to the first counterexample of each config the course runs it on.

For each config the search runs once in this process and prints: distinct states, the depth
reached, wall seconds, states/s, and whether it found a violation (its length) or was complete.
Memory per state: the peak traced memory (tracemalloc) of a separate run of the same search,
over its states. Branching: how a search gets a state's children. It rebuilds each schedule
from scratch (the simulator is deterministic); copying a cluster (copy.deepcopy) is timed
beside it, and whether a copy continues exactly like the original (same digest after the same
steps) is printed. Workers: one search again with its large depths shared among forked
processes (one per core; ``explore(workers=N)``), states/s against the same search in one
process measured just before (the baseline), and whether both found the same. With --spark, one
search also runs on Spark local[1] and local[2], each states/s against the in-process search
measured in the same run (the baseline). The figures above the workers table are one process's.

    python benchmarks/bench_explore.py          # a few minutes
    python benchmarks/bench_explore.py --quick  # the fast configs only (seconds)
    python benchmarks/bench_explore.py --spark
    python benchmarks/bench_explore.py --config "acks=1"  # some configs only (repeatable)

Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmark the working tree, installed or not

from _table import machine, table  # noqa: E402  (benchmarks/_table.py)

from kafkalab.config import make_config  # noqa: E402
from kafkalab.explore import (  # noqa: E402
    CRASH_ACTIONS,
    EXAMPLES,
    Replayer,
    explore,
    state_digest,
)

CRASHES = CRASH_ACTIONS
SAFE = EXAMPLES["safe"]
KIP_101 = EXAMPLES["kip101"]

# The divergence searches of Lesson 6b: two records, two crashes, time passing only when it lets
# the controller act (elect), logs_agree_below_hw only.
DIVERGE: dict[str, Any] = dict(
    brokers=2,
    depth=10,
    records=2,
    crashes=2,
    actions=("produce", "crash", "restart", "flush", "elect"),
    invariants=["logs_agree_below_hw"],
)

# name -> (settings, bounds); the quick ones first
CONFIGS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "acks=1": ({"acks": "1"}, dict(brokers=2, depth=4)),
    "acks=1, no power loss": (
        {"acks": "1"},
        dict(brokers=2, depth=4, actions=("produce", "fetch", "crash", "expire")),
    ),
    "safe, 2 brokers": (SAFE, dict(brokers=2, depth=5, crashes=1, records=1)),
    "0.10 no leader epochs (KIP-101)": (
        KIP_101,
        dict(brokers=2, depth=7, records=1, crashes=2, actions=CRASHES),
    ),
    "same with leader epochs": (
        {**KIP_101, "leader_epochs": True},
        dict(brokers=2, depth=7, records=1, crashes=2, actions=CRASHES),
    ),
    "0.10 defaults (unclean election on)": (
        {"preset": "0.10", "acks": "all", "min.insync.replicas": 1},
        dict(brokers=2, depth=7, records=1, crashes=2, actions=CRASHES),
    ),
    "0.10 as shipped, divergence": (
        {"preset": "0.10"},
        dict(DIVERGE, depth=9),
    ),
    "0.11 + unclean, divergence (KIP-279)": (
        {"preset": "0.11", "unclean.leader.election.enable": True},
        dict(DIVERGE, actions=(*DIVERGE["actions"], "sync")),
    ),
    "2.0 + unclean, divergence": (
        {"preset": "2.0", "unclean.leader.election.enable": True},
        dict(DIVERGE, actions=(*DIVERGE["actions"], "sync")),
    ),
    "safe, 3 brokers, 1 crash": (SAFE, dict(brokers=3, depth=5, records=1, crashes=1)),
    "safe, 3 brokers, 3 power losses": (
        SAFE,
        dict(brokers=3, depth=8, records=1, crashes=3, actions=("produce", "fetch", "power_loss")),
    ),
}
QUICK = ("acks=1", "acks=1, no power loss")
MEMORY = ("acks=1, no power loss", "safe, 2 brokers", "0.10 no leader epochs (KIP-101)")


def run(name: str) -> list[str]:
    settings, bounds = CONFIGS[name]
    r = explore(settings, workers=1, **bounds)
    v = r.violation
    found = f"{v.invariant} in {len(v.steps)} steps" if v else "none"
    reach = "complete" if r.complete else "cut short"
    return [
        name,
        str(r.states),
        str(r.depth),
        f"{r.seconds:.2f}",
        f"{r.states / max(r.seconds, 1e-9):.0f}",
        found,
        f"{r.seconds:.2f}" if v else "-",
        reach,
    ]


def memory_per_state(name: str) -> tuple[int, float]:
    settings, bounds = CONFIGS[name]
    tracemalloc.start()
    r = explore(settings, workers=1, **bounds)  # tracemalloc sees this process only
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return r.states, peak / r.states


def branching(samples: int = 30) -> list[list[str]]:
    """Rebuilding a depth-5 schedule against copying its cluster."""
    steps = [{"produce": "r1"}, {"fetch": 2}, {"fetch": 2}, {"crash": 1}, {"advance": 6000}]
    replayer = Replayer(make_config(KIP_101), 2, None)
    t0 = time.perf_counter()
    for _ in range(samples):
        cluster = replayer.build(steps)
    rebuild = (time.perf_counter() - t0) / samples
    t0 = time.perf_counter()
    try:
        for _ in range(samples):
            copied = copy.deepcopy(cluster)
    except Exception as err:  # the compiled core's classes cannot all be copied
        failed = f"fails: {type(err).__name__}: {err}"
        copied = None
    deep = (time.perf_counter() - t0) / samples
    t0 = time.perf_counter()
    for _ in range(samples):
        state_digest(cluster)
    digest = (time.perf_counter() - t0) / samples
    if copied is not None:
        for c in (cluster, copied):
            for step in ({"restart": 1}, {"fetch": 1}):
                replayer.apply(c, step)
        failed = "yes" if state_digest(cluster) == state_digest(copied) else "no"
    return [
        ["rebuild from the schedule", f"{rebuild * 1000:.2f}", "yes"],
        ["copy.deepcopy", "-" if copied is None else f"{deep * 1000:.2f}", failed],
        ["state digest", f"{digest * 1000:.2f}", ""],
    ]


def worker_rates(name: str) -> list[list[str]]:
    """The search in one process (the baseline), then shared among one worker per core."""
    settings, bounds = CONFIGS[name]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    base = explore(settings, workers=1, **bounds)
    base_rate = base.states / max(base.seconds, 1e-9)
    rows = [["1 (this process)", f"{base.seconds:.2f}", f"{base_rate:.0f}", "1.00", "-"]]
    for workers in sorted({2, cores or 1} - {1}):
        r = explore(settings, workers=workers, **bounds)
        same = r.as_json() | {"seconds": 0} == base.as_json() | {"seconds": 0}
        rate = r.states / max(r.seconds, 1e-9)
        rows.append(
            [
                str(workers),
                f"{r.seconds:.2f}",
                f"{rate:.0f}",
                f"{rate / base_rate:.2f}",
                "yes" if same else "NO",
            ]
        )
    return rows


def spark_rates(name: str) -> list[list[str]]:
    from kafkalab.explore.spark import explore_on_spark
    from kafkalab.spark.session import spark_session

    settings, bounds = CONFIGS[name]
    base = explore(settings, **bounds)
    base_rate = base.states / base.seconds
    rows = [["in this process", f"{base.seconds:.2f}", f"{base_rate:.0f}", "1.00"]]
    for master in ("local[1]", "local[2]"):
        session = spark_session(master, app_name=f"bench explore {master}")
        try:
            r = explore_on_spark(settings, spark=session, **bounds)
        finally:
            session.stop()
        if r.as_json() | {"seconds": 0} != base.as_json() | {"seconds": 0}:
            raise SystemExit(f"{master} found something else than the local search")
        rate = r.states / r.seconds
        rows.append(
            [f"Spark {master}", f"{r.seconds:.2f}", f"{rate:.0f}", f"{rate / base_rate:.2f}"]
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the fast configs only")
    parser.add_argument("--spark", action="store_true", help="also on Spark local[1], local[2]")
    parser.add_argument(
        "--config", action="append", choices=tuple(CONFIGS), help="only this config (repeatable)"
    )
    args = parser.parse_args(argv)
    names = tuple(args.config) if args.config else QUICK if args.quick else tuple(CONFIGS)
    print(f"bench_explore: {machine()}\n")
    rows = [run(name) for name in names]
    header = ["config", "states", "depth", "seconds", "states/s", "violation", "first cex s"]
    print(table([*header, "search"], rows))
    print()
    measured = QUICK if args.quick else MEMORY
    mem = [memory_per_state(n) for n in measured]
    print(
        table(
            ["config", "states", "peak bytes/state"],
            [[n, str(s), f"{b:,.0f}"] for n, (s, b) in zip(measured, mem, strict=True)],
        )
    )
    print()
    print(table(["branching a state", "ms", "continues alike"], branching(5 if args.quick else 30)))
    print()
    name = "acks=1" if args.quick else "same with leader epochs"
    print(f"workers ({name}; ratio: states/s against one process; a small search stays in one)")
    print(table(["workers", "seconds", "states/s", "ratio", "same result"], worker_rates(name)))
    if args.spark:
        print()
        name = "safe, 2 brokers"
        print(f"on Spark ({name}; ratio: states/s against the in-process search)")
        print(table(["where", "seconds", "states/s", "ratio"], spark_rates(name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
