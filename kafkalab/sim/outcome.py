"""A run's outcome: the end-of-run report (:class:`Report`, whose fields are also the last keys
of ``Cluster.state()``), and how an outcome is judged, defined once for timed runs
(:class:`~kafkalab.sim.timed.RunResult`) and the report alike."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["SAFETY_FIELDS", "Report", "is_safe", "out_of_send_order"]

# The findings a safe configuration never shows: acknowledged records lost, diverging logs, HW
# regressions, two leaders in one epoch.
SAFETY_FIELDS = ("lost_acked", "divergent", "hw_regressions", "two_leaders")


def is_safe(outcome: Any) -> bool:
    """True when each of ``outcome``'s :data:`SAFETY_FIELDS` is empty, zero or False."""
    return not any(getattr(outcome, name) for name in SAFETY_FIELDS)


def out_of_send_order(send_order: Iterable[int | None]) -> list[int]:
    """Reordering: the positions, in log order, of the records written after a record that was
    sent later. ``send_order`` gives each record's place in the order the producer sent them
    (None: a record not counted). A retry overtaken by a later batch (max.in.flight > 1 without
    idempotence) is written out of send order."""
    found: list[int] = []
    highest = -1
    for position, order in enumerate(send_order):
        if order is None:
            continue
        if order < highest:
            found.append(position)
        highest = max(highest, order)
    return found


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
        return is_safe(self)

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
