"""ZooKeeper (broker sessions) and the controller (partition state, leader election).

The ZooKeeper-era model of the seeds: brokers hold ephemeral registrations kept alive by
heartbeats; a broker is seen as failed when its session expires; the controller elects leaders
and pushes LeaderAndIsr. The controller runs at its own address so that a later controller
election can move it onto a broker.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kafkalab.config import Config
from kafkalab.protocol import messages as m
from kafkalab.protocol.actor import Context

__all__ = ["Controller", "PartitionState", "ZooKeeper"]

CONTROLLER = "controller"


class ZooKeeper:
    """Broker sessions: created on registration, kept alive by heartbeats, expired after
    zookeeper.session.timeout.ms without one. The controller watches /brokers/ids."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.sessions: dict[int, tuple[int, int]] = {}  # broker -> (session id, last heard ms)
        self.next_zxid = 0

    def start(self, ctx: Context) -> None:
        pass

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, m.ZkRegister):
            self._register(ctx, src, msg.broker)
        elif isinstance(msg, m.ZkHeartbeat):
            session = self.sessions.get(msg.broker)
            if session is not None and session[0] == msg.session:
                self.sessions[msg.broker] = (msg.session, ctx.now)
            else:
                ctx.send(src, m.ZkSessionExpired(msg.session))

    def _register(self, ctx: Context, src: Any, broker: int) -> None:
        self.next_zxid += 1
        self.sessions[broker] = (self.next_zxid, ctx.now)
        ctx.emit("zk_session", broker=broker, session=self.next_zxid)
        ctx.send(src, m.ZkRegistered(self.next_zxid))
        ctx.set_timer(self.config.zookeeper_session_timeout_ms, "expire", (broker, self.next_zxid))
        self._notify(ctx)

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        broker, session = data
        current = self.sessions.get(broker)
        if current is None or current[0] != session:
            return
        due = current[1] + self.config.zookeeper_session_timeout_ms
        if ctx.now >= due:
            del self.sessions[broker]
            ctx.emit("zk_session_expired", broker=broker, session=session)
            self._notify(ctx)
        else:
            ctx.set_timer(due - ctx.now, "expire", data)

    def _notify(self, ctx: Context) -> None:
        live = tuple(sorted((b, s) for b, (s, _) in self.sessions.items()))
        ctx.send(CONTROLLER, m.BrokerChange(live))


@dataclass(frozen=True, slots=True)
class PartitionState:
    """The partition's state as the controller holds it (the /brokers/topics/.../state znode)."""

    replicas: tuple[int, ...]
    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int = 0


