"""Truncation through Fetch (KAFKA-10554, 2.8) against truncation through OffsetsForLeaderEpoch
(KIP-101, 0.11 to 2.7); a fenced follower that stops fetching (KIP-320, 2.1); and when a
follower whose leader is unchanged truncates again (KAFKA-7164 in 2.0.1, KAFKA-7395 in 2.1).

Unit tests drive one broker message by message (the helpers of ``test_unit_broker``); the
cluster tests run the presets on either side of each change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kafkalab.config import make_config
from kafkalab.protocol import messages as m
from kafkalab.protocol.log import UNDEFINED_EPOCH, Record
from kafkalab.sim.cluster import Cluster
from tests.test_unit_broker import (
    CONTROLLER,
    T0,
    TP,
    deliver,
    disk_of,
    events,
    fetch_now,
    fire,
    follower,
    leader,
    leader_and_isr,
    new_broker,
    produce,
    replica,
    sent,
)

BEFORE_2_8 = make_config({"preset": "2.7"})
SINCE_2_8 = make_config({"preset": "3.0"})


def fetch_with_epoch(b: Any, offset: int, last_fetched_epoch: int, epoch: int = 0) -> Any:
    req = m.FetchRequest(TP, 2, offset, epoch, 0, 77, last_fetched_epoch=last_fetched_epoch)
    (resp,) = sent(deliver(b, req, src=2, now=T0), m.FetchResponse, 2)
    return resp


# ---- the follower's first request to a new leader ------------------------------------------


def test_before_2_8_a_follower_with_epochs_asks_offsets_for_leader_epoch_first():
    b = new_broker(2, disk=disk_of(0, 0, 3, hw_checkpoint=1), config=BEFORE_2_8)
    deliver(b, leader_and_isr(1, 4, (1, 2, 3)), src=CONTROLLER, now=T0)
    req = fetch_now(b)
    assert isinstance(req, m.OffsetsForLeaderEpochRequest)
    assert req.leader_epoch == 3


def test_since_2_8_a_follower_with_epochs_fetches_from_its_leo_naming_its_latest_epoch():
    b = new_broker(2, disk=disk_of(0, 0, 3, hw_checkpoint=1), config=SINCE_2_8)
    ctx = deliver(b, leader_and_isr(1, 4, (1, 2, 3)), src=CONTROLLER, now=T0)
    assert events(ctx, "truncate") == []
    req = fetch_now(b)
    assert isinstance(req, m.FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch, req.current_leader_epoch) == (3, 3, 4)


def test_before_2_8_fetches_name_no_last_fetched_epoch():
    b = follower(2, config=BEFORE_2_8)  # an empty log: it fetches at once
    req = fetch_now(b)
    assert isinstance(req, m.FetchRequest)
    assert req.last_fetched_epoch == UNDEFINED_EPOCH


# ---- the leader's answer (Partition.readRecords) -------------------------------------------


def test_the_leader_answers_a_diverging_log_with_where_the_epoch_ends_and_no_records():
    # The leader wrote m0 in epoch 0 and m1, m2 in epoch 2; the follower holds 3 records whose
    # last is in epoch 1, which the leader never had: its largest epoch <= 1 is 0, ending at 1.
    b = leader(epoch=2, disk=disk_of(0, 2, 2), config=SINCE_2_8)
    resp = fetch_with_epoch(b, 3, 1, epoch=2)
    assert (resp.error, resp.records, resp.diverging_epoch) == (m.NONE, (), (0, 1))


def test_the_leader_does_not_take_a_diverging_fetch_as_the_followers_position():
    """KAFKA-13141 (2.8.1): the follower's LEO as the leader knows it stays unknown."""
    b = leader(epoch=2, disk=disk_of(0, 2, 2), config=SINCE_2_8)
    fetch_with_epoch(b, 3, 1, epoch=2)
    assert replica(b).remotes[2].leo == -1
    assert replica(b).log.hw == 0


def test_a_follower_ahead_in_the_same_epoch_diverges_too():
    b = leader(epoch=0, disk=disk_of(0, 0), config=SINCE_2_8)
    resp = fetch_with_epoch(b, 3, 0)
    assert resp.diverging_epoch == (0, 2)


