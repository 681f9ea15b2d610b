"""The ISR lag explorer's logic: which followers the leader keeps in the ISR, and why.

Three brokers, broker 1 leading. Every ``burst_interval_ms`` the producer writes a burst of
``burst`` records. Follower 2 fetches every ``tick_ms`` (a healthy follower); follower 3, the one
to watch, every ``fetch_interval_ms`` (its speed). The leader checks the ISR every
``replica.lag.time.max.ms`` / 2. The lag rule is Kafka's time rule (a follower must have caught up
within ``replica.lag.time.max.ms``) or, as before 0.9, the time rule plus
``replica.lag.max.messages``, which drops any follower that is too many records behind: a big
enough burst makes even healthy followers flap in and out of the ISR.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from kafkalab.errors import ConfigError
from kafkalab.sim.cluster import Cluster
from kafkalab.viz.series import Sample, replication_series

__all__ = ["LAG_RULES", "IsrLagModel", "IsrLagResult", "IsrLagSettings"]

LAG_RULES = ("time", "time+messages")


@dataclass(frozen=True)
class IsrLagSettings:
    burst: int = 5000
    burst_interval_ms: int = 3000
    fetch_interval_ms: int = 1000
    lag_rule: str = "time"
    replica_lag_time_max_ms: int = 10000
    replica_lag_max_messages: int = 4000
    duration_ms: int = 60000
    tick_ms: int = 500

    def __post_init__(self) -> None:
        if self.lag_rule not in LAG_RULES:
            raise ConfigError(f"lag_rule={self.lag_rule!r} is not allowed: use {LAG_RULES}")
        for name in ("burst", "burst_interval_ms", "fetch_interval_ms", "tick_ms"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} is not allowed: use >= 1")
        if self.duration_ms > 600000 or self.duration_ms < self.tick_ms:
            raise ConfigError(
                f"duration_ms={self.duration_ms} is not allowed: use {self.tick_ms}..600000"
            )

    def config(self) -> dict[str, Any]:
        messages = self.replica_lag_max_messages if self.lag_rule == "time+messages" else None
        return {
            "acks": "1",
            "replica.lag.time.max.ms": self.replica_lag_time_max_ms,
            "replica.lag.max.messages": messages,
        }


@dataclass
class IsrLagResult:
    settings: IsrLagSettings
    cluster: Cluster
    samples: list[Sample]
    shrinks: int
    expands: int
    under_replicated_ms: int  # simulated time with an ISR smaller than the replica set

    def summary(self) -> str:
        return (
            f"{self.shrinks} ISR shrink(s), {self.expands} expansion(s); under-replicated for "
            f"{self.under_replicated_ms} of {self.settings.duration_ms} ms"
        )


class IsrLagModel:
    """Run the burst workload for some settings and keep the latest result.

    >>> m = IsrLagModel()
    >>> m.run(IsrLagSettings(lag_rule="time+messages", duration_ms=20000)).summary()
    '2 ISR shrink(s), 1 expansion(s); under-replicated for 1000 of 20000 ms'
    >>> m.run(IsrLagSettings(lag_rule="time", duration_ms=20000)).summary()
    '0 ISR shrink(s), 0 expansion(s); under-replicated for 0 of 20000 ms'
    """

    def __init__(self) -> None:
        self._cache: dict[IsrLagSettings, IsrLagResult] = {}

    def run(self, settings: IsrLagSettings) -> IsrLagResult:
        if settings not in self._cache:
            self._cache = {settings: _run(settings)}  # keep one: each holds a whole cluster
        return self._cache[settings]


def _run(s: IsrLagSettings) -> IsrLagResult:
    c = Cluster(3, leader=1, config=s.config())
    next_burst, next_slow, count = 0, 0, 0
    for t in range(0, s.duration_ms, s.tick_ms):
        # Followers fetch what is there, then a burst may land and wait a tick for them.
        if 2 in c.followers():
            c.fetch(2)
        if t >= next_slow and 3 in c.followers():
            c.fetch(3)
            next_slow += s.fetch_interval_ms
        if t >= next_burst:
            count += 1
            c.produce(f"b{count}", count=s.burst, acks=1)
            next_burst += s.burst_interval_ms
        c.advance(s.tick_ms)
    _, samples = replication_series(c, x="time")
    shrinks = sum(1 for a, b in pairwise(samples) if set(a.isr) - set(b.isr))
    expands = sum(1 for a, b in pairwise(samples) if set(b.isr) - set(a.isr))
    return IsrLagResult(s, c, samples, shrinks, expands, _under_replicated_ms(samples, s))


def _under_replicated_ms(samples: list[Sample], s: IsrLagSettings) -> int:
    total = 0
    for i, sample in enumerate(samples):
        end = samples[i + 1].x if i + 1 < len(samples) else s.duration_ms
        if len(sample.isr) < 3:
            total += max(0, end - sample.x)
    return total
