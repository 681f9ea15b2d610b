#!/usr/bin/env python
"""Campaigns: how fast they are generated, and how fast their questions are answered.

Generation. One campaign spec (default: the shipped ``small``) is generated three times into
fresh folders: in this process without Spark (the baseline: one core, no Spark overhead), then
on Spark ``local[1]`` and ``local[2]``. For each: trials/s and event rows/s, wall time from the
first unit to the manifest (the session start and a warm-up job are timed apart), and the ratios
local[2]/local[1] (how generation scales with cores) and Spark/plain. All three must write the
same bytes, or the script stops.

Queries. The five analysis questions (:mod:`kafkalab.spark.analysis`) on one dataset (default:
``datasets/large`` when ``make datasets`` built it, else ``datasets/small``), on Spark local[2]
and in DuckDB (:mod:`kafkalab.spark.reference`) over the same Parquet files: the first run and
the best of ``--repeats``, and the ratio Spark/DuckDB. Both must give the same rows.

    python benchmarks/bench_campaign.py             # about 1-2 minutes on 2 cores
    python benchmarks/bench_campaign.py --tiny      # smoke test: the tiny spec, 1 repeat
    python benchmarks/bench_campaign.py --spec large --data datasets/large --repeats 3

Trials per core (``--per-core``): the first ``--seeds`` seeds of every config of the census
spec, run one after another in this process (one core, no Spark, the trials row only), and with
``--baseline REV`` the same trials at git revision REV in a temporary worktree, its core
compiled there first when it has one (as ``make install`` does), each trial built as that
revision builds it. Prints trials/s per core for both and their ratio.

    python benchmarks/bench_campaign.py --per-core --seeds 10 --baseline 9e8ec09

Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmark the working tree, installed or not

from kafkalab.campaign import CampaignSpec, Summary, generate, load_spec, read_manifest  # noqa: E402
from kafkalab.spark import analysis, reference  # noqa: E402
from kafkalab.spark.generate import run_campaign  # noqa: E402
from kafkalab.spark.session import spark_session  # noqa: E402

QUERIES: dict[str, Callable[[Any], Any]] = {
    "loss_probability": lambda c: analysis.loss_probability(c.trials),
    "availability_frontier": lambda c: analysis.availability_frontier(c.trials),
    "latency_by_acks": lambda c: analysis.latency_by_acks(c.events, c.trials),
    "isr_flapping": lambda c: analysis.isr_flapping(c.events, c.trials),
    "leader_epoch_anomalies": lambda c: analysis.leader_epoch_anomalies(c.trials),
}

EVENT_QUERIES = frozenset({"latency_by_acks", "isr_flapping"})  # they read the events table


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()


# ---- generation ------------------------------------------------------------------------------


def _start(master: str) -> tuple[Any, float]:
    t0 = time.perf_counter()
    spark = spark_session(master, app_name=f"bench {master}", driver_memory="4g")
    spark.sparkContext.parallelize(range(8), 8).map(lambda x: x).count()  # start the workers
    return spark, time.perf_counter() - t0


def measure_generation(spec: CampaignSpec, scratch: Path) -> list[dict[str, Any]]:
    results = []
    out = scratch / "plain"
    t0 = time.perf_counter()
    summary: Summary = generate(spec, out)
    results.append(_gen_row("plain Python", summary, time.perf_counter() - t0, 0.0, out))
    print("generation: plain done", file=sys.stderr, flush=True)
    for master in ("local[1]", "local[2]"):
        spark, started = _start(master)
        out = scratch / master.replace("[", "-").rstrip("]")
        t0 = time.perf_counter()
        summary = run_campaign(spec, out, spark=spark, progress=False)
        results.append(_gen_row(f"Spark {master}", summary, time.perf_counter() - t0, started, out))
        spark.stop()
        print(f"generation: {master} done", file=sys.stderr, flush=True)
    digests = {r["digest"] for r in results}
    if len(digests) != 1:
        raise SystemExit("the engines wrote different files: generation is not deterministic")
    return results


def _gen_row(name: str, s: Summary, wall: float, started: float, out: Path) -> dict[str, Any]:
    return {
        "engine": name,
        "trials": s.trials,
        "events": s.events,
        "wall": wall,
        "start": started,
        "trials_per_s": s.trials / wall,
        "events_per_s": s.events / wall,
        "digest": _digest(out),
    }


# ---- trials per core -------------------------------------------------------------------------

# Runs in the baseline's worktree: the same trials, built as that revision builds them (before
# the tables option a trial always built its events rows too).
_PER_CORE = """
import inspect, json, sys, time
from kafkalab.campaign import draw_trial, parse_spec, run_trial
specs, seeds = [parse_spec(d) for d in json.loads(sys.argv[1])], int(sys.argv[2])
alone = "events" in inspect.signature(run_trial).parameters
trials = [draw_trial(spec, 0, spec.seed_start + i) for spec in specs for i in range(seeds)]
t0 = time.perf_counter()
for trial in trials:
    run_trial(trial, events=False) if alone else run_trial(trial)
