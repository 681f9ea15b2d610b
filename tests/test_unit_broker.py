"""Unit tests of the broker actor, driven message by message through a Context.

Each test builds one Broker, hands it messages and timers, and reads what it asked for
(ctx.sends, ctx.timers, ctx.events) and its replica state. Times start at T0, well past
replica.lag.time.max.ms, so that no replica counts as caught up merely because the simulated
clock starts at 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkalab.config import Config, make_config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import NEVER_MS, Broker, FetchNow, ReplicaState
from kafkalab.protocol.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, Disk, Record
from kafkalab.sim.cluster import Cluster

TP = "demo-0"
# Truncation through OffsetsForLeaderEpoch, as from 0.11 to 2.7 (since 2.8 through Fetch).
EPOCH_REQUESTS = make_config({"truncation_on_fetch": False})
CONTROLLER = "controller"
PRODUCER = "producer"
T0 = 100_000


# ---- helpers -------------------------------------------------------------------------------


def deliver(broker: Broker, msg: Any, *, src: Any, now: int) -> Context:
    ctx = Context(now, broker.id)
    broker.handle(ctx, src, msg)
    return ctx


def fire(broker: Broker, name: str, data: Any = None, *, now: int) -> Context:
    ctx = Context(now, broker.id)
    broker.on_timer(ctx, name, data)
    return ctx


def sent(ctx: Context, kind: type, dst: Any = None) -> list[Any]:
    """The messages of type ``kind`` the handler sent (to ``dst`` when given)."""
    return [msg for d, msg, *_ in ctx.sends if isinstance(msg, kind) and (dst is None or d == dst)]


def events(ctx: Context, kind: str) -> list[dict[str, Any]]:
    return [data for k, data in ctx.events if k == kind]


def disk_of(*epochs: int, hw_checkpoint: int = 0) -> Disk:
    """A disk whose records were written in the given leader epochs (values m0, m1, ...)."""
    recs = tuple(Record(o, f"m{o}", e) for o, e in enumerate(epochs))
    cache: list[tuple[int, int]] = []
    for rec in recs:
        if not cache or rec.leader_epoch > cache[-1][0]:
            cache.append((rec.leader_epoch, rec.offset))
    return Disk(recs, hw_checkpoint, tuple(cache))


def leader_and_isr(
    leader: int | None,
    epoch: int,
    isr: tuple[int, ...],
    replicas: tuple[int, ...] = (1, 2, 3),
    partition_epoch: int = 0,
) -> m.LeaderAndIsr:
    return m.LeaderAndIsr(TP, 1, leader, epoch, isr, partition_epoch, replicas)


def new_broker(
    broker_id: int = 1,
    *,
    config: Config | None = None,
    disk: Disk | None = None,
    live: tuple[int, ...] = (1, 2, 3),
    now: int = T0,
    auto_fetch: bool = False,
) -> Broker:
    b = Broker(broker_id, config or make_config(), {TP: disk or Disk()}, auto_fetch=auto_fetch)
    deliver(b, m.UpdateMetadata(1, live), src=CONTROLLER, now=now)
    return b


def leader(
    *,
    config: Config | None = None,
    isr: tuple[int, ...] = (1, 2, 3),
    replicas: tuple[int, ...] = (1, 2, 3),
    epoch: int = 0,
    disk: Disk | None = None,
    live: tuple[int, ...] | None = None,
    now: int = T0,
    auto_fetch: bool = False,
) -> Broker:
    """Broker 1, leading the partition (``auto_fetch``: in timed mode, where a fetch that finds
    nothing waits up to its max wait; in stepped mode the wait ends within the step)."""
    b = new_broker(
        1, config=config, disk=disk, live=live or replicas, now=now, auto_fetch=auto_fetch
    )
    deliver(b, leader_and_isr(1, epoch, isr, replicas), src=CONTROLLER, now=now)
    assert replica(b).role == "leader"
    return b


def follower(
    broker_id: int = 2,
    *,
    config: Config | None = None,
    disk: Disk | None = None,
    epoch: int = 0,
    leader_id: int = 1,
    now: int = T0,
) -> Broker:
    b = new_broker(broker_id, config=config, disk=disk, now=now)
    deliver(b, leader_and_isr(leader_id, epoch, (1, 2, 3)), src=CONTROLLER, now=now)
    assert replica(b).role == "follower"
    return b


def replica(b: Broker) -> ReplicaState:
    return b.partitions[TP]


_cid = iter(range(1, 10**9))


def produce(b: Broker, *values: str, acks: int = -1, now: int = T0, timeout_ms: int = 30000):
    req = m.ProduceRequest(TP, next(_cid), tuple(values), acks, timeout_ms)
    return deliver(b, req, src=PRODUCER, now=now)


def produce_responses(ctx: Context) -> list[m.ProduceResponse]:
    return sent(ctx, m.ProduceResponse, PRODUCER)


def fetch(
    b: Broker,
    replica_id: int,
    offset: int,
    *,
    now: int = T0,
    epoch: int | None = 0,
    max_wait_ms: int = 0,
) -> tuple[Context, m.FetchResponse | None]:
    """A follower's Fetch at ``offset``; returns the context and the response, if one was sent."""
    req = m.FetchRequest(TP, replica_id, offset, epoch, max_wait_ms, next(_cid))
    ctx = deliver(b, req, src=replica_id, now=now)
    responses = sent(ctx, m.FetchResponse, replica_id)
    assert len(responses) <= 1
    return ctx, (responses[0] if responses else None)


