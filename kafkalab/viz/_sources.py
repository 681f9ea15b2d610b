"""What a drawing can be given: a Cluster, its trace, or a snapshot of its replicas."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.sim.trace import Event, Trace
from kafkalab.sim.views import ReplicaView

__all__ = ["Snapshot", "as_events", "as_snapshot"]

Snapshot = Mapping[int, ReplicaView]  # broker id -> what its replica holds


def as_snapshot(source: Any, partition: int | str | None = None) -> dict[int, ReplicaView]:
    """The replicas of a partition, from a Cluster or a ``{broker: ReplicaView}`` mapping."""
    if hasattr(source, "replicas_view"):
        return dict(source.replicas_view(partition))
    if isinstance(source, Mapping) and all(isinstance(v, ReplicaView) for v in source.values()):
        return dict(source)
    raise KafkalabError(
        f"cannot draw replicas from {type(source).__name__}: give a Cluster or "
        "cluster.replicas_view() (a mapping of broker id to ReplicaView)"
    )


def as_events(source: Any) -> list[Event]:
    """The events of a Cluster, a Trace, a simulate() cluster or a list of events."""
    trace = getattr(source, "trace", source)
    if isinstance(trace, Trace):
        return trace.events
    if isinstance(trace, Iterable) and not isinstance(trace, (str, bytes, Mapping)):
        events = list(trace)
        if all(isinstance(e, Event) for e in events):
            return events
    raise KafkalabError(
        f"cannot read a trace from {type(source).__name__}: give a Cluster, a Trace or a list "
        "of Events"
    )
