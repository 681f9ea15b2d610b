#!/usr/bin/env python
"""The trace digest of every catalog scenario (and each of its variants) and of each benchmark seed.

A refactoring of the simulator must leave every one of them unchanged; a fidelity fix changes some
and says which. ``tests/test_trace_digests.py`` compares them with the recorded
``tests/data/trace_digests.json``.

    .venv/bin/python tools/trace_digests.py            # print the table
    .venv/bin/python tools/trace_digests.py --write    # record them as the new reference
    .venv/bin/python tools/trace_digests.py --diff     # only what differs from the reference
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkalab import scenarios  # noqa: E402
from kafkalab.config import make_config  # noqa: E402
from kafkalab.sim.timed import Workload, random_faults, simulate  # noqa: E402

REFERENCE = ROOT / "tests" / "data" / "trace_digests.json"
BENCH_SEEDS = (0, 1, 2, 3, 4)  # benchmarks/bench_timed.py's default seeds
BENCH_MS = 60_000  # its workload and its settle time


def scenario_digests() -> dict[str, str]:
    """``name`` for the scenario as written, ``name [variant]`` for each variant."""
    out: dict[str, str] = {}
    for name, scenario in sorted(scenarios.catalog().items()):
        out[name] = scenarios.run(scenario).cluster.trace.digest()
        for variant in scenario.variants:
            label = ", ".join(f"{k}={v}" for k, v in sorted(variant.settings.items()))
            result = scenarios.run(scenario, variant=variant)
            out[f"{name} [{label}]"] = result.cluster.trace.digest()
    return out


def bench_digests() -> dict[str, str]:
    """The standard workload of ``bench_timed.py`` for each of its seeds."""
    out: dict[str, str] = {}
    cfg = make_config({"replication_factor": 3})
    for seed in BENCH_SEEDS:
        result = simulate(
            cfg,
            seed=seed,
            brokers=3,
            duration_ms=BENCH_MS,
            settle_ms=BENCH_MS,
            workload=Workload(),
            faults=random_faults(seed, 3, BENCH_MS),
            trace_messages=False,
            digest=True,
        )
        out[f"bench seed {seed}"] = result.trace_digest
    return out


def mode_digests() -> dict[str, str]:
    """Shorter timed runs in each controller mode with message events traced."""
    out: dict[str, str] = {}
    for mode in ("dedicated", "zk", "kraft"):
        for seed in (0, 1):
            result = simulate(
                make_config({"replication_factor": 3, "controller_mode": mode}),
                seed=seed,
                brokers=3,
                duration_ms=20_000,
                settle_ms=20_000,
                faults=random_faults(seed, 3, 20_000),
                trace_messages=True,
                digest=True,
            )
            out[f"timed {mode} seed {seed}"] = result.trace_digest
    return out


def all_digests() -> dict[str, str]:
    return {**scenario_digests(), **bench_digests(), **mode_digests()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="record the digests as the reference")
    parser.add_argument("--diff", action="store_true", help="print only what differs")
    args = parser.parse_args(argv)
    now = all_digests()
    if args.write:
        REFERENCE.parent.mkdir(parents=True, exist_ok=True)
        REFERENCE.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} digests written to {REFERENCE.relative_to(ROOT)}")
        return 0
    ref = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {}
    changed = 0
    for key in sorted(set(now) | set(ref)):
        old, new = ref.get(key, "-"), now.get(key, "-")
        if old != new:
            changed += 1
        if old != new or not args.diff:
            mark = "  " if old == new else "* "
            print(f"{mark}{key}: {new[:16]}" + ("" if old == new else f" (was {old[:16]})"))
    print(f"{changed} of {len(now)} digests differ from {REFERENCE.relative_to(ROOT)}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