def fetch_now(b: Broker, *, now: int = T0) -> Any:
    """Tell a follower to do its next round trip; returns the one request it sends."""
    ctx = deliver(b, FetchNow(TP), src="local", now=now)
    assert len(ctx.sends) == 1, ctx.sends
    return ctx.sends[0][1]


# ---- produce -------------------------------------------------------------------------------


def test_leader_appends_a_produce_and_acks_1_answers_at_once():
    b = leader()
    ctx = produce(b, "m1", "m2", acks=1)
    assert replica(b).log.values() == ["m1", "m2"]
    assert [r.leader_epoch for r in replica(b).log.records] == [0, 0]
    assert events(ctx, "append") == [
        {"broker": 1, "tp": TP, "first": 0, "last": 1, "leader_epoch": 0}
    ]
    (resp,) = produce_responses(ctx)
    assert (resp.error, resp.base_offset) == (m.NONE, 0)

    ctx = produce(b, "m3", acks=1)
    assert produce_responses(ctx)[0].base_offset == 2


def test_leader_appends_in_its_own_leader_epoch():
    b = leader(epoch=4)
    produce(b, "m1", acks=1)
    assert replica(b).log.records[0].leader_epoch == 4
    assert replica(b).log.epochs == [(4, 0)]


def test_acks_0_appends_without_any_response():
    b = leader()
    ctx = produce(b, "m1", acks=0)
    assert replica(b).log.values() == ["m1"]
    assert produce_responses(ctx) == []


def test_acks_all_waits_for_the_hw_and_answers_once_followers_have_fetched():
    b = leader()
    ctx = produce(b, "m1", acks=-1)
    assert produce_responses(ctx) == []
    fetch(b, 2, 1)
    _, _ = fetch(b, 3, 0)
    assert replica(b).log.hw == 0
    ctx, _ = fetch(b, 3, 1)
    assert replica(b).log.hw == 1
    (resp,) = produce_responses(ctx)
    assert (resp.error, resp.base_offset) == (m.NONE, 0)


def test_acks_all_times_out_with_request_timed_out():
    b = leader()
    ctx = produce(b, "m1", acks=-1, timeout_ms=500)
    assert (500, "produce_timeout", TP) in ctx.timers
    assert produce_responses(fire(b, "produce_timeout", TP, now=T0 + 499)) == []
    (resp,) = produce_responses(fire(b, "produce_timeout", TP, now=T0 + 500))
    assert resp.error == m.REQUEST_TIMED_OUT
    assert replica(b).log.values() == ["m1"]  # the data stays


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_a_follower_answers_produce_with_not_leader_or_follower(acks: int):
    b = follower()
    ctx = produce(b, "m1", acks=acks)
    assert replica(b).log.values() == []
    if acks == 0:
        assert produce_responses(ctx) == []
    else:
        assert [r.error for r in produce_responses(ctx)] == [m.NOT_LEADER_OR_FOLLOWER]


def test_a_broker_without_a_role_answers_not_leader_or_follower():
    b = new_broker(1)
    assert replica(b).role is None
    ctx = produce(b, "m1", acks=1)
    assert [r.error for r in produce_responses(ctx)] == [m.NOT_LEADER_OR_FOLLOWER]


def test_acks_all_below_min_isr_is_rejected_with_nothing_appended():
    b = leader(config=make_config({"min.insync.replicas": 2}), isr=(1,))
    ctx = produce(b, "m1", acks=-1)
    assert [r.error for r in produce_responses(ctx)] == [m.NOT_ENOUGH_REPLICAS]
    assert replica(b).log.values() == []
    assert events(ctx, "append") == []

    ctx = produce(b, "m2", acks=1)  # acks=1 does not look at the ISR
    assert [r.error for r in produce_responses(ctx)] == [m.NONE]
    assert replica(b).log.values() == ["m2"]


def test_acks_all_with_isr_at_min_isr_is_appended():
    b = leader(config=make_config({"min.insync.replicas": 2}), isr=(1, 2))
    ctx = produce(b, "m1", acks=-1)
    assert produce_responses(ctx) == []  # waiting for the HW, not rejected
    assert replica(b).log.values() == ["m1"]


# ---- fetch (leader side) -------------------------------------------------------------------


def test_fetch_response_carries_the_hw_read_before_the_fetch_offset_is_applied():
    b = leader(isr=(1, 2), replicas=(1, 2))
    produce(b, "m1", acks=1)

    _, resp = fetch(b, 2, 0)
    assert [r.value for r in resp.records] == ["m1"]
    assert (resp.hw, resp.leader_leo) == (0, 1)
    assert replica(b).log.hw == 0

    _, resp = fetch(b, 2, 1)
    assert resp.hw == 0  # read before the follower's offset 1 moved the HW
    assert resp.records == ()
    assert replica(b).log.hw == 1  # ... which it then did

    _, resp = fetch(b, 2, 1)
    assert resp.hw == 1  # the follower learns HW 1 one round later


