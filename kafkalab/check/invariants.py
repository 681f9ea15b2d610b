"""Named invariants: each one an object that reads the trace one event at a time.

The invariants hold for a safe configuration (acks=all, min.insync.replicas=2 with three
replicas, unclean election off, leader epochs on); with unsafe settings they show how it breaks.

Each invariant has a ``name`` and a ``meaning`` (:data:`INVARIANTS` lists them), ``observe(event)``
to update its own bookkeeping from one trace event of its ``kinds``, and ``verify()``, the
message of its first violation (None while it holds). The two that judge replica logs also read
what the replicas hold now (a :class:`~kafkalab.check.logs.LogView`), but only the records that
changed since they last looked: a check costs the same at the end of a long run as at its start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from kafkalab.check.logs import LogView, divergence

# Importable from here as before the report had its own module.
from kafkalab.check.report import Report, aborted_ranges
from kafkalab.errors import InvariantViolation
from kafkalab.protocol.log import Log, Record
from kafkalab.sim.trace import Event

__all__ = [
    "INVARIANTS",
    "REGISTRY",
    "ControllerEpochMonotonic",
    "HwMonotonic",
    "Invariant",
    "InvariantViolation",
    "LogsAgreeBelowHw",
    "NoAckedLoss",
    "NoStaleControllerEffect",
    "OneLeaderPerEpoch",
    "Report",
    "aborted_ranges",
    "new_invariants",
]


class Invariant(Protocol):
    """What every named invariant offers (see the module docstring)."""

    name: ClassVar[str]
    meaning: ClassVar[str]
    kinds: ClassVar[frozenset[str]]  # the trace event kinds observe() reads
    reads_logs: ClassVar[bool]  # built with a LogView, to read what replicas hold now

    def observe(self, event: Event) -> None: ...

    def verify(self) -> str | None: ...


class OneLeaderPerEpoch:
    name: ClassVar[str] = "one_leader_per_epoch"
    meaning: ClassVar[str] = "no two brokers lead a partition in the same leader epoch"
    kinds: ClassVar[frozenset[str]] = frozenset({"became_leader"})
    reads_logs: ClassVar[bool] = False

    def __init__(self) -> None:
        self.leaders: dict[tuple[str, int], int] = {}  # (partition, leader epoch) -> broker
        self.violations: list[dict[str, Any]] = []  # {partition, leader_epoch, brokers}

    def observe(self, event: Event) -> None:
        tp, epoch, broker = event.data["tp"], event.data["leader_epoch"], int(event.node)
        other = self.leaders.setdefault((tp, epoch), broker)
        if other != broker:
            self.violations.append(
                {"partition": tp, "leader_epoch": epoch, "brokers": [other, broker]}
            )

    def verify(self) -> str | None:
        if not self.violations:
            return None
        t = self.violations[0]
        return f"brokers {t['brokers']} both led {t['partition']} in epoch {t['leader_epoch']}"


class ControllerEpochMonotonic:
    name: ClassVar[str] = "controller_epoch_monotonic"
    meaning: ClassVar[str] = "each newly elected controller has a higher controller epoch"
    kinds: ClassVar[frozenset[str]] = frozenset({"controller_elected"})
    reads_logs: ClassVar[bool] = False

    def __init__(self) -> None:
        self.epochs: list[int] = []  # as controllers were elected
        self.violations: list[str] = []

    def observe(self, event: Event) -> None:
        epoch = event.data["controller_epoch"]
        if self.epochs and epoch <= self.epochs[-1]:
            self.violations.append(f"controller epoch {epoch} after {self.epochs[-1]}")
        self.epochs.append(epoch)

    def verify(self) -> str | None:
        return self.violations[0] if self.violations else None


class NoStaleControllerEffect:
    name: ClassVar[str] = "no_stale_controller_effect"
    meaning: ClassVar[str] = (
        "no broker acts on a request from an older controller epoch than one it has acted on"
    )
    kinds: ClassVar[frozenset[str]] = frozenset({"became_leader", "became_follower"})
    reads_logs: ClassVar[bool] = False

    def __init__(self) -> None:
        self.accepted_epoch: dict[str, int] = {}  # broker -> highest controller epoch acted on
        self.violations: list[str] = []

    def observe(self, event: Event) -> None:
        epoch = event.data.get("controller_epoch", 0)
        seen = self.accepted_epoch.get(event.node, 0)
        if epoch < seen:
            self.violations.append(
                f"broker {event.node} acted on controller epoch {epoch} after {seen}"
            )
        self.accepted_epoch[event.node] = max(seen, epoch)

    def verify(self) -> str | None:
        return self.violations[0] if self.violations else None


class HwMonotonic:
    name: ClassVar[str] = "hw_monotonic"
    meaning: ClassVar[str] = "no replica truncates its log below its own high watermark"
    kinds: ClassVar[frozenset[str]] = frozenset({"truncate"})
    reads_logs: ClassVar[bool] = False

    def __init__(self) -> None:
        self.violations: list[dict[str, Any]] = []  # {broker, to, old_hw, removed, reason}

    def observe(self, event: Event) -> None:
        data = event.data
        if data["to"] < data["old_hw"]:
            self.violations.append(
                {
                    "broker": int(event.node),
                    **{k: data[k] for k in ("to", "old_hw", "removed", "reason")},
                }
            )

    def verify(self) -> str | None:
        if not self.violations:
            return None
        h = self.violations[0]
        return f"broker {h['broker']} truncated to {h['to']} below its HW {h['old_hw']}"


@dataclass
class _Holdings:
    """One partition's acknowledged values and the values its leader's log holds, indexed up to
    ``indexed`` records of ``log`` (the leader's log object, on broker ``broker``)."""

    acked: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)  # acked, not (yet) seen in the index
    values: set[str] = field(default_factory=set)
    broker: int | None = None
    log: Log | None = None
    indexed: int = 0
    last: Record | None = None  # the last record indexed, to notice a log that changed
    stale: bool = True  # the index must be rebuilt before it is read


