"""The trade-off explorer's logic: durability against availability and latency.

Each setting (acks, min.insync.replicas, replication factor, unclean election, leader epochs,
how often faults strike) runs a few timed simulations under random faults (the same seeds for
every setting, so settings are compared on the same bad luck) and summarises them:

* acknowledged-loss rate: the share of acknowledged records missing from the final log;
* unavailability: the share of produce requests that were not acknowledged (refused, timed
  out or unanswered);
* produce latency percentiles (p50, p95, p99) of the acknowledged requests, in simulated ms.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from kafkalab.config import implied_switches, make_config
from kafkalab.errors import ConfigError
from kafkalab.sim.timed import Workload, random_faults, simulate

__all__ = ["TradeoffModel", "TradeoffResult", "TradeoffSettings", "percentile"]


@dataclass(frozen=True)
class TradeoffSettings:
    """One point of the trade-off space."""

    acks: str = "all"
    min_insync_replicas: int = 2
    replication_factor: int = 3
    unclean_leader_election_enable: bool = False
    leader_epochs: bool = True
    fault_interval_ms: int = 5000  # mean time between faults
    seeds: int = 3
    duration_ms: int = 20000
    settle_ms: int = 10000

    def __post_init__(self) -> None:
        if str(self.acks) not in ("0", "1", "all"):
            raise ConfigError(f"acks={self.acks!r} is not allowed: use 0, 1 or all")
        if not 1 <= self.replication_factor <= 5:
            raise ConfigError(
                f"replication_factor={self.replication_factor} is not allowed: use 1..5"
            )
        if not 1 <= self.min_insync_replicas <= self.replication_factor:
            raise ConfigError(
                f"min_insync_replicas={self.min_insync_replicas} is not allowed: use "
                f"1..{self.replication_factor} (the replication factor)"
            )
        if self.seeds < 1 or self.fault_interval_ms < 100 or self.duration_ms < 1000:
            raise ConfigError(
                f"seeds={self.seeds}, fault_interval_ms={self.fault_interval_ms}, "
                f"duration_ms={self.duration_ms} are not allowed: use seeds >= 1, "
                "fault_interval_ms >= 100 and duration_ms >= 1000"
            )

    @property
    def label(self) -> str:
        """A short name for plots: "acks=all minISR=2 RF=3"."""
        extra = " unclean" if self.unclean_leader_election_enable else ""
        extra += "" if self.leader_epochs else " no-epochs"
        rf = self.replication_factor
        return f"acks={self.acks} minISR={self.min_insync_replicas} RF={rf}{extra}"

    @property
    def implied(self) -> list[str]:
        """The fixes these settings turn off with leader epochs, one line each."""
        return implied_switches(self.config())

    def config(self) -> dict[str, Any]:
        return {
            "acks": str(self.acks),
            "min.insync.replicas": self.min_insync_replicas,
            "replication.factor": self.replication_factor,
            "unclean.leader.election.enable": self.unclean_leader_election_enable,
            "leader_epochs": self.leader_epochs,
        }


@dataclass(frozen=True)
class TradeoffResult:
    """The summary of one setting over its seeds (plain data)."""

    settings: TradeoffSettings
    produced: int
    acked: int
    lost_acked: int
    acked_loss_rate: float
    unavailability: float
    latency_ms: dict[str, float]  # p50, p95, p99 of acknowledged requests
    replay_hints: list[str] = field(default_factory=list)  # one per seed that lost data

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: list[int], q: float) -> float:
    """The q-th percentile (0..100) by the nearest-rank method; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return float(ordered[rank - 1])


BROKERS = 5  # enough for every replication factor the explorer offers


class TradeoffModel:
    """Run settings and keep their results, so a widget can compare them side by side.

    >>> m = TradeoffModel()
    >>> r = m.run(TradeoffSettings(acks="1", min_insync_replicas=1, seeds=1, duration_ms=5000))
    >>> r.produced, 0.0 <= r.unavailability <= 1.0
    (249, True)
    """

    def __init__(self) -> None:
        self.results: dict[TradeoffSettings, TradeoffResult] = {}
        self.history: list[TradeoffSettings] = []  # in the order they were run, for plots

    def run(self, settings: TradeoffSettings) -> TradeoffResult:
        """The result of ``settings`` (computed once; the runs are deterministic)."""
        if settings not in self.results:
            self.results[settings] = _summarise(settings)
        if settings in self.history:
            self.history.remove(settings)
        self.history.append(settings)
        return self.results[settings]

    def compared(self, last: int = 6) -> list[TradeoffResult]:
        """The latest ``last`` distinct settings run, oldest first."""
        return [self.results[s] for s in self.history[-last:]]


def _summarise(settings: TradeoffSettings) -> TradeoffResult:
    cfg = make_config(settings.config())
    produced = acked = lost = unanswered = 0
    latencies: list[int] = []
    hints: list[str] = []
    for seed in range(settings.seeds):
        faults = random_faults(
            seed, BROKERS, settings.duration_ms, mean_interval_ms=settings.fault_interval_ms
        )
        result, cluster = simulate(
            cfg,
            seed=seed,
            brokers=BROKERS,
            duration_ms=settings.duration_ms,
            settle_ms=settings.settle_ms,
            workload=Workload(acks=str(settings.acks)),
            faults=faults,
            keep_cluster=True,
        )
        sent, answers = _produce_times(cluster.trace)
        produced += len(sent)
        ok = {v: t for v, (t, error) in answers.items() if error == "NONE"}
        if str(settings.acks) == "0":  # the producer never hears back: every send counts
            ok = dict.fromkeys(sent, 0)
            final = set(cluster.replica(cluster.leader).values) if cluster.leader else set()
            run_lost = sum(1 for v in sent if v not in final)
        else:
            run_lost = len(result.lost_acked)
            latencies += [t - sent[v] for v, t in ok.items()]
        acked += len(ok)
        lost += run_lost
        unanswered += len(sent) - len(ok)
        if run_lost:
            hints.append(result.replay_hint())
    return TradeoffResult(
        settings=settings,
        produced=produced,
        acked=acked,
        lost_acked=lost,
        acked_loss_rate=lost / acked if acked else 0.0,
        unavailability=unanswered / produced if produced else 0.0,
        latency_ms={f"p{q}": percentile(latencies, q) for q in (50, 95, 99)},
        replay_hints=hints,
    )


def _produce_times(trace: Any) -> tuple[dict[str, int], dict[str, tuple[int, str]]]:
    """When each record was sent, and when and how its answer came (the first answer)."""
    sent: dict[str, int] = {}
    answers: dict[str, tuple[int, str]] = {}
    for e in trace.of_kind("produce", "produce_result"):
        for v in e.data.get("values", ()):
            if e.kind == "produce":
                sent.setdefault(v, e.time_ms)
            else:
                answers.setdefault(v, (e.time_ms, e.data.get("error", "NONE")))
    return sent, answers