def test_a_matching_epoch_gets_records_as_any_fetch():
    b = leader(epoch=0, disk=disk_of(0, 0), config=SINCE_2_8)
    produce(b, "m2", acks=1)
    resp = fetch_with_epoch(b, 2, 0)
    assert resp.diverging_epoch is None
    assert [r.value for r in resp.records] == ["m2"]
    assert replica(b).remotes[2].leo == 2


def test_an_epoch_the_leader_cannot_place_is_offset_out_of_range():
    """ "Could not determine the end offset of the last fetched epoch": an epoch newer than
    every one the leader knows (a learner's rule may also answer undefined)."""
    b = leader(epoch=2, disk=disk_of(0, 2), config=SINCE_2_8)
    resp = fetch_with_epoch(b, 2, 5, epoch=2)
    assert resp.error == m.OFFSET_OUT_OF_RANGE


# ---- the follower's truncation (AbstractFetcherThread.truncateOnFetchResponse) -------------


def answer(req: m.FetchRequest, diverging: tuple[int, int], hw: int = 9) -> m.FetchResponse:
    return m.FetchResponse(TP, req.correlation_id, m.NONE, (), hw, 9, 0, diverging)


def test_since_2_8_kip279s_loop_runs_through_fetches():
    # Follower: epochs 0 (offsets 0-1) and 2 (offsets 2-3); the leader knows epochs 0, 1, 3.
    config = make_config({"preset": "3.6"})
    b = follower(2, disk=disk_of(0, 0, 2, 2, hw_checkpoint=1), epoch=3, config=config)
    req = fetch_now(b)
    assert (req.fetch_offset, req.last_fetched_epoch) == (4, 2)

    # The leader has no epoch 2: its epoch 1 ends at 3. The follower does not know epoch 1: it
    # truncates to where its epoch 0 ends and fetches again, naming epoch 0.
    ctx = deliver(b, answer(req, (1, 3)), src=1, now=T0)
    assert replica(b).log.values() == ["m0", "m1"]
    assert events(ctx, "truncate")[0]["reason"] == "diverging_epoch"
    assert replica(b).log.hw == 1  # the diverging answer's HW is not taken
    req = fetch_now(b)
    assert isinstance(req, m.FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch) == (2, 0)

    # The leader's epoch 0 ends at 1: truncate to min(1, own end 2) and fetch from there.
    deliver(b, answer(req, (0, 1)), src=1, now=T0)
    assert replica(b).log.values() == ["m0"]
    req = fetch_now(b)
    assert (req.fetch_offset, req.last_fetched_epoch) == (1, 0)
    recs = (Record(1, "x1", 1),)
    deliver(b, m.FetchResponse(TP, req.correlation_id, m.NONE, recs, 2, 2), src=1, now=T0)
    assert replica(b).log.values() == ["m0", "x1"]
    assert fetch_now(b).last_fetched_epoch == 1


def test_since_2_8_a_follower_counts_as_settled_after_its_first_answer_without_divergence():
    """What logs_agree_below_hw and Cluster.sync read (ReplicaState.truncating): before 2.8 the
    OffsetsForLeaderEpoch answer settles the follower, since 2.8 the first fetch answer that
    names no diverging epoch."""
    b = follower(2, disk=disk_of(0, 0, 2, 2, hw_checkpoint=1), epoch=3, config=SINCE_2_8)
    assert replica(b).truncating
    req = fetch_now(b)
    deliver(b, answer(req, (0, 1)), src=1, now=T0)
    assert replica(b).truncating
    req = fetch_now(b)
    deliver(b, m.FetchResponse(TP, req.correlation_id, m.NONE, (), 1, 1), src=1, now=T0)
    assert not replica(b).truncating


