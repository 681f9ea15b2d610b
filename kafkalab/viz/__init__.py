"""Pictures of a run, each with a text twin a screen reader can read.

Every ``draw_*`` function takes a Cluster, a trace or a snapshot of the replicas
(``cluster.replicas_view()``), an optional matplotlib ``ax`` to draw on (a new figure
otherwise), and returns the Axes. Every ``describe_*`` function returns the same content as
plain text. The pictures use one fixed style (the Okabe-Ito palette, with hatching and labels
so that colour is never the only cue, on a white card that reads in light and dark themes).

>>> from kafkalab import Cluster
>>> from kafkalab.viz import describe_logs
>>> c = Cluster(brokers=2, leader=2)
>>> c.produce("m1", acks=1)
['m1']
>>> print(describe_logs(c))
broker | role | in ISR | LEO | HW | records (offset:value, leader epoch)
1 | follower | yes | 0 | 0 | empty
2 | leader, epoch 0 | yes | 1 | 0 | 0:m1 (e0)
"""

from kafkalab.viz._style import OKABE_ITO, render, style
from kafkalab.viz.epochs import describe_epoch_cache, draw_epoch_cache
from kafkalab.viz.logs import (
    describe_logs,
    draw_logs,
    draw_truncation,
    removed_records,
    replica_labels,
)
from kafkalab.viz.messages import describe_messages, draw_messages, message_flow, message_label
from kafkalab.viz.series import (
    describe_series,
    draw_isr,
    draw_offsets,
    replication_series,
)
from kafkalab.viz.txn import describe_txn_states, draw_txn_states

__all__ = [
    "OKABE_ITO",
    "describe_epoch_cache",
    "describe_logs",
    "describe_messages",
    "describe_series",
    "describe_txn_states",
    "draw_epoch_cache",
    "draw_isr",
    "draw_logs",
    "draw_messages",
    "draw_offsets",
    "draw_truncation",
    "draw_txn_states",
    "message_flow",
    "message_label",
    "removed_records",
    "render",
    "replica_labels",
    "replication_series",
    "style",
]
