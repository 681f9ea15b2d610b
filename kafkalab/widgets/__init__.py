"""Interactive explorers for Jupyter, and the plain models behind them.

>>> from kafkalab.widgets import ClusterExplorer
>>> ClusterExplorer("kip101-loss")    # doctest: +SKIP

* :class:`ClusterExplorer`: step through a catalog scenario or your own steps, rewind to any
  step and fork a new branch; the logs, the messages and the invariant report update live.
* :class:`TradeoffExplorer`: acks, min.insync.replicas, replication factor, unclean election,
  leader epochs and fault rate against acknowledged loss, unavailability and latency.
* :class:`IsrLagExplorer`: bursts, follower speed and the lag rule against ISR membership.

Each widget keeps its logic in a model (:class:`ExplorerModel`, :class:`TradeoffModel`,
:class:`IsrLagModel`) that works without a browser.
"""

from kafkalab.widgets.explorer import ACTIONS, ExplorerModel, StepOutcome
from kafkalab.widgets.isr_lag import IsrLagModel, IsrLagResult, IsrLagSettings
from kafkalab.widgets.tradeoff import TradeoffModel, TradeoffResult, TradeoffSettings
from kafkalab.widgets.ui import ClusterExplorer, IsrLagExplorer, TradeoffExplorer

__all__ = [
    "ACTIONS",
    "ClusterExplorer",
    "ExplorerModel",
    "IsrLagExplorer",
    "IsrLagModel",
    "IsrLagResult",
    "IsrLagSettings",
    "StepOutcome",
    "TradeoffExplorer",
    "TradeoffModel",
    "TradeoffResult",
    "TradeoffSettings",
]
