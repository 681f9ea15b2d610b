"""Exploration on Spark: each depth's frontier partitioned by state digest across tasks.

The driver keeps the set of states seen and the order of the search; the tasks only expand
states (rebuild each from its schedule, try every enabled step, digest the results), which is
where the time goes. Children come back with their schedules' choices, and the driver sorts them
as the local search does, so both return the same result.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

from kafkalab.explore import ExploreResult, explore

__all__ = ["explore_on_spark"]


def explore_on_spark(
    settings: Mapping[str, Any] | None = None,
    *,
    master: str = "local[*]",
    partitions: int | None = None,
    spark: Any = None,
    **bounds: Any,
) -> ExploreResult:
    """:func:`kafkalab.explore.explore` with each depth expanded on Spark (``master``, or the
    session ``spark``); ``partitions``: tasks per depth (default: twice the cores)."""
    from kafkalab.spark.session import spark_session

    own = spark is None
    session = spark_session(master, app_name="kafkalab explore") if own else spark
    try:
        sc = session.sparkContext
        slices = partitions or 2 * sc.defaultParallelism

        def expand(frontier: list[Any], job: Any) -> list[Any]:
            keyed = sc.parallelize([(node.key, node) for node in frontier], slices)
            placed = keyed.partitionBy(slices, _by_digest)
            return placed.flatMap(lambda kv: job.expand(kv[1])).collect()

        return explore(settings, expand=expand, **bounds)
    finally:
        if own:
            session.stop()


def _by_digest(key: str) -> int:
    """The partition of a state: a stable hash of its digest (not Python's salted hash)."""
    return zlib.crc32(key.encode())