class Controller:
    """The ZooKeeper-era controller (KafkaController)."""

    def __init__(
        self, config: Config, partitions: dict[str, PartitionState], controller_epoch: int = 1
    ) -> None:
        self.config = config
        self.partitions = dict(partitions)
        self.controller_epoch = controller_epoch
        self.live: dict[int, int] = {}  # broker -> broker epoch (czxid of its registration)

    def start(self, ctx: Context) -> None:
        pass

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        pass

    def handle(self, ctx: Context, src: Any, msg: Any) -> None:
        if isinstance(msg, m.BrokerChange):
            self._on_broker_change(ctx, dict(msg.live))
        elif isinstance(msg, m.AlterIsr):
            self._on_alter_isr(ctx, src, msg)

    # ---- broker liveness ----------------------------------------------------------------------

    def _on_broker_change(self, ctx: Context, live: dict[int, int]) -> None:
        """KafkaController.BrokerChange.process. Since 2.2 (KIP-380) a broker whose epoch
        changed bounced: it is handled as a failure followed by a startup. Before, the controller
        did not treat the bounce as a failure (the restarted broker kept its ISR membership); the
        simulator still sends it its partition state so it can take its role."""
        dead = [b for b in self.live if b not in live]
        started = [b for b in live if b not in self.live]
        bounced = [b for b in live if b in self.live and live[b] != self.live[b]]
        if self.config.broker_epoch and bounced:
            dead += bounced
            started += bounced
        if dead:
            for b in dead:
                self.live.pop(b, None)
            self._on_broker_failure(ctx, sorted(dead))
        self.live = dict(live)
        restarted = started if self.config.broker_epoch else started + bounced
        if restarted:
            self._on_broker_startup(ctx, sorted(restarted))

    def _on_broker_failure(self, ctx: Context, dead: list[int]) -> None:
        """onReplicasBecomeOffline: first elect new leaders for partitions led by a dead broker,
        then remove the dead replicas from every ISR."""
        ctx.emit("broker_failure", brokers=dead)
        self._update_metadata(ctx)
        for tp, state in self.partitions.items():
            new = state
            if new.leader in dead:
                new = self._elect(new) or new
            for b in dead:
                new = _remove_from_isr(new, b)
            self._commit(ctx, tp, state, new, "broker_failure")

    def _on_broker_startup(self, ctx: Context, started: list[int]) -> None:
        """onBrokerStartup: tell the new brokers their partitions' state, and try to bring
        offline partitions back."""
        ctx.emit("broker_startup", brokers=started)
        self._update_metadata(ctx)
        for tp, state in self.partitions.items():
            new = state
            if new.leader is None:
                new = self._elect(new) or new
            changed = self._commit(ctx, tp, state, new, "broker_startup")
            if not changed:
                for b in started:
                    if b in new.replicas:
                        self._send_leader_and_isr(ctx, tp, new, [b])

    def _elect(self, state: PartitionState) -> PartitionState | None:
        """OfflinePartitionLeaderElectionStrategy: the first replica in assignment order that is
        alive and in the ISR, keeping the live ISR members; failing that, with unclean election
        on, the first live replica with an ISR of itself; else None (offline)."""
        live = self.live
        for r in state.replicas:
            if r in live and r in state.isr:
                isr = tuple(i for i in state.isr if i in live)
                return replace(state, leader=r, leader_epoch=state.leader_epoch + 1, isr=isr)
        if self.config.unclean_leader_election_enable:
            for r in state.replicas:
                if r in live:
                    return replace(state, leader=r, leader_epoch=state.leader_epoch + 1, isr=(r,))
        return None

    def _commit(
        self, ctx: Context, tp: str, old: PartitionState, new: PartitionState, reason: str
    ) -> bool:
        if new == old:
            return False
        new = replace(new, partition_epoch=old.partition_epoch + 1)
        self.partitions[tp] = new
        ctx.emit(
            "partition_state",
            tp=tp,
            leader=new.leader,
            leader_epoch=new.leader_epoch,
            isr=list(new.isr),
            partition_epoch=new.partition_epoch,
            reason=reason,
            unclean=new.leader is not None and new.leader not in old.isr,
        )
        self._send_leader_and_isr(ctx, tp, new, [b for b in new.replicas if b in self.live])
        return True

    def _send_leader_and_isr(
        self, ctx: Context, tp: str, state: PartitionState, brokers: list[int]
    ) -> None:
        msg = m.LeaderAndIsr(
            tp,
            self.controller_epoch,
            state.leader,
            state.leader_epoch,
            state.isr,
            state.partition_epoch,
            state.replicas,
        )
        for b in brokers:
            ctx.send(b, msg)

    def _update_metadata(self, ctx: Context) -> None:
        msg = m.UpdateMetadata(self.controller_epoch, tuple(sorted(self.live)))
        for b in sorted(self.live):
            ctx.send(b, msg)

    # ---- ISR changes from leaders -------------------------------------------------------------

    def _on_alter_isr(self, ctx: Context, src: Any, req: m.AlterIsr) -> None:
        """An ISR change is committed only if it was based on the current leader epoch and
        partition epoch (the ZooKeeper conditional write; AlterPartition since 2.7). It does
        not bump the leader epoch."""
        state = self.partitions[req.tp]
        if req.leader != state.leader or req.leader_epoch != state.leader_epoch:
            error = m.FENCED_LEADER_EPOCH
        elif req.partition_epoch != state.partition_epoch:
            error = m.INVALID_UPDATE_VERSION
        else:
            error = m.NONE
            new = replace(state, isr=req.isr, partition_epoch=state.partition_epoch + 1)
            self.partitions[req.tp] = new
            ctx.emit(
                "partition_state",
                tp=req.tp,
                leader=new.leader,
                leader_epoch=new.leader_epoch,
                isr=list(new.isr),
                partition_epoch=new.partition_epoch,
                reason="expand" if len(req.isr) > len(state.isr) else "shrink",
                unclean=False,
            )
            state = new
        ctx.send(
            src,
            m.AlterIsrResponse(req.tp, error, state.leader_epoch, state.partition_epoch, state.isr),
        )


def _remove_from_isr(state: PartitionState, broker: int) -> PartitionState:
    """ReplicaStateMachine.doRemoveReplicasFromIsr: a dead replica leaves the ISR, except that the
    last member stays (so it can lead again when it returns); if it was the leader the partition
    has none. Every removal bumps the leader epoch."""
    if broker not in state.isr:
        return state
    isr = state.isr if len(state.isr) == 1 else tuple(i for i in state.isr if i != broker)
    leader = None if state.leader == broker else state.leader
    return replace(state, leader=leader, isr=isr, leader_epoch=state.leader_epoch + 1)
