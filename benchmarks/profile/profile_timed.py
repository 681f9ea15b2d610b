#!/usr/bin/env python
"""Profile the standard timed workload (the one bench_timed.py measures) with cProfile.

    python benchmarks/profile/profile_timed.py                 # seeds 0..4, whole simulate()
    python benchmarks/profile/profile_timed.py --scope loop    # only the event loop (run_until)
    python benchmarks/profile/profile_timed.py --pyinstrument  # also pyinstrument, if installed

Prints the top functions by own time (tottime) and by cumulative time, each with its share of
the profiled time. cProfile roughly doubles the run time and inflates the cost of small
functions, so read the shares as a ranking, and confirm a gain with bench_timed.py.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkalab.sim.engine import Simulation  # noqa: E402

sys.path.insert(0, str(BENCHMARKS))
from bench_timed import run_standard  # noqa: E402


def _short(path: str) -> str:
    for marker in ("/kafkalab/", "/lib/python"):
        i = path.find(marker)
        if i >= 0:
            return path[i + 1 :]
    return path


def top(stats: pstats.Stats, key: str, limit: int) -> str:
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((tt if key == "tottime" else ct, tt, ct, nc, f"{_short(file)}:{line}({name})"))
    rows.sort(reverse=True)
    out = [f"{'calls':>9} {'tottime':>8} {'tot%':>6} {'cumtime':>8} {'cum%':>6}  function"]
    for _, tt, ct, nc, where in rows[:limit]:
        out.append(f"{nc:>9} {tt:>8.3f} {tt / total:>6.1%} {ct:>8.3f} {ct / total:>6.1%}  {where}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--duration-ms", type=int, default=60000)
    parser.add_argument("--settle-ms", type=int, default=60000)
    parser.add_argument(
        "--scope",
        choices=("all", "loop"),
        default="all",
        help="profile whole simulate() calls or only the event loop",
    )
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--out", type=Path, help="also dump the raw cProfile stats here")
    parser.add_argument(
        "--pyinstrument",
        action="store_true",
        help="also print a pyinstrument call tree (if pyinstrument is installed)",
    )
    args = parser.parse_args(argv)

    prof = cProfile.Profile()
    original = Simulation.run_until
    if args.scope == "loop":

        def profiled_run_until(sim, time_ms, stop=None):  # type: ignore[no-untyped-def]
            prof.enable()
            try:
                original(sim, time_ms, stop)
            finally:
                prof.disable()

        Simulation.run_until = profiled_run_until  # type: ignore[method-assign]
    try:
        for seed in args.seeds:
            if args.scope == "all":
                prof.enable()
            run_standard(seed, args.duration_ms, args.settle_ms)
            if args.scope == "all":
                prof.disable()
    finally:
        Simulation.run_until = original  # type: ignore[method-assign]

    stats = pstats.Stats(prof, stream=io.StringIO())
    if args.out:
        stats.dump_stats(str(args.out))
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"cProfile, scope={args.scope}, seeds {args.seeds}, profiled time {total:.3f} s")
    print(f"\nTop {args.limit} by own time (tottime)")
    print(top(stats, "tottime", args.limit))
    print(f"\nTop {args.limit} by cumulative time")
    print(top(stats, "cumtime", args.limit))

    if args.pyinstrument:
        try:
            from pyinstrument import Profiler
        except ImportError:
            print("\npyinstrument is not installed; skipped")
            return 0
        profiler = Profiler(interval=0.0005)
        profiler.start()
        for seed in args.seeds:
            run_standard(seed, args.duration_ms, args.settle_ms)
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
