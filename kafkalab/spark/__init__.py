"""Campaigns on Spark: generate them (:mod:`.generate`), ask them questions (:mod:`.analysis`),
draw the answers (:mod:`.plots`).

``spark_session`` and ``run_campaign`` work without importing pyspark up front (so a missing
Java or pyspark gets a clear message); the queries and plots load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from kafkalab.spark.generate import run_campaign, spark_map_units
from kafkalab.spark.session import SparkUnavailable, spark_session

__all__ = [
    "Campaign",
    "SparkUnavailable",
    "availability_frontier",
    "isr_changes",
    "isr_flapping",
    "latency_by_acks",
    "leader_epoch_anomalies",
    "loss_probability",
    "mcnemar_exact",
    "plot_frontier",
    "plot_isr_flapping",
    "plot_latency",
    "plot_loss_probability",
    "read_campaign",
    "run_campaign",
    "spark_map_units",
    "spark_session",
    "wilson_interval",
]

_LAZY = {
    **dict.fromkeys(
        (
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
        ),
        "kafkalab.spark.analysis",
    ),
    **dict.fromkeys(
        ("plot_frontier", "plot_isr_flapping", "plot_latency", "plot_loss_probability"),
        "kafkalab.spark.plots",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kafkalab.spark' has no attribute {name!r}")
