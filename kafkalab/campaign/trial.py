"""One trial: (config, seed) -> a timed simulation -> one ``trials`` row and its ``events`` rows.

The seed chooses the whole trial, swarm style: which of the campaign's fault kinds are on, how
often faults strike, and (through :func:`kafkalab.sim.timed.random_faults`) the schedule itself.
The draws depend on the seed alone, never on the config, so every config of a campaign meets the
same faults for the same seed: comparing two configs compares like with like.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kafkalab.campaign.schema import EVENTS, EXCLUDED_KINDS
from kafkalab.campaign.spec import CampaignSpec
from kafkalab.config import Config, make_config
from kafkalab.sim.cluster import CONTROLLER_NODES, Cluster
from kafkalab.sim.engine import collector_paused
from kafkalab.sim.timed import RunResult, Workload, random_faults, simulate
from kafkalab.sim.trace import Event

__all__ = ["Trial", "TrialRows", "draw_trial", "event_columns", "percentile", "run_trial"]


@dataclass(frozen=True)
class Trial:
    """Everything one trial runs, drawn from its seed: plain data, picklable."""

    trial_id: int
    config_id: int
    seed: int
    settings: dict[str, Any]
    label: str
    brokers: int
    duration_ms: int
    settle_ms: int
    interval_ms: int
    batch: int
    latency_ms: tuple[int, int]
    fault_kinds: tuple[str, ...]
    mean_fault_interval_ms: int
    max_down_ms: int
    burst_records: tuple[int, int]

    def replay_hint(self, spec: str = "SPEC") -> str:
        """Python that rebuilds and reruns this trial (``spec``: the spec's name or file)."""
        return (
            "replay: from kafkalab.campaign import load_spec, draw_trial, run_trial; "
            f"run_trial(draw_trial(load_spec({spec!r}), config_id={self.config_id}, "
            f"seed={self.seed}))"
        )


@dataclass(frozen=True)
class TrialRows:
    """A trial's row of the ``trials`` table and its ``events`` rows, column by column."""

    trial: dict[str, Any]
    events: dict[str, list[Any]]


def draw_trial(spec: CampaignSpec, config_id: int, seed: int) -> Trial:
    """The trial of one config and one seed. With ``swarm`` each fault kind is on with
    probability 1/2 (at least one is), so some trials meet only crashes, others only bursts
    and partitions: rare combinations get their turn."""
    if not 0 <= config_id < len(spec.configs):
        raise ValueError(f"config_id={config_id} is not in 0..{len(spec.configs) - 1}")
    index = seed - spec.seed_start
    if not 0 <= index < spec.seeds:
        raise ValueError(f"seed={seed} is not one of the campaign's seeds")
    rng = random.Random(f"{seed}:swarm")
    kinds = spec.fault_kinds
    if spec.swarm and kinds:
        on = tuple(k for k in kinds if rng.random() < 0.5)
        kinds = on or (rng.choice(kinds),)
    return Trial(
        trial_id=config_id * spec.seeds + index,
        config_id=config_id,
        seed=seed,
        settings=dict(spec.configs[config_id]),
        label=spec.label(config_id),
        brokers=spec.brokers,
        duration_ms=spec.duration_ms,
        settle_ms=spec.settle_ms,
        interval_ms=spec.interval_ms,
        batch=spec.batch,
        latency_ms=spec.latency_ms,
        fault_kinds=tuple(sorted(kinds)),
        mean_fault_interval_ms=rng.randint(*spec.mean_fault_interval_ms),
        max_down_ms=spec.max_down_ms,
        burst_records=spec.burst_records,
    )


def run_trial(trial: Trial, *, events: bool = True) -> TrialRows:
    """Run one trial and read its trace into rows (``events=False``: its ``trials`` row alone,
    the same row, for a campaign that writes no ``events`` table)."""
    cfg = make_config(trial.settings)
    controllers = CONTROLLER_NODES if cfg.controller_mode == "kraft" else ()
    faults = random_faults(
        trial.seed,
        trial.brokers,
        trial.duration_ms,
        mean_interval_ms=trial.mean_fault_interval_ms,
        max_down_ms=trial.max_down_ms,
        kinds=trial.fault_kinds,
        controllers=controllers,
        burst_records=trial.burst_records,
    )
    with collector_paused():  # the rows too: as many objects as the run
        result, cluster = simulate(
            cfg,
            seed=trial.seed,
            brokers=trial.brokers,
            duration_ms=trial.duration_ms,
            settle_ms=trial.settle_ms,
            workload=Workload(interval_ms=trial.interval_ms, batch=trial.batch),
            faults=faults,
            latency_ms=trial.latency_ms,
            keep_cluster=True,
        )
        columns = event_columns(cluster.trace, trial.trial_id) if events else {}
        row = _trial_row(trial, cfg, result, cluster)
        cluster.release()
    return TrialRows(row, columns)


# ---- the events table -------------------------------------------------------------------------


def event_columns(trace: Iterable[Event], trial_id: int) -> dict[str, list[Any]]:
    """The events-table rows of one trace, as one list per column."""
    events = list(trace)
    latency = {e.seq: ms for e, ms in _produce_latencies(events)}
    replicas: dict[int, list[int | None]] = {}  # broker -> [hw, leo] as last seen
    rows = [
        _event_row(e, trial_id, latency.get(e.seq), replicas)
        for e in events
        if e.kind not in EXCLUDED_KINDS
    ]
    names = [c.name for c in EVENTS]
    if not rows:
        return {n: [] for n in names}
    return {n: list(col) for n, col in zip(names, zip(*rows, strict=True), strict=True)}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _event_row(
    e: Event, trial_id: int, latency: int | None, replicas: dict[int, list[int | None]]
) -> tuple[Any, ...]:
    d = e.data
    at_broker = e.node.isdigit()
    broker = _int_or_none(d.get("broker"))
    if broker is None and at_broker:
        broker = int(e.node)
    hw = leo = None
    if at_broker and broker is not None:
        hw, leo = _replica_after(e, replicas.setdefault(broker, [None, None]))
    leader = broker if e.kind == "became_leader" else _int_or_none(d.get("leader"))
    isr = d.get("isr")
    isr = [int(b) for b in isr] if isinstance(isr, list) else None
    error = d.get("error")
    return (
        trial_id,
        e.seq,
        e.time_ms,
        e.kind,
        e.node,
        broker,
        leader,
        _int_or_none(d.get("leader_epoch")),
        hw,
        leo,
        None if isr is None else len(isr),
        isr,
        _records(e.kind, d),
        error if isinstance(error, str) else None,
        latency,
        _reason(e.kind, d),
    )


def _replica_after(e: Event, state: list[int | None]) -> tuple[int | None, int | None]:
    """A broker's [hw, leo] after one of its events (kept in ``state``)."""
    d = e.data
    if e.kind == "hw":
        state[0] = d["new"]
    elif e.kind in ("append", "replicate"):
        state[1] = d["last"] + 1
    elif e.kind == "truncate":
        state[1] = d["to"]
        if state[0] is not None and state[0] > d["to"]:
            state[0] = d["to"]
    elif e.kind in ("became_leader", "restart"):
        state[0], state[1] = d.get("hw", state[0]), d.get("leo", state[1])
    return state[0], state[1]


def _records(kind: str, d: dict[str, Any]) -> int | None:
    if kind in ("append", "replicate"):
        return d["last"] - d["first"] + 1
    if kind == "produce_result":
        return len(d.get("values", ()))
    if kind == "truncate":
        return len(d.get("removed", ()))
    return None


def _reason(kind: str, d: dict[str, Any]) -> str | None:
    if kind == "crash":
        return "power_loss" if d.get("lose_unflushed") else str(d.get("reason", "crash"))
    reason = d.get("reason")
    return reason if isinstance(reason, str) else None


# ---- the trials table -------------------------------------------------------------------------


def _trial_row(trial: Trial, cfg: Config, result: RunResult, cluster: Cluster) -> dict[str, Any]:
    elections, offline_ms = _leadership(cluster, trial.duration_ms + trial.settle_ms)
    latencies = sorted(
        ms for e, ms in _produce_latencies(cluster.trace) if e.data["error"] == "NONE"
    )
    bursts = [f for f in result.schedule if f.action == "burst"]
    return {
        "trial_id": trial.trial_id,
        "config_id": trial.config_id,
        "seed": trial.seed,
        "config_label": trial.label,
        "preset": cfg.preset,
        "acks": cfg.acks,  # the config reads -1 as "all"
        "min_insync_replicas": cfg.min_insync_replicas,
        "replication_factor": cfg.replication_factor or trial.brokers,
        "unclean_leader_election_enable": cfg.unclean_leader_election_enable,
        "leader_epochs": cfg.leader_epochs,
        "kip279": cfg.kip279,
        "kip320": cfg.kip320,
        "broker_epoch": cfg.broker_epoch,
        "enable_idempotence": cfg.enable_idempotence,
        "replica_lag_time_max_ms": cfg.replica_lag_time_max_ms,
        "replica_lag_max_messages": cfg.replica_lag_max_messages,
        "hw_freeze_under_min_isr": cfg.hw_freeze_under_min_isr,
        "eligible_leader_replicas_enable": cfg.eligible_leader_replicas_enable,
        "controller_mode": cfg.controller_mode,
        "config_json": json.dumps(cfg.as_dict(), sort_keys=True, separators=(",", ":")),
        "brokers": trial.brokers,
        "duration_ms": trial.duration_ms,
        "settle_ms": trial.settle_ms,
        "interval_ms": trial.interval_ms,
        "batch": trial.batch,
        "fault_kinds": ",".join(trial.fault_kinds),
        "mean_fault_interval_ms": trial.mean_fault_interval_ms,
        "fault_actions": len(result.schedule) - len(bursts),
        "bursts": len(bursts),
        "burst_records": sum(int(f.args[0]) for f in bursts),
        "produced": result.produced,
        "acked": result.acked,
        "lost_acked": len(result.lost_acked),
        "divergent": result.divergent,
        "duplicates": result.duplicates,
        "out_of_order": result.out_of_order,
        "hw_regressions": result.hw_regressions,
        "two_leaders": result.two_leaders,
        "unclean_elections": result.unclean_elections,
        "leader_elections": elections,
        "isr_shrinks": result.isr_shrinks,
        "isr_expands": result.isr_expands,
        "offline_ms": offline_ms,
        "unavailable_ms": _unavailable_ms(trial, cfg, cluster),
        "latency_p50_ms": percentile(latencies, 0.5),
        "latency_p99_ms": percentile(latencies, 0.99),
        "latency_max_ms": latencies[-1] if latencies else None,
        "final_leader": result.leader,
        "safe": result.safe,
        "events": sum(1 for e in cluster.trace if e.kind not in EXCLUDED_KINDS),
        "trace_events": result.events,
    }


def _produce_latencies(trace: Iterable[Event]) -> Iterator[tuple[Event, int]]:
    """Each ``produce_result`` with its batch's latency: from the batch's first send (the first
    ``produce`` of its first value) to this answer. The events table's ``latency_ms`` and the
    trials table's percentiles (of the answers with no error) both read it."""
    sent: dict[str, int] = {}  # first value of a batch -> when it was first sent
    for e in trace:
        values = e.data.get("values") if e.kind in ("produce", "produce_result") else None
        if not values:
            continue
        if e.kind == "produce":
            sent.setdefault(values[0], e.time_ms)
        elif values[0] in sent:
            yield e, e.time_ms - sent[values[0]]


def _leadership(cluster: Cluster, end_ms: int) -> tuple[int, int]:
    """Leader changes the controller committed, and the ms the partition had no leader."""
    elections, offline_ms = 0, 0
    epoch: int | None = None
    offline_since: int | None = None
    for e in cluster.trace.of_kind("partition_state"):
        if e.data.get("tp") != cluster.tp:
            continue
        leader, new_epoch = e.data["leader"], e.data["leader_epoch"]
        if leader is not None and new_epoch != epoch:
            elections += 1
        epoch = new_epoch
        if leader is None and offline_since is None:
            offline_since = e.time_ms
        elif leader is not None and offline_since is not None:
            offline_ms += e.time_ms - offline_since
            offline_since = None
    if offline_since is not None:
        offline_ms += end_ms - offline_since
    return elections, offline_ms


def _unavailable_ms(trial: Trial, cfg: Config, cluster: Cluster) -> int | None:
    """interval_ms for each workload batch ("r<n>.<i>" records) never acknowledged."""
    if cfg.acks_value == 0:
        return None
    batches = len(range(trial.interval_ms, trial.duration_ms, trial.interval_ms))
    acked = {
        e.data["values"][0]
        for e in cluster.trace.of_kind("produce_result")
        if e.data["error"] == "NONE" and e.data["values"] and e.data["values"][0][0] == "r"
    }
    return (batches - len(acked)) * trial.interval_ms


def percentile(values: list[int], q: float) -> float | None:
    """The ``q`` quantile of sorted ``values`` with linear interpolation (what Spark's
    ``percentile``, DuckDB's ``quantile_cont`` and pandas' ``quantile`` compute)."""
    if not values:
        return None
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return float(values[lo] + (values[hi] - values[lo]) * (pos - lo))