@pytest.mark.parametrize(("preset", "hws"), [("3.3", [(1, 4)]), ("3.6", [])])
def test_before_3_4_1_a_diverging_answer_raises_the_hw_before_the_truncation(
    preset: str, hws: list[tuple[int, int]]
):
    """KAFKA-14704: 3.3.2 took the answer's HW (9, capped at its LEO 4) before it truncated to
    2, which brought the HW down again; 3.4.1 leaves the HW alone."""
    config = make_config({"preset": preset})
    b = follower(2, disk=disk_of(0, 0, 2, 2, hw_checkpoint=1), epoch=3, config=config)
    req = fetch_now(b)
    ctx = deliver(b, answer(req, (1, 3)), src=1, now=T0)
    assert [(e["old"], e["new"]) for e in events(ctx, "hw")] == hws
    (trunc,) = events(ctx, "truncate")
    assert trunc["old_hw"] == (4 if hws else 1)
    assert (replica(b).log.leo, replica(b).log.hw) == (2, min(2, 1 if not hws else 2))


def test_since_2_8_a_leader_that_cannot_place_the_epoch_does_not_send_the_follower_to_its_hw():
    """fetchOffsetAndTruncate: the follower keeps its log when the leader's LEO is not behind
    (before 2.8 an undefined OffsetsForLeaderEpoch answer truncated to the HW)."""
    b = follower(2, disk=disk_of(0, 0, 0, hw_checkpoint=1), epoch=1, config=SINCE_2_8)
    req = fetch_now(b)
    resp = m.FetchResponse(TP, req.correlation_id, m.OFFSET_OUT_OF_RANGE, leader_leo=5)
    ctx = deliver(b, resp, src=1, now=T0)
    assert events(ctx, "truncate") == []
    assert replica(b).log.leo == 3


# ---- the whole cluster: message flow at 2.7 and 3.0 ----------------------------------------


def _leader_change(preset: str) -> Cluster:
    """m1 is on all three brokers; 1 crashes and 2 leads; 3 follows 2 with the same log."""
    c = Cluster(brokers=3, leader=1, config={"preset": preset})
    c.produce("m1")
    c.sync()
    c.crash(1)
    c.advance(20000)
    assert c.leader == 2
    c.produce("m2", acks=1)
    return c


def _kinds_sent(c: Cluster, since: int) -> list[str]:
    """The types of the messages sent from event ``since`` on."""
    return [type(e.data["msg"]).__name__ for e in c.trace.events[since:] if e.kind == "send"]


@pytest.mark.parametrize(("preset", "replicated"), [("2.7", []), ("3.0", ["m1", "m2"])])
def test_a_follower_that_did_not_diverge_gets_records_one_round_trip_sooner(
    preset: str, replicated: list[str]
):
    c = _leader_change(preset)
    c.fetch(3)  # 2.7: OffsetsForLeaderEpoch; 3.0: a Fetch that brings m2
    assert c.logs()[3] == (["m1", "m2"] if replicated else ["m1"])
    c.fetch(3)
    assert c.logs()[3] == ["m1", "m2"]


@pytest.mark.parametrize(
    ("preset", "first"), [("2.7", "OffsetsForLeaderEpochRequest"), ("3.0", "FetchRequest")]
)
def test_a_diverged_follower_truncates_through_its_first_request(preset: str, first: str):
    """KIP-101's scenario 2: 1 wrote m1 alone (acks=1) and crashed; 2 leads and writes m2 at the
    same offset; 1 comes back and follows 2."""
    c = Cluster(brokers=3, leader=1, config={"preset": preset})
    c.produce("m1", acks=1)
    c.crash(1)
    c.advance(20000)
    assert c.leader == 2
    c.produce("m2", acks=1)
    c.restart(1)
    c.advance(1)
    before = len(c.trace)
    c.fetch(1)
    assert _kinds_sent(c, before)[0] == first
    assert c.logs()[1] == []  # m1 is gone after the first round trip, either way
    c.fetch(1)
    assert c.logs()[1] == ["m2"]


# ---- a fenced follower stops fetching (KIP-320, 2.1) -----------------------------------------


