"""Helpers that drive one broker actor the way Kafka's unit tests drive a Partition: a
LeaderAndIsr stands for makeLeader/makeFollower, a FetchRequest for fetchFollower, an
AlterIsrResponse for the AlterPartition manager completing or failing an update."""

from __future__ import annotations

import itertools
from typing import Any

from kafkalab.config import Config, make_config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context
from kafkalab.protocol.broker import Broker, FetchNow
from kafkalab.protocol.log import Disk, Record

TP = "demo-0"
CONTROLLER = "controller"
T0 = 1_000_000  # a clock well past any lag time, as Kafka's MockTime starts far from 0

_cid = itertools.count(1)


def deliver(b: Broker, msg: Any, *, src: Any, now: int) -> Context:
    ctx = Context(now, b.id)
    b.handle(ctx, src, msg)
    return ctx


def sent(ctx: Context, kind: type) -> list[Any]:
    return [msg for _, msg, *_ in ctx.sends if isinstance(msg, kind)]


def disk(*epochs: int, hw: int = 0) -> Disk:
    """A log whose record i was written in leader epoch epochs[i] (Kafka's seedLogData)."""
    recs = tuple(Record(o, f"v{o}", e) for o, e in enumerate(epochs))
    cache: list[tuple[int, int]] = []
    for r in recs:
        if not cache or r.leader_epoch > cache[-1][0]:
            cache.append((r.leader_epoch, r.offset))
    return Disk(recs, hw, tuple(cache))


def broker(
    broker_id: int = 1,
    *,
    log: Disk | None = None,
    live: tuple[int, ...] = (1, 2, 3),
    config: Config | None = None,
    now: int = T0,
) -> Broker:
    b = Broker(broker_id, config or make_config(), {TP: log or Disk()}, auto_fetch=False)
    deliver(b, m.UpdateMetadata(1, live), src=CONTROLLER, now=now)
    return b


def leader_and_isr(
    b: Broker,
    leader: int | None,
    epoch: int,
    isr: tuple[int, ...],
    replicas: tuple[int, ...],
    *,
    partition_epoch: int = 1,
    now: int = T0,
) -> Context:
    msg = m.LeaderAndIsr(TP, 1, leader, epoch, isr, partition_epoch, replicas)
    return deliver(b, msg, src=CONTROLLER, now=now)


def fetch(
    b: Broker, replica_id: int, offset: int, *, epoch: int | None = None, now: int = T0
) -> m.FetchResponse | None:
    req = m.FetchRequest(TP, replica_id, offset, epoch, 0, next(_cid))
    got = sent(deliver(b, req, src=replica_id, now=now), m.FetchResponse)
    return got[0] if got else None


def epoch_request(
    b: Broker, epoch: int, *, current: int | None = None, tp: str = TP, now: int = T0
) -> m.OffsetsForLeaderEpochResponse:
    req = m.OffsetsForLeaderEpochRequest(tp, 99, epoch, current, next(_cid))
    (resp,) = sent(deliver(b, req, src=99, now=now), m.OffsetsForLeaderEpochResponse)
    return resp


def alter_isr_sent(ctx: Context) -> list[m.AlterIsr]:
    return sent(ctx, m.AlterIsr)


def complete_alter_isr(
    b: Broker, isr: tuple[int, ...], partition_epoch: int, *, error: str = m.NONE, now: int = T0
) -> Context:
    r = b.partitions[TP]
    resp = m.AlterIsrResponse(TP, error, r.leader_epoch, partition_epoch, isr)
    return deliver(b, resp, src=CONTROLLER, now=now)


def produce(b: Broker, *values: str, now: int = T0) -> Context:
    req = m.ProduceRequest(TP, next(_cid), tuple(values), 1, 30000)
    return deliver(b, req, src="producer", now=now)


def round_trip(follower: Broker, leader: Broker, *, now: int = T0) -> Any:
    """One doWork() of the follower's fetcher: its request and the leader's answer."""
    ctx = deliver(follower, FetchNow(TP), src="local", now=now)
    (request,) = [msg for _, msg, *_ in ctx.sends]
    lctx = deliver(leader, request, src=follower.id, now=now)
    (response,) = [msg for dst, msg, *_ in lctx.sends if dst == follower.id]
    deliver(follower, response, src=leader.id, now=now)
    return response