def test_fetch_returns_the_records_from_the_fetch_offset():
    b = leader(isr=(1, 2), replicas=(1, 2))
    produce(b, "m1", "m2", "m3", acks=1)
    _, resp = fetch(b, 2, 1)
    assert [(r.offset, r.value) for r in resp.records] == [(1, "m2"), (2, "m3")]


def test_fetch_beyond_the_leo_gets_offset_out_of_range_with_the_leaders_leo():
    b = leader(isr=(1, 2), replicas=(1, 2))
    produce(b, "m1", acks=1)
    _, resp = fetch(b, 2, 2)
    assert resp.error == m.OFFSET_OUT_OF_RANGE
    assert resp.leader_leo == 1
    assert resp.records == ()
    assert replica(b).remotes[2].leo == -1  # the bad fetch taught the leader nothing

    _, resp = fetch(b, 2, 1)  # exactly the LEO is fine
    assert resp.error == m.NONE


def test_an_empty_fetch_with_max_wait_waits_in_purgatory_and_a_produce_completes_it():
    b = leader(isr=(1, 2), replicas=(1, 2), auto_fetch=True)
    ctx, resp = fetch(b, 2, 0, max_wait_ms=500)
    assert resp is None
    assert (500, "fetch_wait", TP) in ctx.timers
    assert len(replica(b).delayed_fetches) == 1

    ctx = produce(b, "m1", acks=1, now=T0 + 100)

    (resp,) = sent(ctx, m.FetchResponse, 2)
    assert resp.error == m.NONE
    assert [r.value for r in resp.records] == ["m1"]
    assert replica(b).delayed_fetches == []
    # The waiting fetch is not answered again when its timer fires.
    assert sent(fire(b, "fetch_wait", TP, now=T0 + 500), m.FetchResponse) == []


def test_a_waiting_fetch_is_answered_empty_when_max_wait_expires():
    b = leader(isr=(1, 2), replicas=(1, 2), auto_fetch=True)
    fetch(b, 2, 0, max_wait_ms=500)
    assert sent(fire(b, "fetch_wait", TP, now=T0 + 499), m.FetchResponse) == []
    (resp,) = sent(fire(b, "fetch_wait", TP, now=T0 + 500), m.FetchResponse, 2)
    assert (resp.error, resp.records) == (m.NONE, ())


def test_a_fetch_with_data_is_answered_at_once_even_with_max_wait():
    b = leader(isr=(1, 2), replicas=(1, 2))
    produce(b, "m1", acks=1)
    _, resp = fetch(b, 2, 0, max_wait_ms=500)
    assert resp is not None and [r.value for r in resp.records] == ["m1"]
    assert replica(b).delayed_fetches == []


@pytest.mark.parametrize(
    ("current_epoch", "error"),
    [(2, m.FENCED_LEADER_EPOCH), (4, m.UNKNOWN_LEADER_EPOCH), (3, m.NONE), (None, m.NONE)],
)
def test_kip320_fetch_epoch_check(current_epoch: int | None, error: str):
    b = leader(epoch=3)
    _, resp = fetch(b, 2, 0, epoch=current_epoch)
    assert resp.error == error


@pytest.mark.parametrize("current_epoch", [2, 4])
def test_without_kip320_the_current_leader_epoch_is_not_checked(current_epoch: int):
    b = leader(epoch=3, config=make_config({"kip320": False}))
    _, resp = fetch(b, 2, 0, epoch=current_epoch)
    assert resp.error == m.NONE


@pytest.mark.parametrize(
    ("current_epoch", "error"), [(2, m.FENCED_LEADER_EPOCH), (4, m.UNKNOWN_LEADER_EPOCH)]
)
def test_kip320_also_checks_offsets_for_leader_epoch_requests(current_epoch: int, error: str):
    b = leader(epoch=3)
    req = m.OffsetsForLeaderEpochRequest(TP, 2, 0, current_epoch, 7)
    (resp,) = sent(deliver(b, req, src=2, now=T0), m.OffsetsForLeaderEpochResponse, 2)
    assert (resp.error, resp.leader_epoch, resp.end_offset) == (
        error,
        UNDEFINED_EPOCH,
        UNDEFINED_OFFSET,
    )


def test_a_follower_answers_fetch_with_not_leader_or_follower():
    b = follower(3)
    _, resp = fetch(b, 2, 0)
    assert resp.error == m.NOT_LEADER_OR_FOLLOWER


# ---- lastCaughtUpTime, ISR shrink and expand ------------------------------------------------


def test_last_caught_up_time_follows_the_fetch_offsets():
    """SEMANTICS 2: now when the fetch reaches the leader's LEO; the time of the previous fetch
    when it reaches the LEO the leader had then; else unchanged."""
    b = leader(isr=(1, 2), replicas=(1, 2))
    remote = replica(b).remotes[2]
    assert remote.last_caught_up_ms == T0  # an ISR follower of a new leader: now

    fetch(b, 2, 0, now=T0 + 1000)  # at the LEO (0)
    assert remote.last_caught_up_ms == T0 + 1000

    produce(b, "m1", acks=1, now=T0 + 2000)
    fetch(b, 2, 0, now=T0 + 3000)  # behind LEO 1, but at the LEO of the previous fetch (0)
    assert remote.last_caught_up_ms == T0 + 1000

    produce(b, "m2", acks=1, now=T0 + 4000)
    fetch(b, 2, 1, now=T0 + 5000)  # reaches LEO 1 of the previous fetch, made at T0+3000
    assert remote.last_caught_up_ms == T0 + 3000

    fetch(b, 2, 1, now=T0 + 6000)  # behind LEO 2 of the previous fetch: unchanged
    assert remote.last_caught_up_ms == T0 + 3000

    fetch(b, 2, 2, now=T0 + 7000)
    assert remote.last_caught_up_ms == T0 + 7000
    assert remote.leo == 2


