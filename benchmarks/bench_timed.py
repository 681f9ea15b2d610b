#!/usr/bin/env python
"""Throughput of the timed simulator on the standard workload.

The standard workload is what ``simulate()`` runs by default: 3 brokers, replication factor 3,
one produced record every 20 ms (``Workload()``), a random fault schedule (``random_faults``),
latency 1..5 ms, no message events in the trace (``trace_messages=False``), 60 s of workload and
60 s of settling.

For each seed the script measures:

* loop events: heap entries the Simulation popped and dispatched (message deliveries, timers and
  scheduled calls), from its own counters (``Simulation.dispatched``), checked against its
  sequence numbers; every timed pass must reach the same count;
* the wall time of the event loop (inside ``Cluster.run``) and of the whole ``simulate()`` call
  (set-up, loop, end-of-run report), best of ``--repeats``. Every repeat must give the same trace
  (SHA-256 of its canonical form, timed on its own after the run: what ``digest=True`` adds) and
  the same count;
* a bare ``heapq`` loop processing the same number of (time, seq, payload) entries with a trivial
  dispatch, starting from a heap of the same size: the floor any heap-driven loop in this Python
  pays. The ratio says what fraction of that speed the simulator reaches;
* peak memory of one run (tracemalloc) and of the process (ru_maxrss).

Run ``python benchmarks/bench_timed.py`` (about a minute) or ``--quick`` for a smoke test.
Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import platform
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmark the working tree, installed or not

from _table import core  # noqa: E402  (benchmarks/_table.py, next to this script)

from kafkalab.config import make_config  # noqa: E402
from kafkalab.sim import engine  # noqa: E402
from kafkalab.sim.cluster import Cluster  # noqa: E402
from kafkalab.sim.engine import Simulation  # noqa: E402
from kafkalab.sim.timed import Workload, random_faults, simulate  # noqa: E402

BROKERS = 3
REPLICATION_FACTOR = 3
KIND_NAMES = {engine._DELIVER: "deliver", engine._TIMER: "timer", engine._CALL: "call"}


# ---- probing the event loop from outside the engine -----------------------------------------


class LoopProbe:
    """While active, wraps ``Cluster.run`` (the facade, never compiled) to time the event loop
    it drives and to keep the Simulation, whose own counters say how many heap entries it
    dispatched, by kind (``Simulation.dispatched``). Nothing inside the engine is replaced, so
    the probe measures the compiled core (kafkalab/core_build.py) and the sources alike."""

    def __init__(self) -> None:
        self.loop_wall = 0.0
        self.enter: float | None = None
        self.exit: float | None = None
        self.heap_at_start: int | None = None
        self.sim: Simulation | None = None

    @property
    def kinds(self) -> dict[int, int]:
        assert self.sim is not None
        return {k: n for k, n in enumerate(self.sim.dispatched) if n}

    @property
    def dispatched(self) -> int:
        return sum(self.kinds.values())

    def __enter__(self) -> LoopProbe:
        self._original = original = Cluster.run
        probe = self

        def run(cluster: Cluster, *args: Any, **kwargs: Any) -> None:
            sim = cluster.sim
            probe.sim = sim
            if probe.heap_at_start is None:
                probe.heap_at_start = sim.pending()
            t0 = time.perf_counter()
            if probe.enter is None:
                probe.enter = t0
            try:
                original(cluster, *args, **kwargs)
            finally:
                t1 = time.perf_counter()
                probe.loop_wall += t1 - t0
                probe.exit = t1

        Cluster.run = run  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        Cluster.run = self._original  # type: ignore[method-assign]


def processed_entries(sim: Simulation) -> int:
    """Heap entries processed so far, from the engine's counters: every push and every trace
    record takes one sequence number, and what was pushed but not popped is still pending."""
    return sim._seq - len(sim.trace) - sim.pending()


# ---- the simulator run -----------------------------------------------------------------------


@dataclass
class Timing:
    loop_wall: float
    total_wall: float
    setup_wall: float
    report_wall: float
    digest_wall: float


@dataclass
class SeedResult:
    seed: int
    sim_seconds: float
    faults: int
    produced: int
    acked: int
    safe: bool
    heap_at_start: int
    loop_events: int
    loop_events_by_kind: dict[str, int]
    trace_events: int
    trace_digest: str
    loop_wall: float = 0.0
    total_wall: float = 0.0
    setup_wall: float = 0.0
    report_wall: float = 0.0
    digest_wall: float = 0.0
    instrumented_loop_wall: float = 0.0
    bare_wall: float = 0.0
    repeats: list[dict[str, float]] = field(default_factory=list)

    @property
    def events_per_s(self) -> float:
        return self.loop_events / self.loop_wall

    @property
    def trace_events_per_s(self) -> float:
        return self.trace_events / self.loop_wall

    @property
    def bare_events_per_s(self) -> float:
        return self.loop_events / self.bare_wall

    @property
    def ratio(self) -> float:
        return self.events_per_s / self.bare_events_per_s

    @property
    def sim_s_per_loop_s(self) -> float:
        return self.sim_seconds / self.loop_wall

    @property
    def sim_s_per_total_s(self) -> float:
        return self.sim_seconds / self.total_wall


def run_standard(seed: int, duration_ms: int, settle_ms: int) -> tuple[Any, Any, LoopProbe, float]:
    """One standard-workload run; returns (RunResult, Cluster, probe, simulate() wall seconds)."""
    cfg = make_config({"replication_factor": REPLICATION_FACTOR})
    faults = random_faults(seed, BROKERS, duration_ms)
    with LoopProbe() as probe:
        t0 = time.perf_counter()
        result, cluster = simulate(
            cfg,
            seed=seed,
            brokers=BROKERS,
            duration_ms=duration_ms,
            settle_ms=settle_ms,
            workload=Workload(),
            faults=faults,
            trace_messages=False,
            keep_cluster=True,
        )
        total = time.perf_counter() - t0
    probe.total_start = t0  # type: ignore[attr-defined]
    return result, cluster, probe, total


def measure_seed(seed: int, duration_ms: int, settle_ms: int, repeats: int) -> SeedResult:
    # Counting pass (also a warm-up): the authoritative loop-event count.
    result, cluster, probe, _ = run_standard(seed, duration_ms, settle_ms)
    assert probe.sim is not None and probe.heap_at_start is not None
    counted = probe.dispatched
    derived = processed_entries(probe.sim)
    if counted != derived:
        raise SystemExit(
            f"seed {seed}: counted {counted} dispatched entries but the engine's "
            f"counters give {derived}; the count is not trustworthy"
        )
    sr = SeedResult(
        seed=seed,
        sim_seconds=(duration_ms + settle_ms) / 1000,
        faults=result.faults,
        produced=result.produced,
        acked=result.acked,
        safe=result.safe,
        heap_at_start=probe.heap_at_start,
        loop_events=counted,
        loop_events_by_kind={KIND_NAMES[k]: v for k, v in sorted(probe.kinds.items())},
        trace_events=result.events,
        trace_digest=cluster.trace.digest(),
        instrumented_loop_wall=probe.loop_wall,
    )
    delays = _delays(seed)
    best: Timing | None = None
    best_bare = float("inf")
    for _ in range(repeats):
        gc.collect()
        result, cluster, probe, total = run_standard(seed, duration_ms, settle_ms)
        assert probe.sim is not None and probe.enter is not None and probe.exit is not None
        # Checked after the clock stopped: the same trace, byte for byte, and the same count.
        d0 = time.perf_counter()
        digest = cluster.trace.digest()
        digest_wall = time.perf_counter() - d0
        if processed_entries(probe.sim) != counted or digest != sr.trace_digest:
            raise SystemExit(f"seed {seed}: a repeat produced a different run; not deterministic")
        start = probe.total_start  # type: ignore[attr-defined]
        t = Timing(
            loop_wall=probe.loop_wall,
            total_wall=total,
            setup_wall=probe.enter - start,
            report_wall=start + total - probe.exit,
            digest_wall=digest_wall,
        )
        del result, cluster, probe
        gc.collect()
        bare = bare_heap_loop(counted, sr.heap_at_start, delays)
        sr.repeats.append({**asdict(t), "bare_wall": bare})
        best_bare = min(best_bare, bare)
        best = (
            t
            if best is None
            else Timing(
                *(min(a, b) for a, b in zip(asdict(best).values(), asdict(t).values(), strict=True))
            )
        )
    assert best is not None
    sr.loop_wall, sr.total_wall = best.loop_wall, best.total_wall
    sr.setup_wall, sr.report_wall = best.setup_wall, best.report_wall
    sr.digest_wall = best.digest_wall
    sr.bare_wall = best_bare
    return sr


# ---- the bare heapq baseline ----------------------------------------------------------------


def _delays(seed: int) -> list[int]:
    rng = random.Random(f"{seed}:bench-delays")
    return [rng.randint(1, 50) for _ in range(1024)]


def _trivial_dispatch(payload: int) -> int:
    return payload


def bare_heap_loop(n_events: int, initial: int, delays: list[int]) -> float:
    """Pop and dispatch exactly ``n_events`` (time, seq, payload) entries; each dispatch
    schedules a successor until ``n_events`` entries have been pushed. The heap starts with
    ``initial`` entries, like the simulator's pre-scheduled workload. Returns the loop's wall
    seconds (the pre-fill is not timed, as the simulator's set-up is not in its loop time)."""
    initial = max(1, min(initial, n_events))
    heap = [(i * 20, i, delays[i & 1023]) for i in range(initial)]
    heapq.heapify(heap)
    seq = initial
    to_push = n_events - initial
    push, pop, dispatch = heapq.heappush, heapq.heappop, _trivial_dispatch
    processed = 0
    t0 = time.perf_counter()
    while heap:
        entry = pop(heap)
        now = entry[0]
        delay = dispatch(entry[2])
        processed += 1
        if to_push:
            to_push -= 1
            seq += 1
            push(heap, (now + delay, seq, delays[seq & 1023]))
    elapsed = time.perf_counter() - t0
    assert processed == n_events
    return elapsed


# ---- memory ------------------------------------------------------------------------------


def measure_memory(seed: int, duration_ms: int, settle_ms: int) -> dict[str, float]:
    gc.collect()
    tracemalloc.start()
    result, cluster, _probe, _ = run_standard(seed, duration_ms, settle_ms)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result, cluster
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_mib = maxrss / (1024 * 1024) if sys.platform == "darwin" else maxrss / 1024
    return {
        "seed": seed,
        "tracemalloc_peak_mib": peak / 2**20,
        "tracemalloc_end_mib": current / 2**20,
        "process_maxrss_mib": rss_mib,
    }


def source_revision() -> str:
    """The checkout's commit, marked when the working tree has local changes."""
    try:

        def git(*a: str) -> str:
            return subprocess.run(
                ["git", "-C", str(ROOT), *a], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()

        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "kafkalab")
        return commit + (" + local changes to kafkalab/" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ---- output ------------------------------------------------------------------------------


def _fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(
        [line, sep, *body[:-1], sep, body[-1]] if len(body) > 1 else [line, sep, *body]
    )


def _normalised(seeds: list[dict[str, Any]]) -> float:
    sim = sum(r["sim_seconds"] for r in seeds)
    loop = sum(r["loop_wall"] for r in seeds)
    events = sum(r["loop_events"] for r in seeds)
    bare = sum(r["bare_wall"] for r in seeds)
    return normalised_speed(sim / loop, events / bare)


def compare_with_baseline(args: argparse.Namespace, results: list[SeedResult]) -> str:
    """Run this benchmark at revision ``args.baseline`` (same options) in a temporary git
    worktree, right after this tree's run, and compare the normalised speeds."""
    import tempfile

    options = ["--seeds", *map(str, args.seeds), "--repeats", str(args.repeats)]
    options += ["--duration-ms", str(args.duration_ms), "--settle-ms", str(args.settle_ms)]
    with tempfile.TemporaryDirectory(prefix="kafkalab-baseline-") as tmp:
        tree, out = Path(tmp) / "tree", Path(tmp) / "baseline.json"
        add = ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree)]
        try:
            subprocess.run([*add, args.baseline], check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as err:
            raise SystemExit(f"--baseline {args.baseline}: {err.stderr.strip()}") from None
        try:
            script = tree / "benchmarks" / "bench_timed.py"
            cmd = [sys.executable, str(script), *options, "--json", str(out)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            baseline = json.loads(out.read_text())["seeds"]
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                check=False,
                capture_output=True,
            )
    before = _normalised(baseline)
    now = _normalised([asdict(r) for r in results])
    return (
        f"baseline {args.baseline}, measured right after: normalised speed {before:,.0f}; "
        f"this tree {now:,.0f}; ratio {now / before:.2f}x"
    )


def normalised_speed(sim_s_per_wall_s: float, bare_events_per_s: float) -> float:
    """Simulated seconds per wall second, divided by the bare loop's events per second (x 1e6):
    a figure that moves less with the machine and its load than either of the two."""
    return sim_s_per_wall_s / bare_events_per_s * 1e6


def report(results: list[SeedResult], memory: dict[str, float], args: argparse.Namespace) -> str:
    tot_events = sum(r.loop_events for r in results)
    tot_trace = sum(r.trace_events for r in results)
    tot_loop = sum(r.loop_wall for r in results)
    tot_bare = sum(r.bare_wall for r in results)
    tot_total = sum(r.total_wall for r in results)
    tot_sim = sum(r.sim_seconds for r in results)
    tot_setup = sum(r.setup_wall for r in results)
    tot_report = sum(r.report_wall for r in results)
    tot_digest = sum(r.digest_wall for r in results)
    eps, bare_eps = tot_events / tot_loop, tot_events / tot_bare

    loop_rows = [
        [
            str(r.seed),
            f"{r.sim_seconds:g}",
            str(r.faults),
            _fmt_int(r.loop_events),
            _fmt_int(r.trace_events),
            f"{r.loop_wall:.3f}",
            _fmt_int(r.events_per_s),
            _fmt_int(r.trace_events_per_s),
            _fmt_int(r.bare_events_per_s),
            f"{r.ratio:.3f}",
            f"{r.sim_s_per_loop_s:,.0f}",
        ]
        for r in results
    ]
    loop_rows.append(
        [
            f"all {len(results)}",
            f"{tot_sim:g}",
            str(sum(r.faults for r in results)),
            _fmt_int(tot_events),
            _fmt_int(tot_trace),
            f"{tot_loop:.3f}",
            _fmt_int(eps),
            _fmt_int(tot_trace / tot_loop),
            _fmt_int(bare_eps),
            f"{eps / bare_eps:.3f}",
            f"{tot_sim / tot_loop:,.0f}",
        ]
    )
    run_rows = [
        [
            str(r.seed),
            f"{r.setup_wall:.3f}",
            f"{r.loop_wall:.3f}",
            f"{r.report_wall:.3f}",
            f"{r.total_wall:.3f}",
            f"{r.digest_wall:.3f}",
            _fmt_int(r.loop_events / r.total_wall),
            f"{r.sim_s_per_total_s:,.0f}",
            str(r.acked),
            "yes" if r.safe else "NO",
        ]
        for r in results
    ]
    run_rows.append(
        [
            f"all {len(results)}",
            f"{tot_setup:.3f}",
            f"{tot_loop:.3f}",
            f"{tot_report:.3f}",
            f"{tot_total:.3f}",
            f"{tot_digest:.3f}",
            _fmt_int(tot_events / tot_total),
            f"{tot_sim / tot_total:,.0f}",
            str(sum(r.acked for r in results)),
            "yes" if all(r.safe for r in results) else "NO",
        ]
    )
    kinds: dict[str, int] = {}
    for r in results:
        for k, v in r.loop_events_by_kind.items():
            kinds[k] = kinds.get(k, 0) + v
    kind_text = ", ".join(f"{k} {v:,} ({v / tot_events:.0%})" for k, v in kinds.items())
    heap_text = ", ".join(str(r.heap_at_start) for r in results)

    out = [
        f"kafkalab timed benchmark: {BROKERS} brokers, RF {REPLICATION_FACTOR}, Workload() "
        f"(1 record / 20 ms), random_faults, trace_messages=False",
        f"duration {args.duration_ms} ms + settle {args.settle_ms} ms per seed, "
        f"best of {args.repeats} repeat(s); Python {platform.python_version()} "
        f"({platform.python_implementation()}) on {platform.machine()} {platform.system()}; "
        f"source {source_revision()}; {core()}",
        "",
        "Event loop (wall = time inside Cluster.run)",
        _table(
            [
                "seed",
                "sim s",
                "faults",
                "loop events",
                "trace events",
                "wall s",
                "events/s",
                "trace ev/s",
                "bare ev/s",
                "ratio",
                "sim s/wall s",
            ],
            loop_rows,
        ),
        "",
        f"normalised speed: (sim s/wall s) / (bare ev/s) x 1e6 = "
        f"{normalised_speed(tot_sim / tot_loop, bare_eps):,.0f} "
        f"(the simulator's speed in units of this machine's bare heapq loop; compare a revision "
        f"with --baseline REV)",
        f"loop events by kind: {kind_text}",
        f"heap size when the loop starts: {heap_text}",
        "",
        "Whole simulate() call (set-up before the loop, loop, end-of-run report after it;",
        "+digest s: what simulate(digest=True) adds, the SHA-256 of the canonical trace)",
        _table(
            [
                "seed",
                "setup s",
                "loop s",
                "report s",
                "total s",
                "+digest s",
                "events/s",
                "sim s/wall s",
                "acked",
                "safe",
            ],
            run_rows,
        ),
        "",
        f"peak memory, one run (seed {memory['seed']}): tracemalloc peak "
        f"{memory['tracemalloc_peak_mib']:.1f} MiB (still held at the end: "
        f"{memory['tracemalloc_end_mib']:.1f} MiB); process max RSS "
        f"{memory['process_maxrss_mib']:.1f} MiB",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small run for CI smoke tests (2 seeds, 10 s + 5 s, 1 repeat)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", help="seeds (default 0 1 2 3 4)")
    parser.add_argument("--repeats", type=int, help="timed repeats per seed, best kept (default 3)")
    parser.add_argument("--duration-ms", type=int, help="workload duration (default 60000)")
    parser.add_argument("--settle-ms", type=int, help="settling time after it (default 60000)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON")
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also run this script as it was at git revision REV (a temporary worktree), with the "
        "same options, and print both normalised speeds and their ratio",
    )
    args = parser.parse_args(argv)
    defaults = ([0, 1], 1, 10000, 5000) if args.quick else ([0, 1, 2, 3, 4], 3, 60000, 60000)
    args.seeds = args.seeds or defaults[0]
    args.repeats = args.repeats or defaults[1]
    args.duration_ms = args.duration_ms or defaults[2]
    args.settle_ms = args.settle_ms or defaults[3]
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")

    results = []
    for seed in args.seeds:
        results.append(measure_seed(seed, args.duration_ms, args.settle_ms, args.repeats))
        print(f"seed {seed}: done", file=sys.stderr, flush=True)
    memory = measure_memory(args.seeds[0], args.duration_ms, args.settle_ms)
    print(report(results, memory, args))
    if args.baseline:
        print(compare_with_baseline(args, results))
    if args.json:
        payload = {
            "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "python": platform.python_version(),
            "source": source_revision(),
            "seeds": [
                {
                    **asdict(r),
                    "events_per_s": r.events_per_s,
                    "trace_events_per_s": r.trace_events_per_s,
                    "bare_events_per_s": r.bare_events_per_s,
                    "ratio": r.ratio,
                    "sim_s_per_loop_s": r.sim_s_per_loop_s,
                    "sim_s_per_total_s": r.sim_s_per_total_s,
                }
                for r in results
            ],
            "memory": memory,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