class NoAckedLoss:
    """Acknowledged values stay in their partition leader's log; with no running leader, in some
    replica of the partition (running or on disk)."""

    name: ClassVar[str] = "no_acked_loss"
    meaning: ClassVar[str] = "every acknowledged record is in the current leader's log"
    kinds: ClassVar[frozenset[str]] = frozenset({"produce_result", "truncate"})
    reads_logs: ClassVar[bool] = True

    def __init__(self, logs: LogView) -> None:
        self.logs = logs
        # value -> its partition, and the offset it was acknowledged at: two maps of plain
        # values, so a burst of acknowledgements adds no objects for the collector to walk
        self.acked: dict[str, str] = {}
        self.acked_at: dict[str, int] = {}
        self._by_tp: dict[str, _Holdings] = {}

    def observe(self, event: Event) -> None:
        data = event.data
        if event.kind == "truncate":
            h = self._by_tp.get(data["tp"])
            if h is not None and h.broker == int(event.node):
                h.stale = True
        elif data["error"] == "NONE":
            tp = data["tp"]
            h = self._by_tp.get(tp) or self._by_tp.setdefault(tp, _Holdings())
            acked, acked_at = self.acked, self.acked_at
            offset: int = data["base_offset"]
            one_partition = len(self._by_tp) == 1  # then no value was acknowledged elsewhere
            h_acked, h_missing, h_values = h.acked, h.missing, h.values
            for value in data["values"]:  # plain loops: most batches hold a record or a few
                if not one_partition:
                    before = acked.get(value)
                    if before is not None and before != tp:  # acknowledged again elsewhere
                        self._by_tp[before].acked.discard(value)
                        self._by_tp[before].missing.discard(value)
                acked[value] = tp
                acked_at[value] = offset
                offset += 1
                h_acked.add(value)
                if value not in h_values:
                    h_missing.add(value)

    def lost(self) -> list[str]:
        """The acknowledged values their partition no longer holds, in acknowledgement order."""
        if not self.acked:
            return []
        leaders = self.logs.leaders()
        lost_any = False
        for tp, h in self._by_tp.items():
            if not h.acked:
                continue
            leader = leaders[tp]
            live = self.logs.live(tp)
            if leader is not None and leader in live:
                self._index(h, leader, live[leader])
            else:
                h.stale = True
                present = self.logs.every_value(tp)
                h.missing = {v for v in h.acked if v not in present}
            lost_any = lost_any or bool(h.missing)
        if not lost_any:
            return []
        return [v for v, tp in self.acked.items() if v in self._by_tp[tp].missing]

    def _index(self, h: _Holdings, leader: int, log: Log) -> None:
        """Bring the index up to the leader's log: read only what was appended since the last
        look, or all of it when the leader, its log or its tail changed."""
        records, n = log.records, h.indexed
        if (
            h.stale
            or h.broker != leader
            or h.log is not log
            or len(records) < n
            or (n and records[n - 1] is not h.last)
        ):
            h.broker, h.log, h.stale = leader, log, False
            h.values, h.missing, h.indexed, h.last = set(), set(h.acked), 0, None
            n = 0
        if len(records) == n:
            return
        new = {rec.value for rec in records[n:]}
        h.values |= new
        if h.missing:
            h.missing -= new
        h.indexed, h.last = len(records), records[-1]

    def verify(self) -> str | None:
        lost = self.lost()
        return f"acknowledged {lost} missing from their leader's log" if lost else None


@dataclass
class _Checked:
    """How far one replica's log is known to agree with its partition's agreed prefix."""

    log: Log
    upto: int
    last: Record | None  # the record at upto - 1 when it was checked