def _timed_follower(preset: str) -> tuple[Any, m.FetchRequest]:
    b = new_broker(2, config=make_config({"preset": preset}), auto_fetch=True)
    ctx = deliver(b, leader_and_isr(1, 1, (1, 2, 3)), src=CONTROLLER, now=T0)
    (req,) = sent(ctx, m.FetchRequest, 1)
    return b, req


def test_a_fenced_follower_stops_fetching_until_its_next_leader_and_isr():
    b, req = _timed_follower("2.1")
    resp = m.FetchResponse(TP, req.correlation_id, m.FENCED_LEADER_EPOCH)
    ctx = deliver(b, resp, src=1, now=T0 + 5)
    assert events(ctx, "fetch_fenced") == [{"broker": 2, "tp": TP, "leader_epoch": 1}]
    assert ctx.sends == [] and [t for t in ctx.timers if t[1] == "fetch_backoff"] == []
    # The request timeout that was armed for the answered request sends nothing either.
    assert fire(b, "fetch_timeout", TP, now=T0 + 40_000).sends == []
    ctx = deliver(b, leader_and_isr(1, 2, (1, 2, 3)), src=CONTROLLER, now=T0 + 50_000)
    (req,) = sent(ctx, m.FetchRequest, 1)
    assert req.current_leader_epoch == 2


@pytest.mark.parametrize("preset", ["2.1", "3.7"])
def test_an_unknown_leader_epoch_is_tried_again_after_the_back_off(preset: str):
    b, req = _timed_follower(preset)
    resp = m.FetchResponse(TP, req.correlation_id, m.UNKNOWN_LEADER_EPOCH)
    ctx = deliver(b, resp, src=1, now=T0 + 5)
    assert (1000, "fetch_backoff", TP) in ctx.timers


def test_a_fenced_offsets_for_leader_epoch_answer_stops_the_follower_too():
    b = new_broker(2, config=make_config({"preset": "2.7"}), disk=disk_of(0), auto_fetch=True)
    ctx = deliver(b, leader_and_isr(1, 1, (1, 2, 3)), src=CONTROLLER, now=T0)
    (req,) = sent(ctx, m.OffsetsForLeaderEpochRequest, 1)
    resp = m.OffsetsForLeaderEpochResponse(TP, req.correlation_id, m.FENCED_LEADER_EPOCH, -1, -1)
    ctx = deliver(b, resp, src=1, now=T0 + 5)
    assert ctx.sends == [] and [t for t in ctx.timers if t[1] == "fetch_backoff"] == []


# ---- the same leader in a new epoch (KAFKA-7164, 2.0.1; KAFKA-7395, 2.1.0) ------------------


@pytest.mark.parametrize(
    ("preset", "new_epoch", "truncates"),
    [
        ("1.1", 1, False),  # <= 2.0.0: an unchanged leader never restarts the fetcher
        ("1.1", 3, False),
        ("2.0", 1, False),  # 2.0.1: only after a missed epoch
        ("2.0", 3, True),
        ("2.1", 1, True),  # 2.1: every new epoch
        ("2.7", 1, True),
    ],
)
def test_an_unchanged_leader_in_a_new_epoch(preset: str, new_epoch: int, truncates: bool):
    assert truncates_in_a_new_epoch({"preset": preset}, new_epoch) == truncates


def truncates_in_a_new_epoch(settings: Mapping[str, Any], new_epoch: int) -> bool:
    """Follower 2 of leader 1 in epoch 0 hears of epoch ``new_epoch``, leader 1 still: whether
    its next request asks where its epoch ends (truncation) rather than fetching."""
    b = follower(2, config=make_config(settings), disk=disk_of(0, 0), epoch=0)
    req = fetch_now(b)  # its first request to leader 1 finds where its epoch ends
    deliver(b, m.OffsetsForLeaderEpochResponse(TP, req.correlation_id, m.NONE, 0, 2), src=1, now=T0)
    assert isinstance(fetch_now(b), m.FetchRequest)

    deliver(b, leader_and_isr(1, new_epoch, (1, 2)), src=CONTROLLER, now=T0 + 1)
    req = fetch_now(b, now=T0 + 1)
    return isinstance(req, m.OffsetsForLeaderEpochRequest)
