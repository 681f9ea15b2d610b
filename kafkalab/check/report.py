"""The end-of-run report: what the invariants found, and what clients saw and did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.check.logs import ClusterLogs, LogView, divergence
from kafkalab.sim.outcome import Report, out_of_send_order
from kafkalab.sim.trace import Event, Trace

if TYPE_CHECKING:
    from kafkalab.sim.cluster import Cluster

__all__ = ["Report", "RunStats", "aborted_ranges", "build_report"]


class RunStats:
    """What the report counts besides the invariants: each record's last client error, ISR
    shrinks and expands, unclean elections."""

    kinds = frozenset({"produce_result", "partition_state"})

    def __init__(self, initial_isr: tuple[int, ...]) -> None:
        self.errors: dict[str, str] = {}
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.unclean_elections = 0
        self._last_isr = initial_isr

    def observe(self, event: Event) -> None:
        data = event.data
        if event.kind == "produce_result":
            error = data["error"]
            if error == "NONE":
                if self.errors:
                    for value in data["values"]:
                        self.errors.pop(value, None)
            elif error != "UNKNOWN":
                for value in data["values"]:
                    self.errors[value] = error
            return
        isr = tuple(data["isr"])
        if len(isr) < len(self._last_isr):
            self.isr_shrinks += 1
        elif len(isr) > len(self._last_isr):
            self.isr_expands += 1
        self._last_isr = isr
        if data.get("unclean"):
            self.unclean_elections += 1


def build_report(
    cluster: Cluster,
    *,
    acked: list[str],
    lost_acked: list[str],
    hw_regressions: list[dict[str, Any]],
    two_leaders: list[dict[str, Any]],
    stats: RunStats,
) -> Report:
    """The report of ``cluster``'s run so far: what the invariant monitor found in its trace,
    with what the replicas hold now and what the clients saw."""
    logs = ClusterLogs(cluster)
    found = divergence(logs, below_hw=False)
    return Report(
        acked=acked,
        lost_acked=lost_acked,
        divergent=bool(found),
        divergence=found,
        hw_regressions=hw_regressions,
        two_leaders=two_leaders,
        errors=dict(stats.errors),
        isr_shrinks=stats.isr_shrinks,
        isr_expands=stats.isr_expands,
        unclean_elections=stats.unclean_elections,
        duplicates=_duplicates(logs),
        reordered=_reordered(cluster.trace, logs),
        **_client_outcomes(cluster.trace, logs),
    )


def _reordered(trace: Trace, logs: LogView) -> list[str]:
    """Records of a named producer that its partition leader holds after a record the producer
    sent later (a retry overtaken by a later batch: max.in.flight > 1 without idempotence)."""
    sent: dict[tuple[str, str], int] = {}  # (partition, value) -> send order
    for e in trace.events:
        if e.kind == "produce" and e.data.get("attempt") == 1:
            for value in e.data["values"]:
                sent.setdefault((e.data["tp"], value), len(sent))
    found: list[str] = []
    if not sent:
        return found
    leaders = logs.leaders()
    for tp in logs.partitions():
        live = logs.live(tp)
        leader = leaders[tp]
        if tp.startswith("__") or leader is None or leader not in live:
            continue
        records = live[leader].records
        for position in out_of_send_order(sent.get((tp, rec.value)) for rec in records):
            if records[position].value not in found:
                found.append(records[position].value)
    return found


def _client_outcomes(trace: Trace, logs: LogView) -> dict[str, Any]:
    """What consumers read and processed, transaction errors, and any record a read_committed
    consumer read although its transaction was aborted (judged from the final logs)."""
    consumed: dict[str, list[str]] = {}
    processed: dict[str, list[str]] = {}
    txn_errors: dict[str, list[str]] = {}
    consumer_errors: dict[str, list[str]] = {}
    committed_reads: list[tuple[str, int, int, str]] = []
    for e in trace.events:
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
    aborted = _aborted_ranges(logs)
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
        **_refusals(trace),
    }


_FENCING_ERRORS = ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED", "TRANSACTION_COORDINATOR_FENCED")
_REJECTIONS = {
    "stale_controller_request": "STALE_CONTROLLER_EPOCH",
    "stale_broker_epoch": "STALE_BROKER_EPOCH",
}


def _refusals(trace: Trace) -> dict[str, list[dict[str, Any]]]:
    """Control requests brokers rejected (each broker, request type and error once, in the
    order first seen), and the transaction markers partition leaders refused (read from the
    messages they sent, so only a run that traces messages shows them)."""
    rejected: list[dict[str, Any]] = []
    fenced: list[dict[str, Any]] = []
    for e in trace.events:
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
    return _aborted_ranges(ClusterLogs(cluster))


def _aborted_ranges(logs: LogView) -> dict[str, list[tuple[int, int, int]]]:
    found: dict[str, list[tuple[int, int, int]]] = {}
    for tp in logs.partitions():
        live = logs.live(tp)
        if not live:
            continue
        log = max(live.values(), key=lambda v: len(v.records))
        open_at: dict[int, int] = {}
        for rec in log.records:
            if rec.control:
                first = open_at.pop(rec.producer_id, None)
                if first is not None and rec.control == "ABORT":
                    found.setdefault(tp, []).append((rec.producer_id, first, rec.offset))
            elif rec.transactional:
                open_at.setdefault(rec.producer_id, rec.offset)
    return found


def _duplicates(logs: LogView) -> list[str]:
    """Values that appear more than once in a partition leader's log (a retry without
    idempotence writes the same record twice)."""
    found: list[str] = []
    leaders = logs.leaders()
    for tp in logs.partitions():
        if tp.startswith("__"):
            continue  # the internal topics repeat values by design
        live = logs.live(tp)
        leader = leaders[tp]
        if leader not in live:
            continue
        values = [rec.value for rec in live[leader].records if not rec.control]
        if len(set(values)) == len(values):
            continue
        seen: set[str] = set()
        for rec in live[leader].records:
            if rec.control:
                continue
            if rec.value in seen and rec.value not in found:
                found.append(rec.value)
            seen.add(rec.value)
    return found