def test_a_non_isr_follower_of_a_new_leader_has_never_caught_up():
    b = leader(isr=(1, 2), replicas=(1, 2, 3))
    assert replica(b).remotes[2].last_caught_up_ms == T0
    assert replica(b).remotes[3].last_caught_up_ms == NEVER_MS
    # "never" stays never even when the simulated clock is still near 0
    assert not b._caught_up(replica(b), replica(b).remotes[3], 0)


def test_isr_expiration_shrinks_a_follower_lagging_longer_than_the_lag_time():
    lag = 10_000
    b = leader(config=make_config({"replica.lag.time.max.ms": lag}), isr=(1, 2, 3))
    produce(b, "m1", acks=1, now=T0)
    fetch(b, 2, 1, now=T0 + 20)  # follower 2 reaches the LEO: caught up at T0 + 20
    fetch(b, 3, 0, now=T0 + 20)  # follower 3 stays behind: last caught up at T0

    ctx = fire(b, "isr_expiration", now=T0 + lag)
    assert sent(ctx, m.AlterIsr) == []  # exactly the lag time is still caught up
    assert (lag // 2, "isr_expiration", None) in ctx.timers  # the periodic task reschedules

    ctx = fire(b, "isr_expiration", now=T0 + lag + 1)
    assert sent(ctx, m.AlterIsr, CONTROLLER) == [m.AlterIsr(TP, 1, 0, 0, (1, 2))]
    assert events(ctx, "alter_isr") == [{"broker": 1, "tp": TP, "isr": [1, 2], "reason": "shrink"}]
    assert replica(b).isr == (1, 2, 3)  # not applied until the controller commits it

    resp = m.AlterIsrResponse(TP, m.NONE, 0, 1, (1, 2))
    ctx = deliver(b, resp, src=CONTROLLER, now=T0 + lag + 2)
    assert replica(b).isr == (1, 2)
    assert replica(b).partition_epoch == 1
    assert events(ctx, "isr_applied") == [{"broker": 1, "tp": TP, "isr": [1, 2]}]


def test_a_follower_at_the_leaders_leo_stays_in_the_isr_however_old_its_fetch():
    b = leader(isr=(1, 2), replicas=(1, 2))
    produce(b, "m1", acks=1, now=T0)
    fetch(b, 2, 1, now=T0 + 1)
    ctx = fire(b, "isr_expiration", now=T0 + 1_000_000)
    assert sent(ctx, m.AlterIsr) == []


def test_no_second_alter_isr_while_one_is_pending():
    b = leader(config=make_config({"replica.lag.time.max.ms": 1000}), isr=(1, 2, 3))
    produce(b, "m1", acks=1)
    assert len(sent(fire(b, "isr_expiration", now=T0 + 5000), m.AlterIsr)) == 1
    assert sent(fire(b, "isr_expiration", now=T0 + 6000), m.AlterIsr) == []


@pytest.mark.parametrize(("burst", "shrinks"), [(3, False), (4, True)])
def test_legacy_lag_max_messages_drops_a_recent_follower_lagging_more_than_n(
    burst: int, shrinks: bool
):
    config = make_config({"replica.lag.max.messages": 3})
    b = leader(config=config, isr=(1, 2), replicas=(1, 2))
    fetch(b, 2, 0, now=T0 + 1)  # caught up just now
    produce(b, *[f"m{i}" for i in range(burst)], acks=1, now=T0 + 2)

    ctx = fire(b, "isr_expiration", now=T0 + 3)

    expected = [m.AlterIsr(TP, 1, 0, 0, (1,))] if shrinks else []
    assert sent(ctx, m.AlterIsr) == expected


def test_without_the_legacy_rule_a_burst_does_not_shrink_a_recent_follower():
    b = leader(isr=(1, 2), replicas=(1, 2))
    fetch(b, 2, 0, now=T0 + 1)
    produce(b, *[f"m{i}" for i in range(10_000)], acks=1, now=T0 + 2)
    assert sent(fire(b, "isr_expiration", now=T0 + 3), m.AlterIsr) == []


def test_a_non_isr_follower_joins_once_its_leo_reaches_the_hw():
    b = leader(isr=(1, 2), replicas=(1, 2, 3))
    produce(b, "m1", "m2", acks=1)
    fetch(b, 2, 2)
    assert replica(b).log.hw == 2

    ctx, _ = fetch(b, 3, 1)
    assert sent(ctx, m.AlterIsr) == []

    ctx, _ = fetch(b, 3, 2, now=T0 + 1)
    assert sent(ctx, m.AlterIsr, CONTROLLER) == [m.AlterIsr(TP, 1, 0, 0, (1, 2, 3))]
    assert events(ctx, "alter_isr")[0]["reason"] == "expand"
    ctx = deliver(b, m.AlterIsrResponse(TP, m.NONE, 0, 1, (1, 2, 3)), src=CONTROLLER, now=T0 + 2)
    assert replica(b).isr == (1, 2, 3)


def test_a_follower_that_is_not_live_does_not_join_the_isr():
    b = leader(isr=(1, 2), replicas=(1, 2, 3), live=(1, 2))
    produce(b, "m1", acks=1)
    fetch(b, 2, 1)
    ctx, _ = fetch(b, 3, 1)
    assert sent(ctx, m.AlterIsr) == []


def test_a_follower_joins_only_from_the_start_of_the_leaders_epoch():
    """KAFKA-7128: reaching the HW is not enough when the current epoch starts later."""
    # ISR follower 3 has not fetched yet, so the new leader's HW stays at its checkpoint, 1.
    b = leader(isr=(1, 3), epoch=1, disk=disk_of(0, 0, 0, hw_checkpoint=1))
    assert replica(b).log.hw == 1
    assert replica(b).log.epoch_start_offset(1) == 3

    ctx, _ = fetch(b, 2, 2, epoch=1)
    assert sent(ctx, m.AlterIsr) == []
    ctx, _ = fetch(b, 2, 3, epoch=1)
    assert sent(ctx, m.AlterIsr) == [m.AlterIsr(TP, 1, 1, 0, (1, 3, 2))]


def test_a_rejected_alter_isr_leaves_the_isr_unchanged():
    b = leader(config=make_config({"replica.lag.time.max.ms": 1000}), isr=(1, 2, 3))
    produce(b, "m1", acks=1)
    fire(b, "isr_expiration", now=T0 + 5000)
    resp = m.AlterIsrResponse(TP, m.FENCED_LEADER_EPOCH, 1, 4, (1, 2, 3))
    ctx = deliver(b, resp, src=CONTROLLER, now=T0 + 5001)
    assert replica(b).isr == (1, 2, 3)
    assert events(ctx, "isr_applied") == []
    # Partition.handleAlterPartitionError: a stale view waits for new metadata, no retry
    assert replica(b).alter_isr_pending
    assert sent(fire(b, "isr_expiration", now=T0 + 5500), m.AlterIsr) == []
    deliver(b, leader_and_isr(1, 1, (1, 2, 3), partition_epoch=4), src=CONTROLLER, now=T0 + 6000)
    assert not replica(b).alter_isr_pending


def test_an_ineligible_replica_answer_restores_the_committed_state():
    b = leader(config=make_config({"replica.lag.time.max.ms": 1000}), isr=(1, 2, 3))
    produce(b, "m1", acks=1)
    fire(b, "isr_expiration", now=T0 + 5000)
    resp = m.AlterIsrResponse(TP, m.INELIGIBLE_REPLICA, 0, 0, (1, 2, 3))
    deliver(b, resp, src=CONTROLLER, now=T0 + 5001)
    assert replica(b).isr == (1, 2, 3)
    assert not replica(b).alter_isr_pending and replica(b).maximal_isr == ()


# ---- becoming a follower and truncation ---------------------------------------------------


def test_without_leader_epochs_a_new_follower_truncates_to_its_hw_at_once():
    config = make_config({"leader_epochs": False})
    b = new_broker(2, config=config, disk=disk_of(0, 0, 0, hw_checkpoint=1))
    ctx = deliver(b, leader_and_isr(1, 1, (1, 2, 3)), src=CONTROLLER, now=T0)
    assert replica(b).log.values() == ["m0"]
    (trunc,) = events(ctx, "truncate")
    assert (trunc["to"], trunc["old_leo"], trunc["removed"], trunc["reason"]) == (
        1,
        3,
        ["m1", "m2"],
        "truncate_to_hw",
    )
    req = fetch_now(b)
    assert isinstance(req, m.FetchRequest)
    assert req.fetch_offset == 1


def test_before_2_8_a_new_follower_asks_where_its_epoch_ends_before_fetching():
    b = new_broker(2, disk=disk_of(0, 0, 3, hw_checkpoint=1), config=EPOCH_REQUESTS)
    ctx = deliver(b, leader_and_isr(1, 4, (1, 2, 3)), src=CONTROLLER, now=T0)
    assert events(ctx, "truncate") == []
    assert replica(b).log.values() == ["m0", "m1", "m2"]
    assert ctx.sends == []  # stepped mode: nothing until told to fetch

    req = fetch_now(b)
    assert req == m.OffsetsForLeaderEpochRequest(TP, 2, 3, 4, req.correlation_id)


def test_with_leader_epochs_an_empty_follower_fetches_straight_away():
    b = new_broker(2)
    deliver(b, leader_and_isr(1, 1, (1, 2, 3)), src=CONTROLLER, now=T0)
    req = fetch_now(b)
    assert isinstance(req, m.FetchRequest)
    assert req.fetch_offset == 0


def test_without_kip320_requests_carry_no_current_leader_epoch():
    config = EPOCH_REQUESTS.replace(kip320=False)
    b = follower(2, config=config, disk=disk_of(0), epoch=2)
    req = fetch_now(b)
    assert isinstance(req, m.OffsetsForLeaderEpochRequest)
    assert req.current_leader_epoch is None


def epoch_answer(req: m.OffsetsForLeaderEpochRequest, epoch: int, end: int):
    return m.OffsetsForLeaderEpochResponse(TP, req.correlation_id, m.NONE, epoch, end)


@pytest.mark.parametrize(("end", "kept"), [(2, ["m0", "m1"]), (5, ["m0", "m1", "m2"])])
def test_kip101_follower_truncates_to_min_of_the_leaders_end_and_its_leo(end: int, kept: list[str]):
    config = EPOCH_REQUESTS.replace(kip279=False)
    b = follower(2, config=config, disk=disk_of(0, 0, 0), epoch=1)
    req = fetch_now(b)
    deliver(b, epoch_answer(req, UNDEFINED_EPOCH, end), src=1, now=T0)
    assert replica(b).log.values() == kept
    nxt = fetch_now(b)
    assert isinstance(nxt, m.FetchRequest)
    assert nxt.fetch_offset == len(kept)


def test_kip101_follower_does_not_truncate_to_its_hw():
    config = EPOCH_REQUESTS.replace(kip279=False)
    b = follower(2, config=config, disk=disk_of(0, 0, 0, hw_checkpoint=1))
    req = fetch_now(b)
    deliver(b, epoch_answer(req, UNDEFINED_EPOCH, 3), src=1, now=T0)
    assert replica(b).log.leo == 3


def test_an_undefined_epoch_answer_makes_the_follower_truncate_to_its_hw():
    b = follower(2, disk=disk_of(0, 0, 0, hw_checkpoint=1), epoch=1, config=EPOCH_REQUESTS)
    req = fetch_now(b)
    ctx = deliver(b, epoch_answer(req, UNDEFINED_EPOCH, UNDEFINED_OFFSET), src=1, now=T0)
    assert replica(b).log.values() == ["m0"]
    assert events(ctx, "truncate")[0]["reason"] == "leader_epoch"
    assert isinstance(fetch_now(b), m.FetchRequest)


def test_kip279_follower_loops_until_the_epochs_match():
    # Follower: epochs 0 (offsets 0-1) and 2 (offsets 2-3). The leader knows epochs 0, 1, 3.
    b = follower(2, disk=disk_of(0, 0, 2, 2), epoch=3, config=EPOCH_REQUESTS)
    req = fetch_now(b)
    assert req.leader_epoch == 2

    # The leader has no epoch 2: it answers epoch 1 ending at 3. The follower does not know
    # epoch 1, so it truncates to where its own epoch <= 1 (epoch 0) ends, 2, and asks again.
    deliver(b, epoch_answer(req, 1, 3), src=1, now=T0)
    assert replica(b).log.values() == ["m0", "m1"]
    assert replica(b).log.epochs == [(0, 0)]
    req = fetch_now(b)
    assert isinstance(req, m.OffsetsForLeaderEpochRequest)
    assert req.leader_epoch == 0

    # The leader's epoch 0 ends at 1: the epochs match, truncate to min(1, own end 2).
    deliver(b, epoch_answer(req, 0, 1), src=1, now=T0)
    assert replica(b).log.values() == ["m0"]
    nxt = fetch_now(b)
    assert isinstance(nxt, m.FetchRequest)
    assert nxt.fetch_offset == 1


def test_kip279_matching_epoch_truncates_to_the_smaller_end():
    b = follower(2, disk=disk_of(0, 0, 2, 2), epoch=3, config=EPOCH_REQUESTS)
    req = fetch_now(b)
    deliver(b, epoch_answer(req, 2, 3), src=1, now=T0)
    assert replica(b).log.values() == ["m0", "m1", "m2"]
    assert isinstance(fetch_now(b), m.FetchRequest)


def test_an_epoch_answer_for_an_old_request_is_ignored():
    b = follower(2, disk=disk_of(0, 0, 0), epoch=1, config=EPOCH_REQUESTS)
    req = fetch_now(b)
    stale = m.OffsetsForLeaderEpochResponse(TP, req.correlation_id - 1, m.NONE, 0, 0)
    deliver(b, stale, src=1, now=T0)
    assert replica(b).log.leo == 3


def test_follower_hw_is_min_of_the_responses_hw_and_its_leo():
    b = follower(2)
    req = fetch_now(b)
    recs = (Record(0, "m0", 0), Record(1, "m1", 0))
    resp = m.FetchResponse(TP, req.correlation_id, m.NONE, recs, hw=5, leader_leo=2)
    deliver(b, resp, src=1, now=T0)
    assert replica(b).log.values() == ["m0", "m1"]
    assert replica(b).log.hw == 2


def test_offset_out_of_range_makes_a_follower_ahead_truncate_to_the_leaders_leo():
    b = follower(2, disk=disk_of(0, 0, 0, hw_checkpoint=3), config=make_config({"preset": "0.8"}))
    req = fetch_now(b)
    resp = m.FetchResponse(TP, req.correlation_id, m.OFFSET_OUT_OF_RANGE, leader_leo=1)
    ctx = deliver(b, resp, src=1, now=T0)
    assert replica(b).log.values() == ["m0"]
    assert events(ctx, "truncate")[0]["reason"] == "offset_out_of_range"


def test_without_leader_epochs_or_unclean_election_a_follower_ahead_halts():
    """0.10 with unclean election off: "Exiting because log truncation is not allowed"."""
    config = make_config({"preset": "0.10", "unclean.leader.election.enable": False})
    b = follower(2, disk=disk_of(0, 0, 0, hw_checkpoint=3), config=config)
    req = fetch_now(b)
    resp = m.FetchResponse(TP, req.correlation_id, m.OFFSET_OUT_OF_RANGE, leader_leo=1)
    ctx = deliver(b, resp, src=1, now=T0)
    assert ctx.halt is not None and "halts" in ctx.halt
    assert replica(b).log.leo == 3


# ---- HW freeze under min ISR (KAFKA-15583) -------------------------------------------------


@pytest.mark.parametrize(("freeze", "hw"), [(True, 0), (False, 1)])
def test_hw_freeze_under_min_isr(freeze: bool, hw: int):
    config = make_config({"min.insync.replicas": 2, "hw_freeze_under_min_isr": freeze})
    b = leader(config=config, isr=(1,))
    produce(b, "m1", acks=1)
    assert replica(b).log.hw == hw


def shrink_to_leader_alone(b: Broker, now: int) -> Context:
    ctx = fire(b, "isr_expiration", now=now)
    assert sent(ctx, m.AlterIsr) == [m.AlterIsr(TP, 1, 0, 0, (1,))]
    return deliver(b, m.AlterIsrResponse(TP, m.NONE, 0, 1, (1,)), src=CONTROLLER, now=now)


def test_with_the_hw_frozen_an_acks_all_write_waits_when_the_isr_shrinks():
    lag = 1000
    config = make_config({"min.insync.replicas": 2, "replica.lag.time.max.ms": lag})
    b = leader(config=config, isr=(1, 2), replicas=(1, 2))
    assert produce_responses(produce(b, "m1", acks=-1)) == []

    ctx = shrink_to_leader_alone(b, T0 + lag + 1)

    assert replica(b).isr == (1,)
    assert replica(b).log.hw == 0
    assert produce_responses(ctx) == []


def test_without_the_hw_freeze_an_acks_all_write_gets_not_enough_replicas_after_append():
    lag = 1000
    config = make_config(
        {"min.insync.replicas": 2, "replica.lag.time.max.ms": lag, "hw_freeze_under_min_isr": False}
    )
    b = leader(config=config, isr=(1, 2), replicas=(1, 2))
    assert produce_responses(produce(b, "m1", acks=-1)) == []

    ctx = shrink_to_leader_alone(b, T0 + lag + 1)

    assert replica(b).log.hw == 1
    (resp,) = produce_responses(ctx)
    assert (resp.error, resp.base_offset) == (m.NOT_ENOUGH_REPLICAS_AFTER_APPEND, 0)
    assert replica(b).log.values() == ["m1"]  # the data is stored all the same


# ---- the same rules through the Cluster facade ---------------------------------------------


def test_cluster_idle_follower_learns_the_hw_from_the_fetch_that_raised_it():
    # ReplicaManager.fetchMessages parks an empty read; DelayedFetch.onComplete reads again.
    c = Cluster(brokers=2, leader=2)
    c.produce("m1")
    c.fetch(1)
    assert (c.replica(2).hw, c.replica(1).hw) == (0, 0)
    c.fetch(1)
    assert (c.replica(2).hw, c.replica(1).hw) == (1, 1)
    assert c.report().acked == ["m1"]


def test_cluster_fetch_answered_at_once_carries_the_hw_from_before_it():
    c = Cluster(brokers=2, leader=2)
    c.produce("m1")
    c.fetch(1)
    c.fetch(1, max_wait_ms=0)
    assert (c.replica(2).hw, c.replica(1).hw) == (1, 0)
    c.fetch(1, max_wait_ms=0)
    assert (c.replica(2).hw, c.replica(1).hw) == (1, 1)


def test_cluster_isr_shrinks_after_the_lag_time_and_expands_on_catching_up():
    c = Cluster(brokers=2, leader=1, config={"replica.lag.time.max.ms": 10_000})
    c.produce("m1", acks=1)
    c.advance(15_000)  # the shrink task (every 5 s) finds broker 2 lagging past 10 s
    assert c.isr == [1]
    assert c.report().isr_shrinks == 1
    c.fetch(2)  # fetches at 0, copies m1: LEO 1 >= HW 1 only on the next fetch
    c.fetch(2)
    assert c.isr == [1, 2]
    assert c.report().isr_expands == 1


# ---- known deviations from Kafka -----------------------------------------------------------


def test_a_live_non_isr_follower_that_never_fetched_does_not_hold_the_hw_back():
    c = Cluster(brokers=3, leader=1, config={"zookeeper.session.timeout.ms": 3000})
    c.crash(3)
    c.advance(3000)  # 3's session expires: ISR [1, 2]
    c.restart(3)  # live again, but not in the ISR and it does not fetch
    c.crash(1)
    c.advance(3000)  # 2 leads with ISR [2]
    assert (c.leader, c.isr) == (2, [2])
    c.produce("m1", acks=1)
    assert c.replica(2).hw == 1


def test_without_leader_epochs_an_isr_change_with_the_same_leader_does_not_truncate():
    b = follower(2, config=make_config({"preset": "0.10"}), disk=disk_of(0, hw_checkpoint=1))
    req = fetch_now(b)
    recs = (Record(1, "m1", 0), Record(2, "m2", 0))
    deliver(b, m.FetchResponse(TP, req.correlation_id, m.NONE, recs, 1, 3), src=1, now=T0)
    assert (replica(b).log.leo, replica(b).log.hw) == (3, 1)

    ctx = deliver(b, leader_and_isr(1, 1, (1, 2)), src=CONTROLLER, now=T0 + 1)

    assert events(ctx, "truncate") == []
    assert replica(b).log.leo == 3


def test_cluster_0_10_follower_keeps_an_acked_record_through_an_isr_shrink():
    c = Cluster(brokers=3, leader=1, config={"preset": "0.10"})
    c.produce("m1")
    c.fetch(2)
    c.fetch(3)
    c.fetch(2)
    c.fetch(3)  # HW 1 on the leader: m1 acknowledged; follower 2 has m1 with HW 0
    assert c.report().acked == ["m1"]
    c.crash(3)
    c.advance(6000)  # 3's session expires: ISR [1, 2], leader epoch 1, same leader
    assert c.logs()[2] == ["m1"]
    c.crash(1)
    c.advance(6000)  # 2, in the ISR, leads
    assert c.leader == 2
    assert c.report().lost_acked == []


def test_a_waiting_fetch_updates_the_follower_state_only_when_it_arrives():
    b = leader(isr=(1, 2), replicas=(1, 2), auto_fetch=True)
    produce(b, "m1", acks=1, now=T0)
    fetch(b, 2, 1, now=T0 + 10, max_wait_ms=500)
    fire(b, "fetch_wait", TP, now=T0 + 510)
    remote = replica(b).remotes[2]
    assert (remote.last_caught_up_ms, remote.last_fetch_ms) == (T0 + 10, T0 + 10)


# ---- the replica fetcher's back-off (KAFKA-1461, 0.9) --------------------------------------


def _auto_follower(preset: str | None) -> tuple[Broker, m.FetchRequest]:
    """Broker 2 following broker 1 in timed mode; its first fetch, sent at T0."""
    config = make_config({"preset": preset}) if preset else make_config()
    b = new_broker(2, config=config, auto_fetch=True)
    ctx = deliver(b, leader_and_isr(1, 0, (1, 2, 3)), src=CONTROLLER, now=T0)
    (req,) = sent(ctx, m.FetchRequest, 1)
    return b, req


def _backoff_timers(ctx: Context) -> list[int]:
    return [delay for delay, name, _ in ctx.timers if name == "fetch_backoff"]


@pytest.mark.parametrize("preset", [None, "0.9"])
def test_a_refused_fetch_backs_off_replica_fetch_backoff_ms(preset: str | None) -> None:
    """ReplicaFetcherThread.handlePartitionsWithErrors (0.9 on): delayPartitions by
    replica.fetch.backoff.ms (1000) before the next fetch."""
    b, req = _auto_follower(preset)
    resp = m.FetchResponse(TP, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER)
    ctx = deliver(b, resp, src=1, now=T0 + 3)
    assert (sent(ctx, m.FetchRequest), _backoff_timers(ctx)) == ([], [1000])


def test_the_0_8_fetcher_fetches_again_at_once_after_an_error() -> None:
    """0.8.2's AbstractFetcherThread had no back-off: handlePartitionsWithErrors did nothing
    and doWork sent the next request straight away. On a network without latency (the answer
    came in the instant the request went) the simulator waits 1 ms so that time passes."""
    b, req = _auto_follower("0.8")
    resp = m.FetchResponse(TP, req.correlation_id, m.NOT_LEADER_OR_FOLLOWER)
    ctx = deliver(b, resp, src=1, now=T0 + 3)
    (again,) = sent(ctx, m.FetchRequest, 1)
    assert (again.fetch_offset, _backoff_timers(ctx)) == (0, [])
    ctx = deliver(
        b, m.FetchResponse(TP, again.correlation_id, m.NOT_LEADER_OR_FOLLOWER), src=1, now=T0 + 3
    )
    assert (sent(ctx, m.FetchRequest), _backoff_timers(ctx)) == ([], [1])


@pytest.mark.parametrize(("preset", "backoff"), [(None, [1000]), ("0.9", [1000]), ("0.8", [])])
def test_an_unanswered_fetch_is_a_failed_fetch(preset: str | None, backoff: list[int]) -> None:
    """processFetchRequest: a fetch that fails (no answer within the timeout) marks its
    partitions as failed, which back off (since 0.9); the 0.8 fetcher sent the next at once."""
    b, _ = _auto_follower(preset)
    deadline = replica(b).fetch_deadline_ms
    ctx = fire(b, "fetch_timeout", TP, now=deadline)
    assert _backoff_timers(ctx) == backoff
    assert len(sent(ctx, m.FetchRequest, 1)) == (0 if backoff else 1)