print(json.dumps({"trials": len(trials), "wall": time.perf_counter() - t0}))
"""


def _spec_mapping(spec: CampaignSpec) -> dict[str, Any]:
    """The spec without its configs, as a mapping any revision's parse_spec reads (no tables
    key: before the option, every campaign wrote both tables)."""
    d = spec.as_dict()
    for key in ("varied", "tables", "configs"):
        d.pop(key, None)
    return d


def _per_core_run(python_path: Path, specs: list[dict[str, Any]], seeds: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(python_path)}
    cmd = [sys.executable, "-c", _PER_CORE, json.dumps(specs), str(seeds)]
    done = subprocess.run(cmd, cwd=python_path, env=env, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure_per_core(spec: CampaignSpec, seeds: int, baseline: str | None) -> str:
    """Trials/s on one core for each config's first ``seeds`` seeds, here and at ``baseline``."""
    rows = []
    for config_id in range(len(spec.configs)):
        one = _spec_mapping(spec)
        one["configs"] = {"base": dict(spec.configs[config_id])}
        rows.append(one)
    total = {"here": [0, 0.0], "baseline": [0, 0.0]}

    def run(where: str, path: Path) -> None:
        got = _per_core_run(path, rows, seeds)
        total[where] = [got["trials"], got["wall"]]

    run("here", ROOT)
    lines = [
        f"Trials per core: campaign {spec.name!r}, the first {seeds} seeds of each of its "
        f"{len(spec.configs)} configs, one process, no Spark",
    ]
    here = total["here"][0] / total["here"][1]
    lines.append(
        f"  this tree: {total['here'][0]} trials in {total['here'][1]:.1f} s: "
        f"{here:.1f} trials/s per core"
    )
    if baseline:
        with tempfile.TemporaryDirectory(prefix="kafkalab-baseline-") as tmp:
            tree = Path(tmp) / "tree"
            add = ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree)]
            try:
                subprocess.run([*add, baseline], check=True, capture_output=True, text=True)
            except subprocess.CalledProcessError as err:
                raise SystemExit(f"--baseline {baseline}: {err.stderr.strip()}") from None
            try:
                compiled = (tree / "kafkalab" / "core_build.py").is_file()
                if compiled:
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    build = [sys.executable, "-m", "kafkalab.core_build"]
                    subprocess.run(build, cwd=tree, env=env, check=True, capture_output=True)
                run("baseline", tree)
            finally:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                    capture_output=True,
                )
        before = total["baseline"][0] / total["baseline"][1]
        core = "its core compiled" if compiled else "no compiled core then"
        lines.append(f"  baseline {baseline} ({core}): {before:.1f} trials/s per core")
        lines.append(f"  ratio: {here / before:.2f}x")
    return "\n".join(lines)


# ---- queries ---------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """(first run s, best of the ``repeats`` after it, or the first when none, result)."""
    t0 = time.perf_counter()
    result = fn()
    first = time.perf_counter() - t0
    best = first if repeats == 0 else math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return first, best, result


def measure_queries(data: Path, repeats: int) -> list[dict[str, Any]]:
    spark, _ = _start("local[2]")
    campaign = analysis.read_campaign(spark, data)
    con = reference.connect(data)
    rows = []
    for name, query in QUERIES.items():
        if campaign.events is None and name in EVENT_QUERIES:
            continue  # a campaign of the trials table alone (census)
        s_first, s_best, s_rows = _timed(lambda q=query: q(campaign).collect(), repeats)
        d_first, d_best, d_rows = _timed(lambda n=name: reference.answer(con, n), repeats)
        if len(s_rows) != len(d_rows):
            raise SystemExit(f"{name}: Spark and DuckDB disagree on the number of rows")
        rows.append(
            {
                "query": name,
                "rows": len(s_rows),
                "spark_first": s_first,
                "spark_best": s_best,
                "duckdb_first": d_first,
                "duckdb_best": d_best,
            }
        )
        print(f"queries: {name} done", file=sys.stderr, flush=True)
    spark.stop()
    return rows


