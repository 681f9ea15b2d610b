"""Named invariants, checked as the trace grows, and the end-of-run report.

The invariants hold for a safe configuration (acks=all, min.insync.replicas=2 with three
replicas, unclean election off, leader epochs on); with unsafe settings the report shows how
they break.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalab.errors import KafkalabError
from kafkalab.sim.trace import Event

if TYPE_CHECKING:
    from kafkalab.sim.cluster import Cluster

__all__ = ["INVARIANTS", "InvariantMonitor", "InvariantViolation", "Report", "build_report"]

INVARIANTS: dict[str, str] = {
    "no_acked_loss": "every acknowledged record is in the current leader's log",
    "logs_agree_below_hw": "two replicas hold the same records below both their HWs",
    "hw_monotonic": "no replica truncates its log below its own high watermark",
    "one_leader_per_epoch": "no two brokers lead a partition in the same leader epoch",
    "controller_epoch_monotonic": "each newly elected controller has a higher controller epoch",
    "no_stale_controller_effect": (
        "no broker acts on a request from an older controller epoch than one it has acted on"
    ),
}

_STATE_KINDS = frozenset(
    ("append", "replicate", "truncate", "hw", "became_leader", "partition_state", "restart")
)


class InvariantViolation(KafkalabError, AssertionError):
    """A named invariant failed; the message says how to replay the run."""


@dataclass
class Report:
    """What went wrong (or right) in a run. Record values identify records."""

    acked: list[str] = field(default_factory=list)
    lost_acked: list[str] = field(default_factory=list)
    divergent: bool = False
    divergence: list[dict[str, Any]] = field(default_factory=list)
    hw_regressions: list[dict[str, Any]] = field(default_factory=list)
    two_leaders: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    isr_shrinks: int = 0
    isr_expands: int = 0
    unclean_elections: int = 0
    duplicates: list[str] = field(default_factory=list)  # values held twice by a leader
    reordered: list[str] = field(default_factory=list)  # written after a record sent later
    consumed: dict[str, list[str]] = field(default_factory=dict)  # what each consumer read
    processed: dict[str, list[str]] = field(default_factory=dict)  # what it processed
    aborted_reads: list[str] = field(default_factory=list)  # read_committed saw an aborted record
    txn_errors: dict[str, list[str]] = field(default_factory=dict)  # producer -> "op: ERROR"
    consumer_errors: dict[str, list[str]] = field(default_factory=dict)  # "partition: ERROR"
    # Control requests a broker refused: {broker, request, error} (STALE_CONTROLLER_EPOCH for a
    # zombie controller; STALE_BROKER_EPOCH, KIP-380, for one meant for an earlier incarnation).
    rejected_requests: list[dict[str, Any]] = field(default_factory=list)
    # Transaction markers a partition leader refused: {broker, partition, control, error}.
    fenced_markers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        """True when nothing acknowledged was lost, no logs diverge, no HW regressed and no
        epoch had two leaders."""
        return not (self.lost_acked or self.divergent or self.hw_regressions or self.two_leaders)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        lines = [
            f"acknowledged: {len(self.acked)} record(s)",
            f"acknowledged but lost: {self.lost_acked or 'none'}",
            f"divergent logs: {'yes' if self.divergent else 'no'}",
        ]
        for d in self.divergence:
            lines.append(
                f"  offset {d['offset']}: "
                + ", ".join(f"broker {b} has {v}" for b, v in d["records"].items())
            )
        for h in self.hw_regressions:
            lines.append(
                f"HW moved backwards on broker {h['broker']}: {h['old_hw']} -> {h['to']} "
                f"({h['reason']}, removed {h['removed']})"
            )
        for t in self.two_leaders:
            lines.append(
                f"two leaders of {t['partition']} in epoch {t['leader_epoch']}: "
                f"brokers {t['brokers']}"
            )
        if self.errors:
            lines.append("client errors: " + ", ".join(f"{k}: {v}" for k, v in self.errors.items()))
        if self.duplicates:
            lines.append(f"duplicated records: {self.duplicates}")
        if self.reordered:
            lines.append(f"records written out of send order: {self.reordered}")
        for name, values in self.consumed.items():
            lines.append(f"consumer {name} read: {values}")
        if self.aborted_reads:
            lines.append(f"read_committed consumers read aborted records: {self.aborted_reads}")
        for name, errors in self.txn_errors.items():
            lines.append(f"transaction errors of {name}: {', '.join(errors)}")
        for name, errors in self.consumer_errors.items():
            lines.append(f"consumer errors of {name}: {', '.join(errors)}")
        for r in self.rejected_requests:
            lines.append(f"broker {r['broker']} rejected {r['request']}: {r['error']}")
        for f in self.fenced_markers:
            lines.append(
                f"broker {f['broker']} refused a {f['control']} marker on {f['partition']}: "
                f"{f['error']}"
            )
        lines.append(
            f"ISR shrinks: {self.isr_shrinks}, expands: {self.isr_expands}, "
            f"unclean elections: {self.unclean_elections}"
        )
        return "\n".join(lines)


class InvariantMonitor:
    """Reads the trace as it is written. With ``raise_on_violation`` it checks every invariant
    after each state change and raises :class:`InvariantViolation` at the first failure."""

    def __init__(self, cluster: Cluster, *, raise_on_violation: bool) -> None:
        self.cluster = cluster
        self.raise_on_violation = raise_on_violation
        self.acked: dict[str, tuple[str, int]] = {}  # value -> (partition, offset)
        self.errors: dict[str, str] = {}
        self.leaders: dict[tuple[str, int], int] = {}  # (partition, leader epoch) -> broker
        self.controller_epochs: list[int] = []  # as controllers were elected
        self.accepted_epoch: dict[str, int] = {}  # broker -> highest controller epoch acted on
        self.controller_violations: list[dict[str, Any]] = []
        self.two_leaders: list[dict[str, Any]] = []
        self.hw_regressions: list[dict[str, Any]] = []
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.unclean_elections = 0
        self._last_isr: tuple[int, ...] | None = tuple(cluster.replicas)  # initial ISR

    def observe(self, e: Event) -> None:
        kind, data = e.kind, e.data
        if kind == "produce_result":
            self._on_result(data)
        elif kind == "became_leader":
            epoch, broker = data["leader_epoch"], int(e.node)
            other = self.leaders.setdefault((data["tp"], epoch), broker)
            if other != broker:
                self.two_leaders.append(
                    {"partition": data["tp"], "leader_epoch": epoch, "brokers": [other, broker]}
                )
            self._on_controller_request(e)
        elif kind == "became_follower":
            self._on_controller_request(e)
        elif kind == "controller_elected":
            if self.controller_epochs and data["controller_epoch"] <= self.controller_epochs[-1]:
                self.controller_violations.append(
                    {
                        "invariant": "controller_epoch_monotonic",
                        "message": f"controller epoch {data['controller_epoch']} after "
                        f"{self.controller_epochs[-1]}",
                    }
                )
            self.controller_epochs.append(data["controller_epoch"])
        elif kind == "truncate" and data["to"] < data["old_hw"]:
            self.hw_regressions.append(
                {
                    "broker": int(e.node),
                    **{k: data[k] for k in ("to", "old_hw", "removed", "reason")},
                }
            )
        elif kind == "partition_state":
            self._on_partition_state(data)
        if self.raise_on_violation and kind in _STATE_KINDS:
            self._check(e)

    def _on_controller_request(self, e: Event) -> None:
        epoch = e.data.get("controller_epoch", 0)
        seen = self.accepted_epoch.get(e.node, 0)
        if epoch < seen:
            self.controller_violations.append(
                {
                    "invariant": "no_stale_controller_effect",
                    "message": f"broker {e.node} acted on controller epoch {epoch} after {seen}",
                }
            )
        self.accepted_epoch[e.node] = max(seen, epoch)

    def _on_result(self, data: dict[str, Any]) -> None:
        error = data["error"]
        for i, value in enumerate(data["values"]):
            if error == "NONE":
                self.acked[value] = (data["tp"], data["base_offset"] + i)
                self.errors.pop(value, None)
            elif error != "UNKNOWN":
                self.errors[value] = error

    def _on_partition_state(self, data: dict[str, Any]) -> None:
        isr = tuple(data["isr"])
        if self._last_isr is not None:
            if len(isr) < len(self._last_isr):
                self.isr_shrinks += 1
            elif len(isr) > len(self._last_isr):
                self.isr_expands += 1
        self._last_isr = isr
        if data.get("unclean"):
            self.unclean_elections += 1

    def _check(self, e: Event) -> None:
        problem = first_violation(self.cluster, self)
        if problem is not None:
            name, message = problem
            c = self.cluster
            raise InvariantViolation(
                f"invariant {name} failed at {e.time_ms} ms (trace event {e.seq}): {message}\n"
                f"replay: Cluster(brokers={len(c.broker_ids)}, config={c.config.as_dict()!r}, "
                f"seed={c.seed}, mode={c.mode!r}) with the same steps or fault schedule"
            )


def first_violation(cluster: Cluster, monitor: InvariantMonitor) -> tuple[str, str] | None:
    """The first named invariant that does not hold now, with a readable message."""
    if monitor.two_leaders:
        t = monitor.two_leaders[0]
        return "one_leader_per_epoch", (
            f"brokers {t['brokers']} both led {t['partition']} in epoch {t['leader_epoch']}"
        )
    if monitor.controller_violations:
        v = monitor.controller_violations[0]
        return v["invariant"], v["message"]
    if monitor.hw_regressions:
        h = monitor.hw_regressions[0]
        return "hw_monotonic", (
            f"broker {h['broker']} truncated to {h['to']} below its HW {h['old_hw']}"
        )
    lost = _lost_acked(cluster, monitor.acked)
    if lost:
        return "no_acked_loss", f"acknowledged {lost} missing from their leader's log"
    divergence = _divergence(cluster, below_hw=True)
    if divergence:
        d = divergence[0]
        return "logs_agree_below_hw", (
            f"{d['partition']} offset {d['offset']} below the HW holds {d['records']}"
        )
    return None


def _logs(cluster: Cluster, tp: str) -> dict[int, Any]:
    out = {}
    for b in cluster.running():
        r = cluster.sim.actors[b].partitions.get(tp)
        if r is not None:
            out[b] = r.log
    return out


def _lost_acked(cluster: Cluster, acked: dict[str, tuple[str, int]]) -> list[str]:
    """Acknowledged values absent from their partition leader's log; with no running leader,
    absent from every replica of the partition (running or on disk)."""
    if not acked:
        return []
    states = cluster.partition_states()
    present: dict[str, set[str]] = {}
    for tp in {tp for tp, _ in acked.values()}:
        leader = states[tp].leader
        logs = _logs(cluster, tp)
        if leader is not None and leader in logs:
            present[tp] = {rec.value for rec in logs[leader].records}
        else:
            views = cluster.replicas_view(tp).values()
            present[tp] = {v for view in views for v in view.values}
    return [v for v, (tp, _) in acked.items() if v not in present[tp]]


def _divergence(cluster: Cluster, *, below_hw: bool) -> list[dict[str, Any]]:
    """For each partition and pair of its running replicas, the first offset where both hold a
    record and the records differ (value or leader epoch)."""
    found = []
    for tp in cluster.partitions():
        logs = _logs(cluster, tp)
        brokers = sorted(logs)
        for i, a in enumerate(brokers):
            for b in brokers[i + 1 :]:
                la, lb = logs[a], logs[b]
                limit = min(la.hw, lb.hw) if below_hw else min(la.leo, lb.leo)
                for off in range(limit):
                    ra, rb = la.records[off], lb.records[off]
                    if ra.value != rb.value or ra.leader_epoch != rb.leader_epoch:
                        found.append(
                            {
                                "partition": tp,
                                "offset": off,
                                "records": {
                                    a: f"{ra.value} (epoch {ra.leader_epoch})",
                                    b: f"{rb.value} (epoch {rb.leader_epoch})",
                                },
                            }
                        )
                        break
    return found


def build_report(cluster: Cluster) -> Report:
    mon = cluster.monitor
    divergence = _divergence(cluster, below_hw=False)
    return Report(
        acked=list(mon.acked),
        lost_acked=_lost_acked(cluster, mon.acked),
        divergent=bool(divergence),
        divergence=divergence,
        hw_regressions=list(mon.hw_regressions),
        two_leaders=list(mon.two_leaders),
        errors=dict(mon.errors),
        isr_shrinks=mon.isr_shrinks,
        isr_expands=mon.isr_expands,
        unclean_elections=mon.unclean_elections,
        duplicates=_duplicates(cluster),
        reordered=_reordered(cluster),
        **_client_outcomes(cluster),
    )


def _reordered(cluster: Cluster) -> list[str]:
    """Records of a named producer that its partition leader holds after a record the producer
    sent later (a retry overtaken by a later batch: max.in.flight > 1 without idempotence)."""
    sent: dict[tuple[str, str], int] = {}  # (partition, value) -> send order
    for e in cluster.trace.events:
        if e.kind == "produce" and e.data.get("attempt") == 1:
            for value in e.data["values"]:
                sent.setdefault((e.data["tp"], value), len(sent))
    found: list[str] = []
    states = cluster.partition_states()
    for tp in cluster.partitions():
        leader = states[tp].leader
        logs = _logs(cluster, tp)
        if tp.startswith("__") or leader not in logs:
            continue
        highest = -1
        for rec in logs[leader].records:
            order = sent.get((tp, rec.value))
            if order is None:
                continue
            if order < highest and rec.value not in found:
                found.append(rec.value)
            highest = max(highest, order)
    return found


def _client_outcomes(cluster: Cluster) -> dict[str, Any]:
    """What consumers read and processed, transaction errors, and any record a read_committed
    consumer read although its transaction was aborted (judged from the final logs)."""
    consumed: dict[str, list[str]] = {}
    processed: dict[str, list[str]] = {}
    txn_errors: dict[str, list[str]] = {}
    consumer_errors: dict[str, list[str]] = {}
    committed_reads: list[tuple[str, int, int, str]] = []
    for e in cluster.trace.events:
        d = e.data
        if e.kind == "consumer_records":
            consumed.setdefault(d["consumer"], []).extend(r[1] for r in d["records"])
            if d["isolation"] == "read_committed":
                committed_reads.extend((d["tp"], r[0], r[2], r[1]) for r in d["records"])
        elif e.kind == "consumer_processed":
            processed.setdefault(d["consumer"], []).extend(r[2] for r in d["records"])
        elif e.kind == "txn_client" and d["error"] != "NONE":
            txn_errors.setdefault(d["producer"], []).append(f"{d['op']}: {d['error']}")
        elif e.kind == "consumer_error":
            consumer_errors.setdefault(d["consumer"], []).append(f"{d['tp']}: {d['error']}")
    aborted = aborted_ranges(cluster)
    aborted_reads = [
        value
        for tp, offset, pid, value in committed_reads
        if any(p == pid and first <= offset < last for p, first, last in aborted.get(tp, ()))
    ]
    return {
        "consumed": consumed,
        "processed": processed,
        "aborted_reads": aborted_reads,
        "txn_errors": txn_errors,
        "consumer_errors": consumer_errors,
        **_refusals(cluster),
    }


_FENCING_ERRORS = ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED", "TRANSACTION_COORDINATOR_FENCED")
_REJECTIONS = {
    "stale_controller_request": "STALE_CONTROLLER_EPOCH",
    "stale_broker_epoch": "STALE_BROKER_EPOCH",
}


def _refusals(cluster: Cluster) -> dict[str, list[dict[str, Any]]]:
    """Control requests brokers rejected (each broker, request type and error once, in the
    order first seen), and the transaction markers partition leaders refused (read from the
    messages they sent, so only a run that traces messages shows them)."""
    rejected: list[dict[str, Any]] = []
    fenced: list[dict[str, Any]] = []
    for e in cluster.trace.events:
        if e.kind in _REJECTIONS:
            entry = {
                "broker": e.data["broker"],
                "request": e.data["request"],
                "error": _REJECTIONS[e.kind],
            }
            if entry not in rejected:
                rejected.append(entry)
        elif e.kind == "send" and type(e.data["msg"]).__name__ == "WriteTxnMarkersResponse":
            msg = e.data["msg"]
            if msg.error in _FENCING_ERRORS:
                fenced.append(
                    {
                        "broker": e.node,
                        "partition": msg.tp,
                        "control": msg.control,
                        "error": msg.error,
                    }
                )
    return {"rejected_requests": rejected, "fenced_markers": fenced}


def aborted_ranges(cluster: Cluster) -> dict[str, list[tuple[int, int, int]]]:
    """(producer id, first offset, ABORT marker offset) of every aborted transaction, read
    from the longest log of each partition, independently of the brokers' own index."""
    found: dict[str, list[tuple[int, int, int]]] = {}
    for tp in cluster.partitions():
        logs = _logs(cluster, tp)
        if not logs:
            continue
        log = max(logs.values(), key=lambda v: len(v.records))
        open_at: dict[int, int] = {}
        for rec in log.records:
            if rec.control:
                first = open_at.pop(rec.producer_id, None)
                if first is not None and rec.control == "ABORT":
                    found.setdefault(tp, []).append((rec.producer_id, first, rec.offset))
            elif rec.transactional:
                open_at.setdefault(rec.producer_id, rec.offset)
    return found


def _duplicates(cluster: Cluster) -> list[str]:
    """Values that appear more than once in a partition leader's log (a retry without
    idempotence writes the same record twice)."""
    found: list[str] = []
    states = cluster.partition_states()
    for tp in cluster.partitions():
        if tp.startswith("__"):
            continue  # the internal topics repeat values by design
        logs = _logs(cluster, tp)
        leader = states[tp].leader
        if leader not in logs:
            continue
        seen: set[str] = set()
        for rec in logs[leader].records:
            if rec.control:
                continue
            if rec.value in seen and rec.value not in found:
                found.append(rec.value)
            seen.add(rec.value)
    return found
