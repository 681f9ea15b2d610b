"""Generate a campaign on Spark: each unit (a block of seeds of one config) is one Spark task.

The tasks run :func:`kafkalab.campaign.run_unit` and hand back Parquet bytes; the driver writes
each unit's files as it arrives (temporary name, then rename), so the output folder only needs
to be reachable from the driver and a stopped run resumes from the units it had written. Units
are submitted as small concurrent jobs, so results (and the progress bar) arrive one unit at a
time rather than at the end.

The same code runs in local mode (the default), on a standalone cluster or on YARN, and under
``spark-submit``::

    kafkalab campaign run small --out data/small                    # local[*]
    kafkalab campaign run large --out data/large --master spark://host:7077
    PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --master local[2] \\
        kafkalab/spark/generate.py small --out data/small

On a cluster every executor needs kafkalab installed (``pip install kafkalab`` in the Python
that PYSPARK_PYTHON names).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial
from pathlib import Path
from typing import Any

from kafkalab.campaign import CampaignSpec, Summary, Unit, UnitOutput, generate, run_unit
from kafkalab.campaign.dataset import MapUnits, check_out
from kafkalab.errors import KafkalabError

__all__ = ["run_campaign", "spark_map_units"]


def spark_map_units(spark: Any, *, concurrent_jobs: int | None = None) -> MapUnits:
    """A ``map_units`` for :func:`kafkalab.campaign.generate` that runs each unit as one Spark
    task, keeping ``concurrent_jobs`` (default: twice the default parallelism) in flight."""
    sc = spark.sparkContext
    width = concurrent_jobs or 2 * sc.defaultParallelism

    def run_one(spec: CampaignSpec, unit: Unit) -> UnitOutput:
        return sc.parallelize([unit], 1).map(partial(run_unit, spec)).collect()[0]

    def map_units(spec: CampaignSpec, units: Sequence[Unit]) -> Iterator[UnitOutput]:
        pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="kafkalab-unit")
        todo = list(units)
        running: set[Future[UnitOutput]] = set()
        try:
            while todo or running:
                while todo and len(running) < width:
                    running.add(pool.submit(run_one, spec, todo.pop(0)))
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: f.result().unit.index):
                    yield future.result()
        finally:
            if running:  # stopped early (Ctrl-C): tasks torn down mid-run are no news
                sc.setLogLevel("OFF")
                sc.cancelAllJobs()
            pool.shutdown(wait=True, cancel_futures=True)

    return map_units


def run_campaign(
    spec: CampaignSpec,
    out: str | Path,
    *,
    master: str | None = "local[*]",
    overwrite: bool = False,
    progress: bool = True,
    spark: Any = None,
) -> Summary:
    """Generate (or finish generating) ``spec`` into ``out`` on Spark; return what was written.

    ``spark`` reuses a session; otherwise one is started on ``master`` (None: what
    ``spark-submit`` chose)."""
    check_out(spec, out, overwrite=overwrite)  # refuse a wrong --out before Spark starts
    if spark is None:
        from kafkalab.spark.session import spark_session

        spark = spark_session(master, app_name=f"kafkalab campaign {spec.name}")
    bar = _ProgressBar(enabled=progress, total=spec.trials, name=spec.name)
    try:
        return generate(
            spec,
            out,
            overwrite=overwrite,
            map_units=spark_map_units(spark),
            on_start=bar.start,
            on_unit=bar.update,
        )
    finally:
        bar.close()


class _ProgressBar:
    """A tqdm bar of trials on stderr (nothing when tqdm is missing or it is turned off)."""

    def __init__(self, *, enabled: bool, total: int, name: str) -> None:
        self.enabled, self.total, self.name = enabled, total, name
        self.bar: Any = None

    def start(self, pending: int, done: int) -> None:
        if not self.enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(
            total=self.total, initial=done, desc=self.name, unit="trial", file=sys.stderr
        )

    def update(self, output: UnitOutput) -> None:
        if self.bar is not None:
            self.bar.update(output.trials)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit kafkalab/spark/generate.py SPEC --out PATH [--overwrite]``."""
    from kafkalab.campaign import load_spec

    parser = argparse.ArgumentParser(description="Generate a kafkalab campaign on Spark.")
    parser.add_argument("spec", help="a campaign spec file or a shipped spec name")
    parser.add_argument("--out", required=True, help="the output folder")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        summary = run_campaign(
            load_spec(args.spec),
            args.out,
            master=None,
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
    except KafkalabError as err:
        print(f"kafkalab: error: {err}", file=sys.stderr)
        return 2
    print(summary)
    return 0


if __name__ == "__main__":  # pragma: no cover - run by spark-submit
    sys.exit(main())
