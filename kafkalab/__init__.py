"""kafkalab: learn how Apache Kafka keeps data safe across replicas.

The core is a deterministic, message-passing simulator of one replicated partition:

>>> from kafkalab import Cluster
>>> c = Cluster(brokers=3)
>>> c.produce("m1")
['m1']
>>> c.fetch(2); c.fetch(3); c.fetch(2); c.fetch(3)
>>> c.report().acked
['m1']
"""

# First: the compiled core (kafkalab/core_build.py) runs only while it matches its sources.
from kafkalab import _core_guard  # noqa: F401
from kafkalab.check import INVARIANTS, InvariantViolation, Report
from kafkalab.config import PRESETS, Config, make_config
from kafkalab.errors import ActionError, ConfigError, KafkalabError, ScenarioError
from kafkalab.protocol.rules import Rules
from kafkalab.sim.cluster import Cluster, ReplicaView
from kafkalab.sim.trace import EVENT_KINDS, Event, Trace

__all__ = [
    "EVENT_KINDS",
    "INVARIANTS",
    "PRESETS",
    "ActionError",
    "Cluster",
    "Config",
    "ConfigError",
    "Event",
    "InvariantViolation",
    "KafkalabError",
    "ReplicaView",
    "Report",
    "Rules",
    "ScenarioError",
    "Trace",
    "make_config",
]

__version__ = "0.1.0"
