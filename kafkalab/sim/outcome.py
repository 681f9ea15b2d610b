"""How a run's outcome is judged, defined once for timed runs (:class:`~kafkalab.sim.timed.
RunResult`) and the end-of-run report (:class:`kafkalab.Report`) alike."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["SAFETY_FIELDS", "is_safe", "out_of_send_order"]

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
