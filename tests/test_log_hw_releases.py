"""Release switches of the log, the HW and DeleteRecords, each run at the presets on either side
of the Kafka change: KAFKA-5634 (retention bounded by the HW, 0.11.0.1), KAFKA-7697 (the HW moves
before waiting fetches are answered, 2.1.1), 7a7d4cb5819 (the HW never below the log start
offset, 2.4.0), KIP-107 (DeleteRecords, 0.11.0.0) and KAFKA-6857 (endOffsetFor of the undefined
epoch, 2.0.0)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab import Cluster, make_config
from kafkalab.errors import ActionError
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import Broker
from kafkalab.protocol.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, Disk, Log, Record
from kafkalab.protocol.rules import end_offset_for

TP = "demo-0"
T0 = 100_000


def deliver(b: Broker, msg: Any, *, src: Any = "controller", now: int = T0) -> Context:
    ctx = Context(now, b.id)
    b.handle(ctx, src, msg)
    return ctx


def records(n: int) -> tuple[Record, ...]:
    return tuple(Record(o, f"m{o}", 0) for o in range(n))


# ---- KAFKA-5634: size retention and the HW --------------------------------------------------


def _lagging_leader(preset: str | Mapping[str, Any], retention_bytes: int) -> Cluster:
    """Two brokers; the leader takes four acks=1 records that broker 2 has not fetched, so the
    HW stays at 0; segments of two records. ``preset``: a preset's name, or settings."""
    config = {
        **({"preset": preset} if isinstance(preset, str) else preset),
        "retention.bytes": retention_bytes,
        "segment.bytes": 200,
        "log.retention.check.interval.ms": 1000,
    }
    c = Cluster(brokers=2, config=config)
    c.produce(values=["m0", "m1", "m2", "m3"], acks=1)
    assert c.replica(1).hw == 0 and c.replica(1).leo == 4
    c.advance(1000)  # the retention check
    return c


@pytest.mark.parametrize(("preset", "start"), [("0.8", 2), ("0.10", 2), ("0.11", 0), ("3.7", 0)])
def test_before_kafka_5634_retention_deletes_acknowledged_records_no_follower_has(
    preset: str, start: int
) -> None:
    """0.10: the leader deletes the segment [0, 2), acknowledged with acks=1 and above the HW,
    before broker 2 copied it: m0 and m1 were never committed, and no consumer can ever read
    them. 0.11 (0.11.0.1 on) keeps every segment the HW has not passed."""
    c = _lagging_leader(preset, retention_bytes=200)
    leader = c.replica(1)
    assert leader.log_start_offset == start
    assert leader.hw == 0
    assert (leader.log_start_offset > leader.hw) == (start > 0)


@pytest.mark.parametrize(
    ("preset", "read"), [("0.10", ["m2", "m3"]), ("0.11", ["m0", "m1", "m2", "m3"])]
)
def test_kafka_5634_scenario_a_consumer_never_sees_acknowledged_records_in_0_10(
    preset: str, read: list[str]
) -> None:
    """The lesson's story: four records acknowledged (acks=1), the follower behind, a retention
    check, then the follower catches up and a consumer reads from the beginning. 0.10 deleted
    m0 and m1 before they were committed: they were acknowledged, and nobody ever reads them.
    0.11 kept them until the HW passed them."""
    c = _lagging_leader(preset, retention_bytes=200)
    c.sync()
    c.consumer("app", **{"auto.offset.reset": "earliest"})
    c.poll("app")
    state = c.state()
    assert state["acked"] == ["m0", "m1", "m2", "m3"]
    assert state["hw"][1] == 4
    assert state["consumed"]["app"] == read


@pytest.mark.parametrize(("preset", "start"), [("0.10", 4), ("0.11", 0)])
def test_before_kafka_5634_retention_rolls_and_deletes_the_active_segment(
    preset: str, start: int
) -> None:
    """retention.bytes=0: 0.10 deletes every segment, the active one with m2 and m3 too (the
    log rolls an empty segment at the LEO first); 0.11 waits for the HW."""
    c = _lagging_leader(preset, retention_bytes=0)
    assert c.replica(1).log_start_offset == start


def test_since_kafka_5634_the_active_segment_goes_once_the_hw_reaches_the_leo() -> None:
    """Log.deletableSegments (0.11.0.1 to 3.8): the last segment's upper bound is the LEO, so
    with the HW at the LEO every segment goes and the log starts at the LEO."""
    log = Log(Disk(records(10), 0, ((0, 0),)))
    log.hw = 10
    assert log.retention_start(0, 500) == 10
    log.hw = 9
    assert log.retention_start(0, 500) == 5, "[5, 10) reaches past the HW: it stays"
    assert log.retention_start(0, 500, bounded_by_hw=False) == 10
    assert Log(Disk(records(7), 0, ((0, 0),))).retention_start(0, 500, bounded_by_hw=False) == 7


# ---- KAFKA-7697: the HW moves before waiting fetches are answered ----------------------------


@pytest.mark.parametrize(("preset", "hw_sent"), [("0.10", 0), ("2.0", 0), ("2.1", 1), ("3.7", 1)])
def test_since_kafka_7697_a_waiting_fetch_carries_the_hw_the_append_moved(
    preset: str, hw_sent: int
) -> None:
    """A single-replica ISR: broker 2, outside it and long past its lag time, waits in the fetch
    purgatory; an append moves the HW to 1. 2.1.1 on answers the fetch after the HW moved;
    before, with the HW from before the append."""
    assert hw_sent_to_a_waiting_fetch({"preset": preset}) == hw_sent


