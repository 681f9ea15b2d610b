"""The invariant monitor: the named invariants, subscribed to a run's trace from outside it.

:func:`attach` is what :class:`~kafkalab.sim.cluster.Cluster` calls for each new cluster (the
check package installs it; the simulation imports nothing from here). It hands each trace event
to the invariants that read its kind and, with ``check_invariants=True``, verifies them after
every state change, raising :class:`~kafkalab.check.invariants.InvariantViolation` at the first
failure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from kafkalab.check.invariants import (
    ControllerEpochMonotonic,
    Invariant,
    InvariantViolation,
    NoAckedLoss,
    new_invariants,
)
from kafkalab.check.logs import ClusterLogs
from kafkalab.check.report import Report, RunStats, build_report
from kafkalab.sim.trace import Event

if TYPE_CHECKING:
    from kafkalab.sim.cluster import Cluster

__all__ = ["CHECK_ORDER", "InvariantMonitor", "attach"]

# A state change may break an invariant: the monitor verifies them after each of these events.
_STATE_KINDS = frozenset(
    ("append", "replicate", "truncate", "hw", "became_leader", "partition_state", "restart")
)
# The order they are verified in: the ones the trace alone decides first, the log checks last.
CHECK_ORDER = (
    "one_leader_per_epoch",
    "controller_epoch_monotonic",
    "no_stale_controller_effect",
    "hw_monotonic",
    "no_acked_loss",
    "logs_agree_below_hw",
)


class InvariantMonitor:
    """Reads one cluster's trace as it is written. With ``raise_on_violation`` it verifies
    every invariant after each state change and raises :class:`InvariantViolation` at the first
    failure."""

    def __init__(self, cluster: Cluster, *, raise_on_violation: bool) -> None:
        self.cluster = cluster
        self.raise_on_violation = raise_on_violation
        self.invariants: dict[str, Invariant] = new_invariants(ClusterLogs(cluster))
        self.stats = RunStats(tuple(cluster.replicas))
        self._readers: dict[str, list[Callable[[Event], None]]] = {}
        readers: list[Invariant | RunStats] = [*self.invariants.values(), self.stats]
        for reader in readers:
            for kind in reader.kinds:
                self._readers.setdefault(kind, []).append(reader.observe)
        self._in_check_order = [self.invariants[name] for name in CHECK_ORDER]

    @property
    def no_acked_loss(self) -> NoAckedLoss:
        inv = self.invariants["no_acked_loss"]
        assert isinstance(inv, NoAckedLoss)
        return inv

    @property
    def controller_epochs(self) -> list[int]:
        """The controller epochs, as controllers were elected."""
        inv = self.invariants["controller_epoch_monotonic"]
        assert isinstance(inv, ControllerEpochMonotonic)
        return inv.epochs

    def observe(self, event: Event) -> None:
        """Hand ``event`` to the invariants (and counters) that read its kind."""
        readers = self._readers.get(event.kind)
        if readers is not None:
            for read in readers:
                read(event)

    def observe_and_verify(self, event: Event) -> None:
        """:meth:`observe`, then after a state change verify every invariant."""
        self.observe(event)
        if event.kind in _STATE_KINDS:
            violation = self.first_violation()
            if violation is not None:
                self._raise(event, *violation)

    def first_violation(self, names: Collection[str] | None = None) -> tuple[str, str] | None:
        """The first named invariant (of ``names``, default all) that does not hold now, with a
        readable message."""
        for inv in self._in_check_order:
            if names is not None and inv.name not in names:
                continue
            message = inv.verify()
            if message is not None:
                return inv.name, message
        return None

    def _raise(self, event: Event, name: str, message: str) -> None:
        c = self.cluster
        raise InvariantViolation(
            f"invariant {name} failed at {event.time_ms} ms (trace event {event.seq}): "
            f"{message}\nreplay: Cluster(brokers={len(c.broker_ids)}, "
            f"config={c.config.as_dict()!r}, seed={c.seed}, mode={c.mode!r}) with the same "
            "steps or fault schedule"
        )

    def report(self) -> Report:
        """The report of the run so far."""
        inv = self.invariants
        return build_report(
            self.cluster,
            acked=list(self.no_acked_loss.acked),
            lost_acked=self.no_acked_loss.lost(),
            hw_regressions=list(inv["hw_monotonic"].violations),  # type: ignore[attr-defined]
            two_leaders=list(inv["one_leader_per_epoch"].violations),  # type: ignore[attr-defined]
            stats=self.stats,
        )


def attach(cluster: Cluster, *, raise_on_violation: bool) -> InvariantMonitor:
    """Subscribe a new :class:`InvariantMonitor` to ``cluster``'s trace; it sees every event
    recorded from now on."""
    monitor = InvariantMonitor(cluster, raise_on_violation=raise_on_violation)
    observe = monitor.observe_and_verify if raise_on_violation else monitor.observe
    cluster.sim.observers.append(observe)
    return monitor