# ---- report ----------------------------------------------------------------------------------


def report(
    spec: CampaignSpec,
    gen: list[dict[str, Any]],
    data: Path,
    queries: list[dict[str, Any]],
    manifest_rows: dict[str, int],
    repeats: int,
) -> str:
    plain = gen[0]
    by_engine = {r["engine"]: r for r in gen}
    one, two = by_engine["Spark local[1]"], by_engine["Spark local[2]"]
    gen_rows = [
        [
            r["engine"],
            f"{r['trials']:,}",
            f"{r['events']:,}",
            f"{r['start']:.1f}" if r["start"] else "-",
            f"{r['wall']:.1f}",
            f"{r['trials_per_s']:.1f}",
            f"{r['events_per_s']:,.0f}",
            f"{r['trials_per_s'] / plain['trials_per_s']:.2f}",
        ]
        for r in gen
    ]
    q_rows = [
        [
            r["query"],
            str(r["rows"]),
            f"{r['spark_first']:.2f}",
            f"{r['spark_best']:.2f}",
            f"{r['duckdb_first']:.3f}",
            f"{r['duckdb_best']:.3f}",
            f"{r['spark_best'] / r['duckdb_best']:.1f}",
        ]
        for r in queries
    ]
    return "\n".join(
        [
            f"kafkalab campaign benchmark; Python {platform.python_version()} on "
            f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
            "",
            f"Generation of campaign {spec.name!r}: {spec.trials} trials of "
            f"{spec.duration_ms} + {spec.settle_ms} ms, {len(spec.units())} parts "
            "(same bytes from every engine)",
            _table(
                [
                    "engine",
                    "trials",
                    "events",
                    "start s",
                    "wall s",
                    "trials/s",
                    "events/s",
                    "vs plain",
                ],
                gen_rows,
            ),
            f"scaling local[2] / local[1]: {two['trials_per_s'] / one['trials_per_s']:.2f}x "
            "(2.00 would be perfect)",
            "",
            f"Queries on {data} ({manifest_rows['trials']:,} trials, "
            f"{manifest_rows.get('events', 0):,} event rows); Spark local[2] against DuckDB, "
            f"seconds, best of {repeats} after the first run",
            _table(
                [
                    "query",
                    "rows",
                    "spark 1st",
                    "spark best",
                    "duckdb 1st",
                    "duckdb best",
                    "spark/duckdb",
                ],
                q_rows,
            ),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="smoke test: tiny spec, 1 repeat")
    parser.add_argument("--spec", help="campaign spec to generate (default small; tiny: tiny)")
    parser.add_argument("--data", type=Path, help="dataset to query (default: large or small)")
    parser.add_argument("--repeats", type=int, help="timed query repeats after the first")
    parser.add_argument("--per-core", action="store_true", help="only: trials/s per core")
    parser.add_argument("--seeds", type=int, default=10, help="--per-core: seeds per config")
    parser.add_argument("--baseline", metavar="REV", help="--per-core: also at git revision REV")
    args = parser.parse_args(argv)
    if args.per_core:
        if args.seeds < 1:
            parser.error(f"--seeds {args.seeds} is not allowed: use a whole number >= 1")
        print(measure_per_core(load_spec(args.spec or "census"), args.seeds, args.baseline))
        return 0
    spec = load_spec(args.spec or ("tiny" if args.tiny else "small"))
    large = ROOT / "datasets" / "large"
    default_data = large if (large / "_campaign.json").is_file() else ROOT / "datasets" / "small"
    data = args.data or (ROOT / "datasets" / "small" if args.tiny else default_data)
    repeats = args.repeats if args.repeats is not None else (1 if args.tiny else 3)
    manifest = read_manifest(data)
    if manifest is None or not manifest.get("complete"):
        parser.error(f"--data {data} holds no complete campaign")
    scratch = Path(tempfile.mkdtemp(prefix="kafkalab-bench-"))
    try:
        gen = measure_generation(spec, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    queries = measure_queries(data, repeats)
    print(report(spec, gen, data, queries, manifest["rows"], repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