def hw_sent_to_a_waiting_fetch(settings: Mapping[str, Any]) -> int:
    """The HW the append's answer to broker 2's waiting fetch carries."""
    config = make_config({**settings, "acks": "1"})
    b = Broker(1, config, {TP: Disk()}, auto_fetch=False)
    deliver(b, m.UpdateMetadata(1, (1,)))  # from 3.3 broker 2, not live, may not join the ISR
    deliver(b, m.LeaderAndIsr(TP, 1, 1, 0, (1,), 0, (1, 2)))
    epoch = 0 if config.kip320 else None
    wait = deliver(b, m.FetchRequest(TP, 2, 0, epoch, 500, 7, 1048576), src=2)
    assert not [msg for _, msg, *_ in wait.sends if isinstance(msg, m.FetchResponse)]
    later = T0 + 2 * config.replica_lag_time_max_ms
    ctx = deliver(b, m.ProduceRequest(TP, 1, ("m0",), 1, 30000), src="p", now=later)
    (resp,) = [msg for dst, msg, *_ in ctx.sends if dst == 2 and isinstance(msg, m.FetchResponse)]
    assert b.partitions[TP].log.hw == 1
    return int(resp.hw)


# ---- 7a7d4cb5819: the HW never below the log start offset ---------------------------------------


@pytest.mark.parametrize(("preset", "hw"), [("0.11", 2), ("2.3", 2), ("2.4", 5), ("3.7", 5)])
def test_since_2_4_a_restarted_replica_s_hw_is_at_least_its_log_start_offset(
    preset: str, hw: int
) -> None:
    """The HW checkpoint (every 5 s) says 2, DeleteRecords had moved the log start offset to 5:
    2.3 restarts with min(checkpoint, LEO) = 2, below the first offset it holds; 2.4 on
    (Partition.createLog -> Log.updateHighWatermark) with 5."""
    assert restarted_log_start_and_hw({"preset": preset}) == (5, hw)


def restarted_log_start_and_hw(settings: Mapping[str, Any]) -> tuple[int, int]:
    """A replica restarting from the HW checkpoint 2 with its log start offset at 5."""
    disk = Disk(records(10), 2, ((0, 0),), 5)
    b = Broker(1, make_config(settings), {TP: disk}, auto_fetch=False)
    log = b.partitions[TP].log
    return log.log_start_offset, log.hw


@pytest.mark.parametrize(("preset", "leo", "hw"), [("2.3", 0, 0), ("2.4", 5, 5)])
def test_since_2_4_a_restarted_follower_does_not_truncate_to_a_hw_below_its_log_start(
    preset: str, leo: int, hw: int
) -> None:
    """DeleteRecords(-1) moves the log start offset to the HW, 5, on both replicas, and the
    epoch cache keeps one entry starting there, which log recovery drops (it starts at the
    LEO). Follower 2 crashes before its next HW checkpoint (of 0) and restarts (once its old
    ZooKeeper session expired) with no epoch to ask about, so it truncates to its HW: 0 in 2.3,
    emptying its log; 5 from 2.4 on."""
    config = {"preset": preset, "replica.high.watermark.checkpoint.interval.ms": 60000}
    c = Cluster(brokers=2, config=config)
    c.produce(values=[f"m{i}" for i in range(5)], acks="all")
    c.sync()
    c.delete_records(-1)
    c.sync()
    assert (c.replica(2).log_start_offset, c.replica(2).hw) == (5, 5)
    c.crash(2)
    c.advance(c.config.zookeeper_session_timeout_ms)  # its old session must go first
    c.restart(2)
    assert (c.replica(2).leo, c.replica(2).hw) == (leo, hw)


# ---- KIP-107: DeleteRecords from 0.11 ------------------------------------------------------


@pytest.mark.parametrize("preset", ["0.8", "0.9", "0.10"])
def test_delete_records_is_refused_before_kip_107(preset: str) -> None:
    c = Cluster(brokers=2, config={"preset": preset})
    c.produce(values=["m0", "m1"], acks="all")
    with pytest.raises(ActionError, match=rf"preset {preset} \(kip107 off\).*KIP-107 in Kafka 0"):
        c.delete_records(1)


@pytest.mark.parametrize("preset", ["0.11", "3.7"])
def test_delete_records_works_since_kip_107(preset: str) -> None:
    c = Cluster(brokers=2, config={"preset": preset})
    c.produce(values=["m0", "m1"], acks="all")
    c.sync()
    c.delete_records(1)
    assert c.replica(1).log_start_offset == 1


# ---- KAFKA-6857: the undefined epoch ---------------------------------------------------------


def test_end_offset_for_the_undefined_epoch_is_undefined() -> None:
    """LeaderEpochFileCache.endOffsetFor(UNDEFINED_EPOCH) (explicit since 2.0.0; 0.11 to 1.1
    answered it as older than the first entry, undefined too): not the first epoch's start."""
    epochs = ((0, 0), (2, 5))
    assert end_offset_for(epochs, 9, UNDEFINED_EPOCH) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
    assert end_offset_for(epochs, 9, 1) == (0, 5)
