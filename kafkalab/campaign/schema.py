"""The dataset schema: two tables, ``trials`` and ``events``, with a version.

Each column has a type and a description written for the learner who queries it. The version
changes whenever a column is added, removed or changes meaning, and a campaign's manifest
records the version its files follow. ``datasets/schema.json`` is :func:`schema_document`
written out (a test keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "EVENTS",
    "SCHEMA_VERSION",
    "TRIALS",
    "Column",
    "arrow_schema",
    "schema_document",
]

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Column:
    """One column: its name, its type (``int32``, ``int64``, ``double``, ``bool``, ``string``
    or ``list<int32>``), whether it may be null, and what it means."""

    name: str
    type: str
    description: str
    nullable: bool = False


def _c(name: str, type_: str, description: str, nullable: bool = False) -> Column:
    return Column(name, type_, description, nullable)


TRIALS: tuple[Column, ...] = (
    _c("trial_id", "int64", "the trial's number in its campaign: config_id * seeds + seed index"),
    _c("config_id", "int32", "the config's number in the campaign (its order in the grid)"),
    _c("seed", "int64", "the seed that chose the whole trial: faults, workload, network"),
    _c("config_label", "string", "the settings the campaign varies, as key=value pairs"),
    _c("preset", "string", "the Kafka release preset, if the config names one", True),
    _c("acks", "string", "the producer's acks: 0, 1 or all"),
    _c("min_insync_replicas", "int32", "min.insync.replicas"),
    _c("replication_factor", "int32", "replicas of the partition"),
    _c("unclean_leader_election_enable", "bool", "unclean.leader.election.enable"),
    _c("leader_epochs", "bool", "KIP-101 leader epochs: truncate by epoch, not to the HW"),
    _c("kip279", "bool", "KIP-279: the follower loops until its epoch answer matches"),
    _c("kip320", "bool", "KIP-320: fetches carry the leader epoch and stale ones are fenced"),
    _c("broker_epoch", "bool", "KIP-380: a bounced broker is a failure then a startup"),
    _c("enable_idempotence", "bool", "enable.idempotence (KIP-98)"),
    _c("replica_lag_time_max_ms", "int64", "replica.lag.time.max.ms"),
    _c("replica_lag_max_messages", "int64", "the pre-0.9 ISR rule; null when off", True),
    _c("hw_freeze_under_min_isr", "bool", "KAFKA-15583: no HW advance while ISR < min ISR"),
    _c("eligible_leader_replicas_enable", "bool", "KIP-966 Eligible Leader Replicas"),
    _c("controller_mode", "string", "dedicated, zk or kraft"),
    _c("config_json", "string", "every setting of the config, as canonical JSON (to replay)"),
    _c("brokers", "int32", "brokers in the cluster"),
    _c("duration_ms", "int64", "ms of writes under faults"),
    _c("settle_ms", "int64", "ms after the writes, every fault healed, to settle"),
    _c("interval_ms", "int32", "the producer sends one batch every interval_ms"),
    _c("batch", "int32", "records per batch"),
    _c("fault_kinds", "string", "the fault kinds this trial drew, comma separated, sorted"),
    _c("mean_fault_interval_ms", "int64", "mean time between faults this trial drew"),
    _c("fault_actions", "int32", "scheduled fault actions (a crash and its restart are two)"),
    _c("bursts", "int32", "producer bursts in the schedule"),
    _c("burst_records", "int64", "records sent in bursts"),
    _c("produced", "int64", "records the producer sent"),
    _c("acked", "int64", "records acknowledged to the producer"),
    _c("lost_acked", "int64", "acknowledged records no replica holds at the end"),
    _c("divergent", "bool", "replicas hold different records below their common HW"),
    _c("duplicates", "int64", "records a leader holds twice"),
    _c("out_of_order", "int64", "workload records reordered in the leader's log"),
    _c("hw_regressions", "int32", "times a HW moved backwards"),
    _c("two_leaders", "int32", "leader epochs that had two leaders"),
    _c("unclean_elections", "int32", "leaders elected from outside the ISR"),
    _c("leader_elections", "int32", "leader changes the controller committed"),
    _c("isr_shrinks", "int32", "committed ISR changes that removed a replica"),
    _c("isr_expands", "int32", "committed ISR changes that added a replica"),
    _c("offline_ms", "int64", "ms the partition had no leader"),
    _c(
        "unavailable_ms",
        "int64",
        "ms of writes refused: interval_ms per workload batch never acknowledged; "
        "null for acks=0 (that producer never learns)",
        True,
    ),
    _c("latency_p50_ms", "double", "median ms from send to acknowledgement", True),
    _c("latency_p99_ms", "double", "99th percentile of the same (linear interpolation)", True),
    _c("latency_max_ms", "int64", "slowest acknowledgement", True),
    _c("final_leader", "int32", "the leader at the end; null when offline", True),
    _c("safe", "bool", "nothing acknowledged lost, no divergence, HW regression or two leaders"),
    _c("events", "int64", "rows this trial has in the events table"),
    _c("trace_events", "int64", "events in the trial's whole trace"),
)

EVENTS: tuple[Column, ...] = (
    _c("trial_id", "int64", "the trial (joins trials.trial_id)"),
    _c("seq", "int64", "the event's place in the trial's trace"),
    _c("time_ms", "int64", "simulated ms since the trial started"),
    _c("kind", "string", "the trace event kind (kafkalab.EVENT_KINDS)"),
    _c("node", "string", "where it happened: a broker id, controller, zk, producer, c1..c3"),
    _c("broker", "int32", "the broker it concerns", True),
    _c("leader", "int32", "the leader it names", True),
    _c("leader_epoch", "int32", "the leader epoch it names", True),
    _c("hw", "int64", "at a broker: that replica's HW after the event", True),
    _c("leo", "int64", "at a broker: that replica's LEO after the event", True),
    _c("isr_size", "int32", "size of the ISR the event carries", True),
    _c("isr", "list<int32>", "the ISR the event carries", True),
    _c("records", "int64", "records appended, replicated, truncated or in the batch", True),
    _c("error", "string", "the error of a produce result or a fetch", True),
    _c("latency_ms", "int64", "produce_result: ms since the batch was first sent", True),
    _c("reason", "string", "why: ISR change, election, truncation, power_loss on a crash", True),
)

# Trace event kinds left out of the events table: message traffic and the calls that started
# a step (the produce_result row carries what the produce row would).
EXCLUDED_KINDS = frozenset({"step", "send", "deliver", "drop", "hold", "produce"})


def arrow_schema(columns: tuple[Column, ...]) -> Any:
    """The pyarrow schema of a table (pyarrow is imported here, not by the package)."""
    import pyarrow as pa

    types = {
        "int32": pa.int32(),
        "int64": pa.int64(),
        "double": pa.float64(),
        "bool": pa.bool_(),
        "string": pa.string(),
        "list<int32>": pa.list_(pa.int32()),
    }
    return pa.schema([pa.field(c.name, types[c.type], nullable=c.nullable) for c in columns])


def schema_document() -> dict[str, Any]:
    """The schema as plain data: what ``datasets/schema.json`` holds."""

    def table(columns: tuple[Column, ...]) -> list[dict[str, Any]]:
        return [
            {"name": c.name, "type": c.type, "nullable": c.nullable, "description": c.description}
            for c in columns
        ]

    return {
        "schema_version": SCHEMA_VERSION,
        "tables": {"trials": table(TRIALS), "events": table(EVENTS)},
        "events_excluded_kinds": sorted(EXCLUDED_KINDS),
    }


if __name__ == "__main__":  # python -m kafkalab.campaign.schema > datasets/schema.json
    import json

    print(json.dumps(schema_document(), indent=2))