@dataclass
class _Agreement:
    """One partition's agreed prefix: the records every running replica holds below its HW."""

    prefix: list[Record] = field(default_factory=list)
    checked: dict[int, _Checked] = field(default_factory=dict)  # broker -> its progress
    cuts: dict[int, int] = field(default_factory=dict)  # broker -> lowest truncation since


class LogsAgreeBelowHw:
    """Two replicas hold the same records (value and leader epoch) below both their HWs.

    A follower still looking for its truncation point is left out until it finds it: a replica
    that restarts reads its HW from its checkpoint and may hold, below it, a record the new
    leader never had (one acknowledged, then lost with the power); Kafka removes it when the
    leader says where the follower's last epoch ends (KIP-101). The records that disagree after
    that are the divergence KIP-101 and KIP-279 close.

    Rather than compare every pair of replicas from offset 0 after each event, it keeps, per
    partition, the prefix the replicas agree on (as long as the highest HW) and, per replica,
    how far its log has been checked against it: an event costs only the records appended or
    re-appended since. A mismatch is named exactly as a full comparison of every pair would
    name it (:func:`~kafkalab.check.logs.divergence`)."""

    name: ClassVar[str] = "logs_agree_below_hw"
    meaning: ClassVar[str] = (
        "two replicas hold the same records below both their HWs, once each has truncated"
    )
    kinds: ClassVar[frozenset[str]] = frozenset({"truncate"})
    reads_logs: ClassVar[bool] = True

    def __init__(self, logs: LogView) -> None:
        self.logs = logs
        self._by_tp: dict[str, _Agreement] = {}

    def observe(self, event: Event) -> None:
        a = self._by_tp.get(event.data["tp"])
        if a is not None:
            broker, to = int(event.node), event.data["to"]
            a.cuts[broker] = min(to, a.cuts.get(broker, to))

    def verify(self) -> str | None:
        for tp in self.logs.partitions():
            live = self.logs.settled(tp)
            a = self._by_tp.get(tp) or self._by_tp.setdefault(tp, _Agreement())
            if _agrees(a, live):
                continue
            found = divergence(self.logs, below_hw=True)
            if found:
                d = found[0]
                return f"{d['partition']} offset {d['offset']} below the HW holds {d['records']}"
            # Only a replica gone or rolled back since could leave a prefix no replica holds
            # now: start this partition's bookkeeping over.
            self._by_tp[tp] = a = _Agreement()
            _agrees(a, live)
        return None


def _agrees(a: _Agreement, live: dict[int, Log]) -> bool:
    """Check each running replica's records below its HW against the agreed prefix, from where
    it was last checked; extend the prefix as HWs pass its end. False at the first mismatch."""
    prefix = a.prefix
    hw_max = max((log.hw for log in live.values()), default=0)
    if len(prefix) > hw_max:  # what no running replica holds below its HW is not agreed
        del prefix[hw_max:]
    for b in [b for b in a.checked if b not in live]:
        del a.checked[b]
    for b, log in live.items():
        start = _still_agreed(a.checked.get(b), log, a.cuts.pop(b, None), len(prefix))
        records, hw = log.records, log.hw
        for off in range(start, min(hw, len(prefix))):
            rec, agreed = records[off], prefix[off]
            if rec is not agreed and (
                rec.value != agreed.value or rec.leader_epoch != agreed.leader_epoch
            ):
                a.checked.pop(b, None)
                return False
        if hw > len(prefix):
            prefix.extend(records[len(prefix) : hw])
        upto = max(start, hw)
        a.checked[b] = _Checked(log, upto, records[upto - 1] if upto else None)
    return True


def _still_agreed(c: _Checked | None, log: Log, cut: int | None, agreed: int) -> int:
    """How many of ``log``'s first records are still known to match the agreed prefix: none for
    a new log (a restarted broker) or one whose checked tail changed unseen, else what was
    checked, less what was truncated since and what fell off the prefix."""
    if c is None or c.log is not log:
        return 0
    upto, last, records = c.upto, c.last, log.records
    if len(records) < upto or (upto and records[upto - 1] is not last):
        if cut is None or cut >= upto:
            return 0
    return min(upto, agreed, len(records), upto if cut is None else cut)


# In the order INVARIANTS has always listed them.
REGISTRY: dict[str, type[Invariant]] = {
    cls.name: cls
    for cls in (
        NoAckedLoss,
        LogsAgreeBelowHw,
        HwMonotonic,
        OneLeaderPerEpoch,
        ControllerEpochMonotonic,
        NoStaleControllerEffect,
    )
}

INVARIANTS: dict[str, str] = {name: cls.meaning for name, cls in REGISTRY.items()}
"""Each named invariant and what it means."""


def new_invariants(logs: LogView) -> dict[str, Invariant]:
    """A fresh object for each named invariant, for one run whose replica logs ``logs`` shows."""
    return {
        name: cls(logs) if cls.reads_logs else cls()  # type: ignore[call-arg]
        for name, cls in REGISTRY.items()
    }
