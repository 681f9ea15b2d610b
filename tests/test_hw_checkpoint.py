"""Who writes replication-offset-checkpoint: the periodic task and a clean shutdown, never a
flush. A restarted replica starts from the HW that file holds."""

from __future__ import annotations

import pytest

from kafkalab import Cluster
from kafkalab.sim.actions import apply

INTERVAL_MS = 5000  # replica.high.watermark.checkpoint.interval.ms


def _follower_learns_hw(c: Cluster, value: str) -> None:
    """Broker 2 copies ``value`` and learns the HW that commits it."""
    c.produce(value)
    c.fetch(2)
    c.fetch(2)


@pytest.mark.parametrize("preset", ["0.10", "3.7"])
def test_after_a_flush_and_a_crash_the_hw_is_the_last_periodic_checkpoints(preset: str) -> None:
    """ReplicaManager.checkpointHighWatermarks is the only writer of the HW checkpoint: the
    "highwatermark-checkpoint" task calls it every replica.high.watermark.checkpoint.interval.ms
    and ReplicaManager.shutdown at a clean stop; Log.flush fsyncs segments only (Kafka 0.10.2.2,
    core/src/main/scala/kafka/server/ReplicaManager.scala lines 163 and 962; 3.7.0 lines 359 and
    2651). So a follower that learned HW 2 and flushed restarts from the last periodic
    checkpoint, HW 1."""
    c = Cluster(brokers=2, leader=1, config={"preset": preset})
    _follower_learns_hw(c, "m1")
    c.advance(INTERVAL_MS)  # the periodic task writes HW 1
    _follower_learns_hw(c, "m2")
    assert c.replica(2).hw == 2
    c.flush(2)
    assert c.state()["hw_checkpoint"] == {1: 1, 2: 1}  # the flush wrote none
    c.crash(2)
    c.restart(2)
    assert c.replica(2).hw == 1


def test_the_periodic_task_and_a_clean_stop_write_the_hw_checkpoint() -> None:
    """ReplicaManager.checkpointHighWatermarks (Kafka 3.7.0, ReplicaManager.scala): run by the
    periodic task (here also the ``checkpoint`` step, which picks the moment it runs) and by
    ReplicaManager.shutdown, so a replica stopped cleanly restarts with the HW it had."""
    c = Cluster(brokers=2, leader=1)
    _follower_learns_hw(c, "m1")
    c.advance(INTERVAL_MS - 1)
    assert c.state()["hw_checkpoint"] == {1: 0, 2: 0}  # not yet due
    c.advance(1)
    assert c.state()["hw_checkpoint"] == {1: 1, 2: 1}
    _follower_learns_hw(c, "m2")
    apply(c, "checkpoint", {"broker": 1})
    assert c.state()["hw_checkpoint"] == {1: 2, 2: 1}
    c.stop(2)
    assert c.state()["hw_checkpoint"][2] == 2
    c.restart(2)
    assert c.replica(2).hw == 2
