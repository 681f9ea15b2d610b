"""Named invariants, checked as the trace grows, and the end-of-run report.

Importing this package (``import kafkalab`` does) attaches the invariant monitor to every new
:class:`~kafkalab.sim.cluster.Cluster` from outside the simulation: the cluster calls
:func:`~kafkalab.check.monitor.attach`, which subscribes the monitor to its trace.
"""

from kafkalab.check.invariants import INVARIANTS, Invariant, InvariantViolation
from kafkalab.check.monitor import InvariantMonitor, attach
from kafkalab.check.report import Report
from kafkalab.sim.cluster import Cluster

Cluster.attach_checks = attach

__all__ = ["INVARIANTS", "Invariant", "InvariantMonitor", "InvariantViolation", "Report"]
