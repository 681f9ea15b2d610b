"""The course's questions about a campaign, each answered by a Spark DataFrame.

    spark = spark_session()
    c = read_campaign(spark, "datasets/small")
    loss_probability(c.trials).show()          # how often does each config lose acked data?
    availability_frontier(c.trials).show()      # what does durability cost in availability?
    latency_by_acks(c.events, c.trials).show()  # what does acks=all cost in latency?
    isr_flapping(c.events, c.trials).show()     # the pre-0.9 replica.lag.max.messages rule
    leader_epoch_anomalies(c.trials).show()     # what goes wrong without leader epochs?

Every query is lazy: Spark runs it when you ``show()``, ``collect()`` or ``toPandas()`` it.
Results are sorted, so the same dataset prints the same table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafkalab.campaign import CampaignError, manifest_tables, read_manifest

__all__ = [
    "CONFIG",
    "Campaign",
    "availability_frontier",
    "isr_changes",
    "isr_flapping",
    "latency_by_acks",
    "leader_epoch_anomalies",
    "loss_probability",
    "mcnemar_exact",
    "read_campaign",
    "wilson_interval",
]

CONFIG = ("config_id", "config_label")  # the default grouping: one row per config


@dataclass(frozen=True)
class Campaign:
    """A campaign's tables and its manifest. ``events`` is None for a campaign that wrote the
    trials table alone (``tables: [trials]`` in its spec)."""

    trials: DataFrame
    events: DataFrame | None
    manifest: dict[str, Any]


def read_campaign(spark: Any, path: str | Path) -> Campaign:
    """Open a complete campaign folder written by ``kafkalab campaign run``."""
    manifest = read_manifest(path)
    if manifest is None or not manifest.get("complete"):
        raise CampaignError(
            f"{str(path)!r} holds no complete campaign: run `kafkalab campaign run SPEC --out "
            f"{path}` (it resumes an interrupted run)"
        )
    tables = {t: spark.read.parquet(str(Path(path) / t)) for t in manifest_tables(manifest)}
    return Campaign(trials=tables["trials"], events=tables.get("events"), manifest=manifest)


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} is not allowed: use 0 < confidence < 1")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(k: Column, n: Column, confidence: float = 0.95) -> tuple[Column, Column]:
    """The Wilson score interval of a proportion k/n, as two Spark columns: unlike p ± z·se it
    stays inside [0, 1] and is not zero-width when no trial lost anything."""
    z = _z(confidence)
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * F.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return F.greatest(F.lit(0.0), center - half), F.least(F.lit(1.0), center + half)


def loss_probability(
    trials: DataFrame, *, by: Sequence[str] = CONFIG, confidence: float = 0.95
) -> DataFrame:
    """Per group: trials, trials that lost acknowledged records, the loss probability with its
    Wilson confidence interval, and the records lost per acknowledged record."""
    grouped = trials.groupBy(*by).agg(
        F.count(F.lit(1)).alias("trials"),
        F.sum((F.col("lost_acked") > 0).cast("long")).alias("lossy_trials"),
        F.sum("lost_acked").alias("lost_records"),
        F.sum("acked").alias("acked_records"),
    )
    low, high = wilson_interval(F.col("lossy_trials"), F.col("trials"), confidence)
    return (
        grouped.withColumn("loss_probability", F.col("lossy_trials") / F.col("trials"))
        .withColumn("ci_low", low)
        .withColumn("ci_high", high)
        .withColumn(
            "lost_per_acked",
            F.when(F.col("acked_records") > 0, F.col("lost_records") / F.col("acked_records")),
        )
        .orderBy(*by)
    )


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """McNemar's exact two-sided test for paired trials (the same seed under two settings).

    Only the discordant pairs count: ``only_first`` seeds lost records under the first setting
    alone, ``only_second`` under the second alone. If the setting made no difference, each
    discordant seed would fall either way with probability 1/2; the p-value is the chance of a
    split at least as uneven as this one, both ways (binomial, capped at 1).
    """
    for name, value in (("only_first", only_first), ("only_second", only_second)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name}={value!r} is not allowed: use a count, a whole number >= 0")
    n = only_first + only_second
    tail = sum(math.comb(n, i) for i in range(min(only_first, only_second) + 1))
    return min(1.0, 2 * tail / 2**n)


def availability_frontier(trials: DataFrame, *, by: Sequence[str] = CONFIG) -> DataFrame:
    """Per group: the loss probability against the mean unavailability (ms of refused writes per
    trial), and ``pareto``: true when no other group is at least as good on both and better on
    one. Groups whose unavailability is unknown (acks=0) get ``pareto`` null."""
    stats = trials.groupBy(*by).agg(
        F.count(F.lit(1)).alias("trials"),
        F.avg((F.col("lost_acked") > 0).cast("double")).alias("loss_probability"),
        F.avg("unavailable_ms").alias("mean_unavailable_ms"),
        F.avg("offline_ms").alias("mean_offline_ms"),
    )
    known = stats.filter(F.col("mean_unavailable_ms").isNotNull())
    a, b = known.alias("a"), known.alias("b")
    dominated = a.join(
        b,
        (F.col("b.loss_probability") <= F.col("a.loss_probability"))
        & (F.col("b.mean_unavailable_ms") <= F.col("a.mean_unavailable_ms"))
        & (
            (F.col("b.loss_probability") < F.col("a.loss_probability"))
            | (F.col("b.mean_unavailable_ms") < F.col("a.mean_unavailable_ms"))
        ),
        "left_semi",
    ).select(*[F.col(f"a.{c}") for c in by], F.lit(True).alias("_dominated"))
    return (
        stats.join(dominated, list(by), "left")
        .withColumn(
            "pareto",
            F.when(F.col("mean_unavailable_ms").isNull(), F.lit(None).cast("boolean")).otherwise(
                F.col("_dominated").isNull()
            ),
        )
        .drop("_dominated")
        .orderBy(*by)
    )


def latency_by_acks(
    events: DataFrame,
    trials: DataFrame,
    *,
    percentiles: Sequence[float] = (0.5, 0.95, 0.99),
) -> DataFrame:
    """Produce latency (send to acknowledgement, acknowledged batches only) by acks: batches,
    mean, the exact ``percentiles`` (linear interpolation) and the maximum."""
    acked = events.filter(
        (F.col("kind") == "produce_result")
        & (F.col("error") == "NONE")
        & F.col("latency_ms").isNotNull()
    ).select("trial_id", "latency_ms")
    joined = acked.join(trials.select("trial_id", "acks"), "trial_id")
    aggs = [
        F.count(F.lit(1)).alias("batches"),
        F.avg("latency_ms").alias("mean_ms"),
        *[F.percentile("latency_ms", F.lit(q)).alias(f"p{_pct_name(q)}_ms") for q in percentiles],
        F.max("latency_ms").alias("max_ms"),
    ]
    return joined.groupBy("acks").agg(*aggs).orderBy("acks")


def _pct_name(q: float) -> str:
    if not 0 <= q <= 1:
        raise ValueError(f"percentile {q!r} is not allowed: use 0..1")
    return f"{q * 100:g}".replace(".", "_")


def isr_changes(events: DataFrame, trials: DataFrame) -> DataFrame:
    """Every committed ISR change (the controller's partition_state events) with its direction
    and the next change of the same trial: trial_id, seq, time_ms, isr_size, reason (``shrink``
    when the leader's ISR rule dropped a follower, ``broker_failure`` when the controller
    removed a dead broker, ...), change, next_change, next_time_ms. The ISR starts as every
    replica, as in the run's report."""
    w = Window.partitionBy("trial_id").orderBy("seq")
    states = events.filter(F.col("kind") == "partition_state").select(
        "trial_id", "seq", "time_ms", "isr_size", "reason"
    )
    changes = (
        states.join(trials.select("trial_id", "replication_factor"), "trial_id")
        .withColumn("prev", F.coalesce(F.lag("isr_size").over(w), F.col("replication_factor")))
        .filter(F.col("isr_size") != F.col("prev"))
        .withColumn(
            "change", F.when(F.col("isr_size") < F.col("prev"), "shrink").otherwise("expand")
        )
        .drop("replication_factor", "prev")
    )
    return changes.withColumn("next_change", F.lead("change").over(w)).withColumn(
        "next_time_ms", F.lead("time_ms").over(w)
    )


def isr_flapping(
    events: DataFrame,
    trials: DataFrame,
    *,
    by: Sequence[str] = ("preset", "replica_lag_max_messages"),
    within_ms: int = 5000,
) -> DataFrame:
    """ISR churn per group, per trial: every shrink, the lag shrinks (the leader's ISR rule
    dropped a live follower; the others are dead brokers the controller removed), expands, and
    flaps (a lag shrink undone by an expand within ``within_ms``), and the share of trials that
    flapped. Under the pre-0.9 rule (replica.lag.max.messages set) a follower that falls that
    many messages behind, in a burst, leaves the ISR although it is healthy, and rejoins soon."""
    lag_shrink = (F.col("change") == "shrink") & (F.col("reason") == "shrink")
    flap = (
        lag_shrink
        & (F.col("next_change") == "expand")
        & (F.col("next_time_ms") - F.col("time_ms") <= within_ms)
    )
    per_trial = (
        isr_changes(events, trials)
        .groupBy("trial_id")
        .agg(
            F.sum((F.col("change") == "shrink").cast("long")).alias("shrinks"),
            F.sum(lag_shrink.cast("long")).alias("lag_shrinks"),
            F.sum((F.col("change") == "expand").cast("long")).alias("expands"),
            F.sum(flap.cast("long")).alias("flaps"),
        )
    )
    joined = (
        trials.select("trial_id", *by)
        .join(per_trial, "trial_id", "left")
        .fillna(0, ["shrinks", "lag_shrinks", "expands", "flaps"])
    )
    return (
        joined.groupBy(*by)
        .agg(
            F.count(F.lit(1)).alias("trials"),
            F.avg("shrinks").alias("shrinks_per_trial"),
            F.avg("lag_shrinks").alias("lag_shrinks_per_trial"),
            F.avg("expands").alias("expands_per_trial"),
            F.avg("flaps").alias("flaps_per_trial"),
            F.avg((F.col("flaps") > 0).cast("double")).alias("flapping_trials"),
        )
        .orderBy(*by)
    )


def leader_epoch_anomalies(
    trials: DataFrame, *, by: Sequence[str] = ("leader_epochs", "acks")
) -> DataFrame:
    """How often each anomaly happens with leader epochs on and off (KIP-101): the share of
    trials with divergent logs, lost acknowledged records, a HW that moved backwards, two
    leaders in one epoch, and any of them."""
    anomalies = {
        "divergent": F.col("divergent"),
        "lost_acked": F.col("lost_acked") > 0,
        "hw_regression": F.col("hw_regressions") > 0,
        "two_leaders": F.col("two_leaders") > 0,
    }
    any_anomaly = F.lit(False)
    for cond in anomalies.values():
        any_anomaly = any_anomaly | cond
    return (
        trials.groupBy(*by)
        .agg(
            F.count(F.lit(1)).alias("trials"),
            *[F.avg(c.cast("double")).alias(f"{n}_rate") for n, c in anomalies.items()],
            F.avg(any_anomaly.cast("double")).alias("any_anomaly_rate"),
        )
        .orderBy(*by)
    )
